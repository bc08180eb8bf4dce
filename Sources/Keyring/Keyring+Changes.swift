// Change notifications: async only (a sequence is consumed with `for await`). The subscription and
// the first look at the items run through `Offload.run`, off the cooperative pool, so their errors
// are thrown here and later changes arrive as elements.

extension SecretStore {
    /// The changes of this wrapper's item, made by any process: created, changed, deleted, its
    /// collection locked or unlocked, and the Secret Service stopping or starting.
    ///
    /// A wrapper with an account follows that account's item; one without follows every
    /// account's item of its identifier (and group), since any of them may be the one it reads.
    ///
    /// ```swift
    /// for await change in try await store.changes() {
    ///     if change.kind == .changed { reload() }
    /// }
    /// ```
    ///
    /// Providers differ in what they signal (see <doc:WatchingForChanges>); on libsecret's file
    /// backend the keyring file is watched, and there are no lock or service changes.
    /// - Returns: the changes, from now until the consuming task is cancelled.
    /// - Throws: `KeyringError` when the keyring cannot be reached or read for the first look
    ///   (`.noSessionBus`, `.noSecretService`, `.timedOut`, a file backend error); `.cancelled` on task cancellation.
    public func changes() async throws(KeyringError) -> KeyringChanges {
        let store = self
        return try await keyring.watch(ChangeScope(attributes: searchAttributes, owns: { store.owns($0) }))
    }
}

extension Keyring {
    /// The changes of every item of an identifier (any account, any group), of an access group, or
    /// of the identifier within the group, made by any process. The kinds are those of `SecretStore.changes()`.
    /// - Parameters:
    ///   - identifier: the `service` attribute to watch, or nil for every item of `accessGroup`.
    ///   - accessGroup: the group to watch, or nil for every group (and none).
    /// - Returns: the changes, from now until the consuming task is cancelled.
    /// - Throws: `KeyringError.invalidArgument` when both are nil or either is empty; else as `SecretStore.changes()`.
    public func changes(identifier: String?, accessGroup: String? = nil) async throws(KeyringError) -> KeyringChanges {
        var attributes: [String: String] = [:]
        if let identifier {
            if identifier.isEmpty { throw .invalidArgument("the identifier is empty") }
            try AttributeRules.validateText(identifier, what: "the identifier")
            attributes["service"] = identifier
        }
        if let accessGroup {
            if accessGroup.isEmpty { throw .invalidArgument("the access group is empty; pass nil for every group") }
            try AttributeRules.validateText(accessGroup, what: "the access group")
            attributes[SecretStore.groupAttribute] = accessGroup
        }
        if attributes.isEmpty { throw .invalidArgument("watch an identifier, an access group or both") }
        return try await watch(ChangeScope(attributes: attributes, owns: { _ in true }))
    }

    func watch(_ scope: ChangeScope) async throws(KeyringError) -> KeyringChanges {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try KeyringChanges.start(scope, keyring: self) }
    }
}
