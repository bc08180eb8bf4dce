/// oo7-daemon (the 0.7 line, read in its source at c2aa231), Fedora 45's Secret Service. It owns
/// only `org.freedesktop.secrets`, and exports gnome-keyring's private interface at the service
/// object: what tells it apart is the service interface itself, which lacks gnome-keyring's own
/// `LockService` and `ChangeLock` methods (`Provider.familyFromObjects`).
extension Quirks {
    /// Until a real oo7-daemon in the provider matrix checks each of its facts, the strict answers,
    /// which already fit what its source shows: a locked collection's items are in neither list of
    /// SearchItems (so a miss while locked is `.locked`), and item paths are numbered anew at each
    /// start (`/1` to `/n` in file order), so an item is checked again after a restart.
    package static let oo7Daemon = Quirks.strict
}

extension Provider {
    /// A method of the Secret Service interface that gnome-keyring adds (since 3.36) and oo7-daemon,
    /// which exports gnome-keyring's private interface too, does not.
    static let gnomeKeyringServiceMethod = "LockService"
}
