/// oo7-daemon (the 0.7 line, read in its source at c2aa231), Fedora 45's Secret Service. It owns
/// only `org.freedesktop.secrets`, and exports gnome-keyring's private interface at the service
/// object: what tells it apart is the service interface itself, which lacks gnome-keyring's own
/// `LockService` and `ChangeLock` methods (`Provider.familyFromObjects`).
extension Quirks {
    /// The strict answers, which fit what its source shows: a locked collection's items are in
    /// neither list of SearchItems (so a miss while locked is `.locked`), and item paths are
    /// numbered anew at each start (`/1` to `/n` in file order), so an item is checked again after
    /// a restart. What it does apart from them is below.
    package static let oo7Daemon: Quirks = {
        var quirks = Quirks.strict
        // SetSecret and the Label and Attributes setters change its memory only (server/src/item);
        // CreateItem writes the whole keyring file before it answers, and its replace removes the
        // items of exactly the attributes sent (client/src/file/unlocked_keyring.rs), headless.
        // Another client's replace over this library's item therefore leaves it (answersReplacingCreate).
        quirks.keepsItemChanges = false
        // Item.Delete removes from the file the items matching the deleted one's attributes
        // (server/src/collection: keyring.delete(&attributes)), so another item with more goes too.
        quirks.deletesAttributeSupersets = true
        // A secret's content type is kept, as its xdg:content-type attribute.
        quirks.keepsContentType = true
        return quirks
    }()
}

extension Provider {
    /// A method of the Secret Service interface that gnome-keyring adds (since 3.36) and oo7-daemon,
    /// which exports gnome-keyring's private interface too, does not.
    static let gnomeKeyringServiceMethod = "LockService"
}
