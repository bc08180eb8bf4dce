internal import CLibSecret

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

    /// The last owner recognised: its unique name (never reused on one bus), with this process's
    /// connection and its own unique name on that bus, since a new bus numbers names from `:1.0` again.
    static let known = Guarded<(key: String, provider: Provider)?>(nil)
}

extension ServiceCall {
    /// The provider that owns the Secret Service now; `.unknown` when the bus does not say.
    ///
    /// The owner is asked of the bus, not of libsecret's proxy: after a daemon restart the proxy
    /// may still name the old owner, which the markers no longer match.
    ///
    /// Only a definite answer is remembered: a lookup that failed (a timeout, a cancellation) gives
    /// `.unknown`, the strict answer, for this call alone. Within one operation the bus is asked once.
    func provider() -> Provider {
        if let asked = notes.provider { return asked }
        let provider = recognisedProvider()
        notes.provider = provider
        return provider
    }

    /// `provider()`, asked of the bus.
    private func recognisedProvider() -> Provider {
        guard let connection = g_dbus_proxy_get_connection(kr_service_proxy(service)),
            let owner = try? nameOwner(BusEnvironment.serviceName, on: connection)
        else { return Provider(family: .unknown) }
        let own = g_dbus_connection_get_unique_name(connection).map { String(cString: $0) } ?? ""
        let key = "\(UInt(bitPattern: Int(bitPattern: connection))) \(own) \(owner)"
        if let known = Provider.known.withLock({ $0 }), known.key == key { return known.provider }
        var family = Provider.Family.unknown
        for marker in Provider.markers {
            // A marker nobody owns is simply not this daemon's; one that cannot be asked leaves it unknown.
            let markerOwner: String?
            do throws(KeyringError) {
                markerOwner = try nameOwner(marker.name, on: connection)
            } catch {
                return Provider(family: .unknown)
            }
            if markerOwner == owner {
                family = marker.family
                break
            }
        }
        let provider = Provider(family: family)
        Provider.known.withLock { $0 = (key, provider) }
        return provider
    }

    /// The unique name that owns `name` on the bus now; nil when nobody does.
    /// - Throws: when the bus does not answer (a timeout, a cancellation).
    private func nameOwner(_ name: String, on connection: OpaquePointer) throws(KeyringError) -> String? {
        try BusCall.call(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
            kr_variant_string_tuple(name), reply: "(s)", timeout: min(2000, remainingMilliseconds), cancellable: cancellable,
            flags: kr_call_flags_none(),
            orOnError: { error -> String?? in
                KeyringError.remoteName(of: error) == "org.freedesktop.DBus.Error.NameHasNoOwner" ? .some(nil) : nil
            },
            parse: { reply -> String?? in
                guard let owner = kr_variant_tuple_string(reply) else { return nil }
                defer { g_free(owner) }
                return .some(String(cString: owner))
            })
    }

    /// True when a search's miss does not prove absence: the provider hides a locked collection's
    /// items and some collection is locked. On gnome-keyring and KWallet a miss is always proven.
    func missCouldBeHidden() throws(KeyringError) -> Bool {
        if provider().listsLockedMatches { return false }
        return try !lockedCollections().isEmpty
    }
}
