// SECRET_SERVICE_BUS_NAME, which libsecret honours, is honoured by the library's own calls too
// (issue 34): with it naming a service nobody owns, no command reads the real daemon behind
// libsecret's back, and nothing is made.
import Foundation
import TestSupport
import Testing

@Suite("SECRET_SERVICE_BUS_NAME reaches every call", .serialized, .needs(.secretService))
struct ServiceBusNameTests {
    /// idtool's environment with the Secret Service moved to `name`, and a state directory of its
    /// own, so that no backup answers for the keyring.
    static func environment(serviceName name: String, state: String) -> [String: String] {
        var environment = Idtool.baseEnvironment
        environment["SECRET_SERVICE_BUS_NAME"] = name
        environment["XDG_STATE_HOME"] = state
        return environment
    }

    static func temporaryState() throws -> String {
        let path = NSTemporaryDirectory() + "idtool-busname-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("a name nobody owns: get, item get and item watch find no service, though the real daemon holds the items")
    // (get then makes a backup-only identifier, as on a machine with no keyring; the real one is untouched.)
    func unownedName() throws {
        try requireTestKeyring()
        let app = "test.idtool.busname.\(UUID().uuidString.lowercased())"
        let id = Idtool.uniqueIdentifier()
        let made = try Idtool.run(["get", "--app", app])
        try #require(made.status == 0, "get on the real daemon: \(made.stderr)")
        #expect(try Idtool.run(["item", "set", id], stdin: Data("kept".utf8)).status == 0)
        defer {
            _ = try? Idtool.run(["reset", "--app", app])
            _ = try? Idtool.run(["item", "reset", id])
        }
        let state = try Self.temporaryState()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let elsewhere = Self.environment(serviceName: "org.example.KeyringIdentity.NoSuchSecrets", state: state)
        // The identifier's read skips libsecret: it went to org.freedesktop.secrets and printed the
        // real daemon's identifier while libsecret's calls (item get) found no service. With no
        // Secret Service, get keeps a new identifier in the backup alone and says so (degraded).
        let get = try Idtool.run(["get", "--app", app, "--json"], environment: elsewhere)
        #expect(get.status == 0, "get: \(get.status) \(get.stderr)")
        #expect(
            !get.stdoutText.contains(made.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)),
            "get read the real daemon: \(get.stdoutText)")
        #expect(get.stdoutText.contains(#""storedIn":["backup"]"#) && get.stdoutText.contains(#""degraded":true"#), "\(get.stdoutText)")
        #expect(get.stdoutText.contains("no Secret Service"), "\(get.stdoutText)")
        let item = try Idtool.run(["item", "get", id], environment: elsewhere)
        #expect(item.status == 69 && item.stdoutText.isEmpty, "item get: \(item.status) \(item.stdoutText) \(item.stderr)")
        let watch = try Idtool.run(["item", "watch", id], environment: elsewhere)
        #expect(watch.status == 69, "item watch: \(watch.status) \(watch.stderr)")
        // And nothing was made meanwhile: the real daemon still gives the same identifier.
        #expect(try Idtool.run(["get", "--app", app]).stdoutText == made.stdoutText)
    }

    @Test("a value that is no bus name is refused with a clear error, before any call, and no GLib critical")
    func invalidName() throws {
        try requireTestKeyring()
        let state = try Self.temporaryState()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let run = try Idtool.run(
            ["item", "get", Idtool.uniqueIdentifier()], environment: Self.environment(serviceName: "not a bus name", state: state))
        #expect(![0, 133].contains(run.status), "item get: \(run.status)")
        run.expectOneLineError(containing: "SECRET_SERVICE_BUS_NAME")
    }
}
