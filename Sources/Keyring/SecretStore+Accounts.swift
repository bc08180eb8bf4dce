/// Which items a wrapper without an account may change. One rule for both backends (the Secret
/// Service path and the file backend), applied to the matches "the" item first (`ItemOrder`).
///
/// A wrapper without an account reads and writes the identifier's oldest item, whatever its
/// `username`, as the keychain item wrapper does: with one account's item (or twins of it) it
/// updates that item, and `.account` renames it. When the matches carry two or more `username`
/// values, the item may belong to one of several accounts, so a write or `reset()` changes it only
/// when it has no account (an empty `username`, as this wrapper creates) and the write gives it no
/// account another match carries. Otherwise it throws `KeyringError.ambiguousItem`, naming the
/// accounts, and changes nothing. Reads are not refused: they return the oldest item, as before.
extension SecretStore {
    /// The error a write or reset of `items` (this wrapper's matches, "the" item first) must throw,
    /// or nil when it may go ahead. `settingAccount` is the new `.account` value of a write.
    func ambiguity(in items: [KeyringItem], settingAccount newAccount: String? = nil) -> KeyringError? {
        guard account == nil, let target = items.first else { return nil }
        let accounts = Set(items.map(Self.account(of:)))
        let others = accounts.subtracting([Self.account(of: target)])
        if others.isEmpty { return nil }
        if Self.account(of: target).isEmpty, !(newAccount.map(others.contains) ?? false) { return nil }
        return .ambiguousItem(accounts: accounts.filter { !$0.isEmpty }.sorted())
    }

    /// Throws `ambiguity(in:settingAccount:)`'s error, if any.
    func refuseAmbiguous(_ items: [KeyringItem], settingAccount newAccount: String? = nil) throws(KeyringError) {
        if let error = ambiguity(in: items, settingAccount: newAccount) { throw error }
    }

    /// The item's `username`, empty when it has none.
    static func account(of item: KeyringItem) -> String { item.attributes[Key.account.attributeName] ?? "" }
}
