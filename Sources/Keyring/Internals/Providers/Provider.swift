internal import CLibSecret
import Synchronization

/// The daemon that owns the Secret Service, recognised from the well-known names its connection
/// owns on the bus (never from `/proc`, which a sandbox's PID namespace hides), once per owner.
/// Code asks its capabilities, never its name; a daemon nobody knows gets the strict answer.
struct Provider: Equatable {
    enum Family: Equatable {
        case gnomeKeyring
        /// kwalletd5, kwalletd6 and ksecretd.
        case kwallet
        case keePassXC
        case unknown
    }

    let family: Family

    /// True when SearchItems lists a locked collection's matching items in its locked list
    /// (gnome-keyring, KWallet), so a search that returns no path at all proves the item absent.
    /// KeePassXC hides a locked database's items: there a miss while a collection is locked is
    /// unknown. A daemon nobody knows is assumed to hide them.
    var listsLockedMatches: Bool { family == .gnomeKeyring || family == .kwallet }

    /// Well-known names and the family whose daemon owns them beside `org.freedesktop.secrets`.
    static let markers: [(name: String, family: Family)] = [
        ("org.gnome.keyring", .gnomeKeyring),
        ("org.kde.kwalletd5", .kwallet), ("org.kde.kwalletd6", .kwallet), ("org.kde.ksecretd", .kwallet),
        ("org.keepassxc.KeePassXC.MainWindow", .keePassXC),
    ]

    /// The last owner recognised, by its unique name (never reused on a bus).
    static let known = Mutex<(owner: String, provider: Provider)?>(nil)
}

extension ServiceCall {
    /// The provider that owns the Secret Service now; `.unknown` when the bus does not say.
    ///
    /// The owner is asked of the bus, not of libsecret's proxy: after a daemon restart the proxy
    /// may still name the old owner, which the markers no longer match.
    func provider() -> Provider {
        guard let connection = g_dbus_proxy_get_connection(kr_service_proxy(service)),
            let owner = nameOwner("org.freedesktop.secrets", on: connection)
        else { return Provider(family: .unknown) }
        if let known = Provider.known.withLock({ $0 }), known.owner == owner { return known.provider }
        // A marker nobody owns has no owner: simply not this daemon's.
        let family = Provider.markers.first { nameOwner($0.name, on: connection) == owner }?.family ?? .unknown
        let provider = Provider(family: family)
        Provider.known.withLock { $0 = (owner, provider) }
        return provider
    }

    /// The unique name that owns `name` on the bus now; nil when none does (or the bus does not answer).
    private func nameOwner(_ name: String, on connection: OpaquePointer) -> String? {
        try? BusCall.call(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
            kr_variant_string_tuple(name), reply: "(s)", timeout: min(2000, remainingMilliseconds), cancellable: cancellable,
            flags: kr_call_flags_none()
        ) { reply -> String? in
            guard let owner = kr_variant_tuple_string(reply) else { return nil }
            defer { g_free(owner) }
            return String(cString: owner)
        }
    }

    /// True when a search's miss does not prove absence: the provider hides a locked collection's
    /// items and some collection is locked. On gnome-keyring and KWallet a miss is always proven.
    func missCouldBeHidden() throws(KeyringError) -> Bool {
        if provider().listsLockedMatches { return false }
        return try !lockedCollections().isEmpty
    }
}
