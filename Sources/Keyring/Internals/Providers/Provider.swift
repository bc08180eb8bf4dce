internal import CLibSecret
internal import KeyringShim

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The daemon that owns the Secret Service, recognised once per owner from what the bus says
/// (never from `/proc`, which a sandbox's PID namespace hides): the well-known names its connection
/// owns, or, where a sandbox's bus proxy hides those names (a Flatpak talks to
/// `org.freedesktop.secrets` alone), the objects the daemon itself shows.
/// Code asks its capabilities, never its name; a daemon nobody knows gets the strict answer.
struct Provider: Equatable {
    enum Family: Equatable {
        case gnomeKeyring
        /// kwalletd5 and kwalletd6.
        case kwallet
        /// KDE Frameworks 6.14 and later: the Secret Service's store left kwalletd6 (then a proxy).
        case ksecretd
        case keePassXC
        /// oo7-daemon: no marker name; its service object shows gnome-keyring's private interface
        /// without gnome-keyring's own service methods.
        case oo7Daemon
        case unknown
    }

    let family: Family
    /// The well-known name its connection owns that recognised it (`markers`); nil when its objects did.
    var ownedName: String? = nil

    /// What this provider does differently: each family's file defines its `Quirks`.
    var quirks: Quirks {
        switch family {
        case .gnomeKeyring: .gnomeKeyring
        case .kwallet: .kwallet
        case .ksecretd: .ksecretd
        case .keePassXC: .keePassXC
        case .oo7Daemon: .oo7Daemon
        case .unknown: .strict
        }
    }

    /// Well-known names and the family whose daemon owns them beside `org.freedesktop.secrets`.
    static let markers: [(name: String, family: Family)] = [
        ("org.gnome.keyring", .gnomeKeyring),
        ("org.kde.kwalletd5", .kwallet), ("org.kde.kwalletd6", .kwallet), ("org.kde.ksecretd", .ksecretd),
        ("org.keepassxc.KeePassXC.MainWindow", .keePassXC),
    ]

    /// The family whose daemon exports these child nodes of its connection's root object:
    /// KeePassXC's `/keepassxc`, kwalletd's `/modules` (its `kwalletd5` or `kwalletd6` module),
    /// ksecretd's `/ksecretd` (KDE Frameworks 6.14 and later).
    static let rootNodes: [(node: String, family: Family)] = [("keepassxc", .keePassXC), ("modules", .kwallet), ("ksecretd", .ksecretd)]

    /// The last owner recognised: its unique name (never reused on one bus), with this process's
    /// connection and its own unique name on that bus, since a new bus numbers names from `:1.0` again.
    static let known = Guarded<(key: String, provider: Provider)?>(nil)
}

extension Provider {
    /// The providing process's name for `ServiceStatus.provider`, e.g. "gnome-keyring-daemon": its
    /// executable's, where `/proc` shows it; inside a PID namespace, which hides it, the family's
    /// usual one; nil for a daemon nobody knows there. Only shown, never decided on.
    static func processName(in call: borrowing ServiceCall) -> String? {
        let proxy = kr_service_proxy(call.service)
        if let owner = g_dbus_proxy_get_name_owner(proxy), let connection = g_dbus_proxy_get_connection(proxy) {
            defer { g_free(owner) }
            let pid = try? BusCall.call(
                connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID",
                kr_variant_string_tuple(owner), reply: "(u)", timeout: min(2000, call.remainingMilliseconds), cancellable: call.cancellable,
                flags: kr_call_flags_none(), parse: { kr_variant_tuple_u32($0) })
            if let pid, pid > 0, let name = ProcessName.of(pid: pid) { return name }
        }
        return switch call.provider().family {
        case .gnomeKeyring: "gnome-keyring-daemon"
        case .kwallet: "kwalletd"
        case .ksecretd: "ksecretd"
        case .keePassXC: "keepassxc"
        case .oo7Daemon: "oo7-daemon"
        case .unknown: nil
        }
    }

