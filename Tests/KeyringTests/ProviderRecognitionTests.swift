import Foundation
import TestSupport
import Testing

@testable import Keyring

/// Which daemon serves the Secret Service, from its service object alone (what a Flatpak's bus
/// proxy leaves visible): gnome-keyring's private interface is no proof, since oo7-daemon 0.7
/// exports it too; gnome-keyring's own service methods are.
@Suite("Provider recognition from the service object", .needs(.secretService))
struct ProviderRecognitionTests {
    /// The introspection XML of the test daemon's service object, asked straight on the bus.
    static func serviceObjectXML() throws -> String {
        let script = """
            from jeepney import DBusAddress, new_method_call
            from jeepney.io.blocking import open_dbus_connection
            conn = open_dbus_connection(bus="SESSION")
            address = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets",
                                  interface="org.freedesktop.DBus.Introspectable")
            print(conn.send_and_get_reply(new_method_call(address, "Introspect")).body[0])
            """
        return String(decoding: try mustRun(python, ["-c", script]).stdout, as: UTF8.self)
    }

    /// `xml` without the named methods of any interface, as a daemon that lacks them shows it.
    static func removingMethods(_ names: [String], from xml: String) -> String {
        var result = xml
        for name in names {
            while let start = result.range(of: "<method name=\"\(name)\""),
                let end = result.range(of: "</method>", range: start.upperBound..<result.endIndex)
            {
                result.removeSubrange(start.lowerBound..<end.upperBound)
            }
        }
        return result
    }

    @Test("the test daemon's service object names its family: gnome-keyring's, oo7-daemon's, or none for the others")
    func liveServiceObject() throws {
        try requireTestKeyring()
        let xml = try Self.serviceObjectXML()
        #expect(xml.contains("org.freedesktop.Secret.Service"), "not the service object: \(xml.prefix(200))")
        let expected: Provider.Family? =
            switch TestProvider.name {
            case "gnome-keyring": .gnomeKeyring
            case "oo7": .oo7Daemon
            default: nil
            }
        #expect(Provider.family(fromServiceObject: xml) == expected)
    }

    /// oo7-daemon's service interface has the specification's methods only, beside gnome-keyring's
    /// private interface (oo7 c2aa231, server/src/service/mod.rs and server/src/gnome/internal.rs).
    @Test("gnome-keyring's service object without LockService and ChangeLock is oo7-daemon's", .enabled(if: TestProvider.isGnomeKeyring))
    func withoutGnomeKeyringMethods() throws {
        try requireTestKeyring()
        let xml = try Self.serviceObjectXML()
        #expect(xml.contains("<method name=\"LockService\""), "gnome-keyring shows LockService: \(xml)")
        let oo7 = Self.removingMethods(["LockService", "ChangeLock"], from: xml)
        #expect(!oo7.contains("LockService") && oo7.contains(Provider.gnomeKeyringInterface))
        #expect(Provider.family(fromServiceObject: oo7) == .oo7Daemon)
        #expect(Provider(family: .oo7Daemon).quirks.listsLockedMatches == false, "oo7-daemon hides a locked collection's items")
        #expect(Provider(family: .oo7Daemon).quirks.renumbersItems, "oo7-daemon numbers its items anew at each start")
    }
}
