/// Where an item from an earlier listing is now, on a store that numbers its items anew at each
/// start (KWallet, oo7-daemon, and the memory keyring as either): an earlier path may name another
/// item. The one rule, for the Secret Service and the local stores alike.
enum ItemHandle {
    /// The path where `item` is now; nil when it is gone. Where paths are renumbered, the item at
    /// the old path (`atPath`) must still have the same attributes and creation time, whether it was
    /// found locked or not, else it is looked up again by those among `search`'s. Only an item whose
    /// attributes could not be read (none, or a locked item's hashed ones on gnome-keyring) keeps
    /// its path unchecked: nothing else names it.
    /// - Throws: `.serviceFailure` when several items now match it and none is at the old path;
    ///   what `atPath` and `search` throw.
    static func currentPath(
        of item: KeyringItem, renumbers: Bool, atPath: () throws(KeyringError) -> KeyringItem?,
        search: () throws(KeyringError) -> [KeyringItem]
    ) throws(KeyringError) -> String? {
        let unreadable = item.attributes.isEmpty || (item.isLocked && ProviderAttributes.areUnreadable(item.attributes))
        guard renumbers, !unreadable else { return item.objectPath }
        // A creation time one listing lacks (a locked item's, say) cannot tell items apart, nor differ.
        func isSame(_ other: KeyringItem) -> Bool {
            other.attributes == item.attributes && (other.created == nil || item.created == nil || other.created == item.created)
        }
        if let now = try atPath(), isSame(now) { return item.objectPath }
        let found = try search().filter(isSame)
        guard found.count <= 1 else {
            throw .serviceFailure(
                domain: "KeyringIdentity", code: -1,
                message: "the service numbered its items anew, and \(found.count) items now match this one: search again")
        }
        return found.first?.objectPath
    }
}
