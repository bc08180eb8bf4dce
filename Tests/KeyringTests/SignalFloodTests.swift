import Foundation
import Keyring
import Testing
import TestSupport

/// An app that read its token once and then idles while another client floods the bus with
/// PropertiesChanged signals (a media player announcing metadata) must not queue them: the
/// library matches only the Secret Service's own signals. Runs under every provider.
@Suite("foreign signals while idle", .serialized)
struct SignalFloodTests {
    /// Sends `count` broadcast PropertiesChanged signals from its own name, then one call, whose
    /// reply shows the bus has routed every signal before it.
    static let flooder = #"""
        import sys
        from jeepney import DBusAddress, new_signal
        from jeepney.bus_messages import message_bus
        from jeepney.io.blocking import open_dbus_connection
        conn = open_dbus_connection(bus="SESSION")
        player = DBusAddress("/org/mpris/MediaPlayer2", interface="org.freedesktop.DBus.Properties")
        for n in range(int(sys.argv[1])):
            conn.send(new_signal(player, "PropertiesChanged", "sa{sv}as",
                ("org.mpris.MediaPlayer2.Player", {"Metadata": ("a{sv}", {"xesam:title": ("s", "track %d " % n + "x" * 200)})}, [])))
        conn.send_and_get_reply(message_bus.ListNames())
        """#

    @Test(
        "after one read, 240,000 foreign PropertiesChanged signals leave the idle app's heap level",
        .enabled(if: !TestProvider.usesFileBackend, "signals are a Secret Service matter; the file backend has no bus"))
    func floodWhileIdle() throws {
        try requireTestKeyring()
        let id = uniqueID("flood")
        let store = try Self.readOnce(id)
        defer { try? store.reset() }
        // A signal kept (queued on a main context nobody runs, or copied into a buffer) would hold
        // its 300-byte message: the heap would grow with every batch.
        try MemoryTests.expectLevelsOff("foreign signals", operationsPerBatch: 20_000) {
            try Self.flood(20_000, then: id)
        }
    }

    @Test(
        "after one read and 20,000 foreign PropertiesChanged signals, another client's change is seen",
        .enabled(if: !TestProvider.usesFileBackend, "signals are a Secret Service matter; the file backend has no bus"))
    func changeSeenAfterFlood() throws {
        try requireTestKeyring()
        let id = uniqueID("flood")
        let store = try Self.readOnce(id)
        defer { try? store.reset() }
        try Self.flood(20_000, then: id)
        // Another client replaces the item; the next read sees it.
        try mustRun(secretTool, ["clear", "service", id])
        try mustRun(secretTool, ["store", "--label=x", "service", id, "username", ""], input: Data("after".utf8))
        #expect(try store.object(forKey: .valueData) == "after")
    }

    /// A store holding "before", read twice: the first read subscribes and remembers the item's path, the second is warm.
    static func readOnce(_ id: String) throws -> SecretStore {
        let store = try SecretStore(identifier: id)
        try store.setObject("before", forKey: .valueData)
        #expect(try store.object(forKey: .valueData) == "before")
        #expect(try store.object(forKey: .valueData) == "before")
        return store
    }

    /// Sends `count` foreign signals, then a round trip on the library's connection, whose reply
    /// comes after every signal routed to it.
    static func flood(_ count: Int, then id: String) throws {
        try mustRun(python, ["-c", flooder, String(count)])
        _ = try Keyring.default.search(["service": id])
    }
}
