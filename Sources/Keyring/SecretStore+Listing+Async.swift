// The async twin of the listing call, as Keyring+Async.swift does for the others: it only runs
// its sync call through `Offload.run`.
extension SecretStore {
    /// Async `items(identifier:accessGroup:keyring:)`: the items of an identifier or access group.
    /// - Parameters:
    ///   - identifier: the identifier to list, or nil for any.
    ///   - accessGroup: the access group to list, or nil for any; at least one of the two.
    ///   - keyring: the keyring to list.
    /// - Returns: the matching items' metadata, oldest first.
    /// - Throws: `KeyringError.locked` rather than an empty list for a locked keyring; `.cancelled` on task cancellation.
    public static func items(
        identifier: String? = nil, accessGroup: String? = nil, keyring: Keyring = .default
    ) async throws(KeyringError) -> [Listing] {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in
            try Self.items(identifier: identifier, accessGroup: accessGroup, keyring: keyring)
        }
    }
}
