import Foundation
import TestSupport
import Testing

/// gnome-keyring (42 to 50) registers a new client in an idle callback that the client's first
/// calls can outrun on a busy daemon; an OpenSession among them then aborts the daemon
/// (`GLib-ERROR **: g_variant_new: expected GVariant of type 'v' but received value has type
/// '(null)'`), and every app on the desktop loses its keyring. CI's lanes saw it three times, after
/// `idtool get` sent SearchItems and OpenSession together as its first calls. So no command sends
/// the service a second call before the service has answered its first.
///
/// The bus monitor sees each message in the order the bus routes it, which is the order the
/// daemon receives them in; no clock is read.
@Suite("A new connection's first call to the Secret Service goes alone", .serialized, .needs(.secretService))
struct FirstCallTests {
    static func serviceOwner() throws -> String {
        let reply = try Idtool.runProgram(
            URL(fileURLWithPath: "/usr/bin/dbus-send"),
            ["--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.GetNameOwner",
             "string:org.freedesktop.secrets"])
        let owner = reply.stdoutText.split(separator: "\"").dropFirst().first.map(String.init)
        return try #require(owner, "the Secret Service's owner: \(reply.stdoutText) \(reply.stderr)")
    }

    @Test("every idtool command waits for the service's first answer before its next call")
    func idtoolCommands() throws {
        try requireTestKeyring()
        let existing = Idtool.uniqueIdentifier("first-call")
        let item = Idtool.uniqueIdentifier("first-call-item")
        try #require(try Idtool.run(["get", "--app", existing]).status == 0)
        try #require(try Idtool.run(["item", "set", item], stdin: Data("v".utf8)).status == 0)
        let owner = try Self.serviceOwner()

        let monitor = try BusMonitor()
        let commands: [([String], Data?)] = [
            (["get", "--app", existing], nil), (["get", "--app", Idtool.uniqueIdentifier("first-call-new")], nil),
            (["show", "--app", existing], nil), (["item", "get", item], nil), (["item", "list", item], nil),
            (["item", "set", item], Data("w".utf8)), (["item", "set", Idtool.uniqueIdentifier("first-call-new")], Data("n".utf8)),
            (["item", "reset", item], nil), (["reset", "--app", existing], nil),
        ]
        for (arguments, stdin) in commands {
            let run = try Idtool.run(arguments, stdin: stdin)
            #expect(run.status == 0, "idtool \(arguments.joined(separator: " ")): \(run.stderr)")
        }
        monitor.stop()
        let messages = monitor.messages
        // Each command is a connection of its own: nine or more reached the service.
        let clients = Set(messages.filter { $0.type == "mc" && [owner, "org.freedesktop.secrets"].contains($0.destination) }.map(\.sender))
        #expect(clients.count >= commands.count, "the monitor saw \(clients.count) clients of the service")
        let violations = BusMonitor.callsBeforeFirstReply(messages, service: "org.freedesktop.secrets", owner: owner)
        #expect(violations.isEmpty, "\(violations)")
    }

    @Test("the check finds a client that sends its first two calls together")
    func checkCanFail() throws {
        try requireTestKeyring()
        let owner = try Self.serviceOwner()
        let monitor = try BusMonitor()
        // Two SearchItems together: harmless to any daemon, and what the check must report. In one
        // write, so that the bus reads and routes both before the daemon's first reply: sent one by
        // one, a fast daemon (KWallet's) answered the first before Python sent the second.
        let script = """
            from jeepney import DBusAddress, new_method_call
            from jeepney.io.blocking import open_dbus_connection
            service = DBusAddress('/org/freedesktop/secrets', bus_name='org.freedesktop.secrets', interface='org.freedesktop.Secret.Service')
            conn = open_dbus_connection(bus='SESSION')
            calls = [new_method_call(service, 'SearchItems', 'a{ss}', ({'service': 'first-call-check'},)) for _ in range(2)]
            conn.sock.sendall(b''.join(call.serialise(serial=next(conn.outgoing_serial)) for call in calls))
            conn.receive()
            conn.receive()
            """
        let run = try Idtool.runProgram(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script])
        monitor.stop()
        #expect(run.status == 0, "\(run.stderr)")
        let violations = BusMonitor.callsBeforeFirstReply(monitor.messages, service: "org.freedesktop.secrets", owner: owner)
        #expect(violations.count == 1 && violations.first?.contains("SearchItems then SearchItems") == true, "\(violations)")
    }
}