    /// `ServiceCall.provider()`, asked of the bus.
    static func recognised(in call: borrowing ServiceCall) -> Provider {
        guard let connection = g_dbus_proxy_get_connection(kr_service_proxy(call.service)),
            let owner = try? call.nameOwner(BusEnvironment.serviceName, on: connection, timeout: 2000)
        else { return Provider(family: .unknown) }
        let own = g_dbus_connection_get_unique_name(connection).map { String(cString: $0) } ?? ""
        let key = "\(UInt(bitPattern: Int(bitPattern: connection))) \(own) \(owner)"
        if let known = Provider.known.withLock({ $0 }), known.key == key { return known.provider }
        var family = Provider.Family.unknown
        var ownedName: String?
        for marker in Provider.markers {
            // A marker nobody owns is simply not this daemon's; one that cannot be asked leaves it unknown.
            let markerOwner: String?
            do throws(KeyringError) {
                markerOwner = try call.nameOwner(marker.name, on: connection, timeout: 2000)
            } catch {
                return Provider(family: .unknown)
            }
            if markerOwner == owner {
                family = marker.family
                ownedName = marker.name
                break
            }
        }
        // No marker is this daemon's, or a bus proxy hides them: then the daemon's own objects
        // tell (two Introspect calls at most, once per owner).
        if family == .unknown {
            do throws(KeyringError) {
                family = try familyFromObjects(of: owner, on: connection, in: call)
            } catch {
                return Provider(family: .unknown)
            }
        }
        let provider = Provider(family: family, ownedName: ownedName)
        Provider.known.withLock { $0 = (key, provider) }
        return provider
    }

    /// The family the objects of the daemon `owner` show: gnome-keyring's own interface on its
    /// service object, or the nodes beside `/org` that KeePassXC and kwalletd export.
    private static func familyFromObjects(of owner: String, on connection: OpaquePointer, in call: borrowing ServiceCall)
        throws(KeyringError) -> Provider.Family
    {
        let service = try introspect(BusCall.servicePath, of: owner, on: connection, in: call)
        if let family = family(fromServiceObject: service) { return family }
        let root = try introspect("/", of: owner, on: connection, in: call)
        return Provider.rootNodes.first { root.contains("node name=\"\($0.node)\"") }?.family ?? .unknown
    }

    /// The family the introspection XML of the service object proves, if any. gnome-keyring's
    /// private interface alone is no proof: oo7-daemon exports it too, but not gnome-keyring's own
    /// service methods.
    static func family(fromServiceObject xml: String) -> Provider.Family? {
        guard xml.contains("interface name=\"\(Provider.gnomeKeyringInterface)\"") else { return nil }
        return xml.contains("method name=\"\(Provider.gnomeKeyringServiceMethod)\"") ? .gnomeKeyring : .oo7Daemon
    }

    /// The introspection XML of the object at `path` of `owner`; empty when it has no such object.
    private static func introspect(_ path: String, of owner: String, on connection: OpaquePointer, in call: borrowing ServiceCall)
        throws(KeyringError) -> String
    {
        try BusCall.call(
            connection, owner, path, "org.freedesktop.DBus.Introspectable", "Introspect", nil, reply: "(s)",
            timeout: min(2000, call.remainingMilliseconds), cancellable: call.cancellable,
            orOnError: { error -> String? in BusCall.isNoSuchObject(error) ? "" : nil },
            parse: { reply -> String? in
                guard let xml = kr_variant_tuple_string(reply) else { return nil }
                defer { g_free(xml) }
                return String(cString: xml)
            })
    }
}

extension Provider {
    /// Before a write that carries `secret`, once: the values the provider would refuse or misread
    /// (each provider's file names its own), then the session's key where it may not match.
    static func beforeWriting(_ secret: Data, attributes: [String: String]?, in call: borrowing ServiceCall) throws(KeyringError) {
        if let refusal = ProviderValues.fieldReferenceRefusal(secret, quirks: { call.provider().quirks })
            ?? ProviderValues.typeMapRefusal(secret, attributes: attributes, quirks: { call.provider().quirks })
        {
            throw refusal
        }
        try SessionCheck.run(call, reading: nil)
    }

    /// After a write that succeeded, once: the flush where the provider saves on request.
    static func afterWriting(in call: borrowing ServiceCall) {
        KWalletFlush.run(after: call)
    }
}
