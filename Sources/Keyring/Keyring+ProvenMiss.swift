/// A search whose miss proves absence, for DeviceIdentity's `.keyringItem` migration source: it
/// uses the same locked-miss rule as every read (`KeyringStore`'s contract), so a legacy
/// item in a locked KeePassXC database is "locked", never "absent".
extension Keyring {
    /// The items matching `attributes` that `keep` accepts, oldest first, as `search(_:)` finds
    /// them; a miss is checked in the same call. Package API, not public.
    /// - Parameters:
    ///   - attributes: the attributes to match; at least one is required.
    ///   - keep: which matches count (the others are ignored, as if they did not match).
    /// - Returns: the kept matches, none of them locked; empty only when none exists.
    /// - Throws: `KeyringError.locked` when a kept match is locked, or when none is kept and a locked
    ///   collection may hide matches (KeePassXC); or another `KeyringError`.
    package func searchProvingMiss(
        _ attributes: [String: String], keeping keep: (KeyringItem) -> Bool
    ) throws(KeyringError) -> [KeyringItem] {
        try AttributeRules.validate(attributes, requireOne: true)
        return try itemStore.searchProvingMiss(attributes, keeping: keep, options)
    }
}
