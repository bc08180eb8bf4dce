// idtool get/show/reset/migrate/derive as a subprocess against the real keyring.
import Foundation
import Keyring
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("idtool identity commands against the real keyring", .serialized, .needs(.secretService))
struct IdentityCommandTests {
    static func newApp() -> String { "test.idtool.\(UUID().uuidString.lowercased())" }

    static func isUUIDv4Line(_ text: String) -> Bool {
        text.range(of: "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n$", options: .regularExpression) != nil
    }

    /// The environment of a process that has no session bus at all.
    static func noBusEnvironment() throws -> [String: String] {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("idtool-nobus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        var environment = Idtool.baseEnvironment
        environment["DBUS_SESSION_BUS_ADDRESS"] = nil
        environment["XDG_RUNTIME_DIR"] = empty.path
        return environment
    }

    @Test("get prints the identifier and a newline, nothing else, and the same one every run")
    func getIsStable() throws {
        try requireTestKeyring()
        let app = Self.newApp()
        let first = try Idtool.run(["get", "--app", app])
        #expect(first.status == 0)
        #expect(Self.isUUIDv4Line(first.stdoutText), "stdout: \(first.stdoutText.debugDescription)")
        #expect(first.stderr.isEmpty)
        for _ in 0..<3 { #expect(try Idtool.run(["get", "--app", app]).stdoutText == first.stdoutText) }

        let json = try Idtool.run(["get", "--app", app, "--json"])
        #expect(json.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        #expect(object["identifier"] as? String == first.stdoutText.trimmingCharacters(in: .newlines))
        #expect(object["provenance"] as? String == "keyring")
        #expect(object["storedIn"] as? [String] == ["keyring", "backup"])
        #expect(object["degraded"] as? Bool == false)
    }

    @Test("APP comes from --app, else IDTOOL_APP, else idtool")
    func appFallback() throws {
        try requireTestKeyring()
        let app = Self.newApp()
        var environment = Idtool.baseEnvironment
        environment["IDTOOL_APP"] = app
        let viaEnvironment = try Idtool.run(["get"], environment: environment)
        #expect(viaEnvironment.stdoutText == (try Idtool.run(["get", "--app", app])).stdoutText)
        let defaultApp = try Idtool.run(["get"])
        #expect(defaultApp.stdoutText == (try Idtool.run(["get", "--app", "idtool"])).stdoutText)
        #expect(defaultApp.stdoutText != viaEnvironment.stdoutText)
    }

    @Test("16 processes starting a new app at once all print the same identifier, 10 times over")
    func sixteenProcessRace() throws {
        try requireTestKeyring()
        for round in 0..<10 {
            let app = Self.newApp()
            let outputs = Guarded<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 16) { _ in
                // The processes queue for one creation lock: a deadline far above any load.
                let run = try? Idtool.run(["get", "--app", app, "--timeout", "600"])
                outputs.withLock { $0.append(run.map { "\($0.status):\($0.stdoutText)" } ?? "spawn failed") }
            }
            let values = outputs.withLock { $0 }
            #expect(values.count == 16)
            #expect(Set(values).count == 1, "round \(round): \(Set(values).count) distinct results")
            #expect(values.first.map { $0.hasPrefix("0:") } == true, "round \(round): \(values.first ?? "")")
            let items = try Idtool.runProgram(URL(fileURLWithPath: "/usr/bin/secret-tool"),
                                              ["search", "--all", "identity-scope", "app", "identity-name", app])
            #expect(items.stdoutText.components(separatedBy: "[/").count - 1 == 1, "exactly one keyring item")
        }
    }

    @Test("show reports the identifier and each store, never creates one, and exits 1 when there is none")
    func show() throws {
        try requireTestKeyring()
        let app = Self.newApp()
        let absent = try Idtool.run(["show", "--app", app])
        #expect(absent.status == 1)
        #expect(absent.stdout.isEmpty)
        absent.expectOneLineError()
        #expect(try Idtool.run(["show", "--app", app]).status == 1, "show did not create one")

        let value = try Idtool.run(["get", "--app", app]).stdoutText.trimmingCharacters(in: .newlines)
        let shown = try Idtool.run(["show", "--app", app])
        #expect(shown.status == 0)
        #expect(shown.stdoutText.contains("identifier: \(value)\n"))
        #expect(shown.stdoutText.contains("provenance: keyring\n"))
        #expect(shown.stdoutText.contains("keyring: holds it\n"))
        #expect(shown.stdoutText.contains("backup: holds it"))
        let json = try JSONSerialization.jsonObject(with: try Idtool.run(["show", "--app", app, "--json"]).stdout) as? [String: Any]
        #expect(json?["identifier"] as? String == value)
        #expect(json?["origin"] as? String == "generated by randomUUID")
    }

    @Test("reset removes this app's identifier only; the next get makes a new one")
    func reset() throws {
        try requireTestKeyring()
        let app = Self.newApp(), other = Self.newApp()
        let before = try Idtool.run(["get", "--app", app]).stdoutText
        let otherValue = try Idtool.run(["get", "--app", other]).stdoutText
        let reset = try Idtool.run(["reset", "--app", app])
        #expect(reset.status == 0)
        #expect(reset.stdout.isEmpty && reset.stderr.isEmpty)
        #expect(try Idtool.run(["show", "--app", app]).status == 1)
        #expect(try Idtool.run(["get", "--app", app]).stdoutText != before)
        #expect(try Idtool.run(["get", "--app", other]).stdoutText == otherValue)
    }

    @Test("--vendor shares one identifier across apps, and reset --vendor resets it for all of them")
    func vendor() throws {
        try requireTestKeyring()
        let group = "test.vendor.\(UUID().uuidString.lowercased())"
        let a = try Idtool.run(["get", "--app", "com.example.a", "--vendor", group])
        let b = try Idtool.run(["get", "--app", "com.example.b", "--vendor", group])
        #expect(a.status == 0 && Self.isUUIDv4Line(a.stdoutText))
        #expect(a.stdoutText == b.stdoutText)
        #expect(try Idtool.run(["get", "--app", "com.example.a"]).stdoutText != a.stdoutText)
        #expect(try Idtool.run(["reset", "--app", "com.example.b", "--vendor", group]).status == 0)
        let after = try Idtool.run(["get", "--app", "com.example.a", "--vendor", group]).stdoutText
        #expect(after != a.stdoutText)
        #expect(try Idtool.run(["get", "--app", "com.example.b", "--vendor", group]).stdoutText == after)
    }

    @Test("migrate adopts a secret-tool item byte for byte, honours --dry-run and --remove-legacy, never overwrites")
    func migrateKeyring() throws {
        try requireTestKeyring()
        let app = Self.newApp()
        let legacyService = "legacy.\(app)"
        let stored = try Idtool.runProgram(URL(fileURLWithPath: "/usr/bin/secret-tool"),
                                           ["store", "--label=legacy", "service", legacyService, "username", "udid"],
                                           stdin: Data(" LEGACY-udid-7 \n".utf8))
        try #require(stored.status == 0)
        let source = "keyring:service=\(legacyService),username=udid"

        let dry = try Idtool.run(["migrate", "--app", app, "--from", source, "--dry-run"])
        #expect(dry.status == 0)
        #expect(dry.stdoutText == "LEGACY-udid-7\n")
        #expect(try Idtool.run(["show", "--app", app]).status == 1, "a dry run writes nothing")

        let migrated = try Idtool.run(["migrate", "--app", app, "--from", source, "--remove-legacy"])
        #expect(migrated.status == 0)
        #expect(migrated.stdoutText == "LEGACY-udid-7\n")
        migrated.expectOneLineError(hiding: ["LEGACY-udid-7"], containing: "adopted")
        #expect(try Idtool.run(["get", "--app", app]).stdoutText == "LEGACY-udid-7\n")
        let legacyLeft = try Idtool.runProgram(URL(fileURLWithPath: "/usr/bin/secret-tool"),
                                               ["lookup", "service", legacyService, "username", "udid"])
        #expect(legacyLeft.status != 0, "the legacy item was removed after verification")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("legacy-\(UUID().uuidString)")
        try "another-value".write(to: file, atomically: true, encoding: .utf8)
        let again = try Idtool.run(["migrate", "--app", app, "--from", "file:\(file.path)", "--remove-legacy"])
        #expect(again.status == 0)
        #expect(again.stdoutText == "LEGACY-udid-7\n", "the destination wins")
        #expect(FileManager.default.fileExists(atPath: file.path))
    }

    @Test("migrate exits 65 for an invalid legacy value and 1 when the source holds none")
    func migrateBadSources() throws {
        try requireTestKeyring()
        let app = Self.newApp()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("legacy-\(UUID().uuidString)")
        try Data("bad\u{1}value".utf8).write(to: file)
        let invalid = try Idtool.run(["migrate", "--app", app, "--from", "file:\(file.path)"])
        #expect(invalid.status == 65)
        invalid.expectOneLineError(hiding: ["bad\u{1}value"], containing: "invalid")
        let missing = try Idtool.run(["migrate", "--app", app, "--from", "file:/nonexistent/\(UUID().uuidString)"])
        #expect(missing.status == 1)
        #expect(try Idtool.run(["show", "--app", app]).status == 1, "nothing was generated")
    }

    @Test("derive equals systemd-id128 machine-id --app-specific for dashed, undashed and uppercase keys")
    func derive() throws {
        let key = "e0e0c2a4f2c64e2c9a8b0b7d3c1f5a66"
        let oracle = try Idtool.runProgram(URL(fileURLWithPath: "/usr/bin/systemd-id128"), ["machine-id", "--app-specific=\(key)"])
        try #require(oracle.status == 0, "systemd-id128 is the oracle: \(oracle.stderr)")
        let dashedKey = "E0E0C2A4-F2C6-4E2C-9A8B-0B7D3C1F5A66"
        for form in [key, key.uppercased(), dashedKey, dashedKey.lowercased()] {
            let run = try Idtool.run(["derive", "--app-key", form])
            #expect(run.status == 0)
            #expect(run.stdoutText == oracle.stdoutText, "key form \(form)")
        }
        let uuid = try Idtool.run(["derive", "--app-key", key, "--uuid"]).stdoutText
        #expect(uuid.replacingOccurrences(of: "-", with: "") == oracle.stdoutText)
        #expect(Self.isUUIDv4Line(uuid))
        let machineID = try String(contentsOfFile: "/etc/machine-id", encoding: .utf8)
        #expect(!oracle.stdoutText.contains(machineID.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(try Idtool.run(["derive", "--app-key", "not-a-key"]).status == 65)
    }

    @Test("with no session bus, get serves the backup identifier with a one-line notice; a new app is pushed later")
    func headlessGet() throws {
        try requireTestKeyring()
        let app = Self.newApp()
        let value = try Idtool.run(["get", "--app", app]).stdoutText
        let environment = try Self.noBusEnvironment()
        let served = try Idtool.run(["get", "--app", app], environment: environment)
        #expect(served.status == 0)
        #expect(served.stdoutText == value)
        served.expectOneLineError(hiding: [value.trimmingCharacters(in: .newlines)], containing: "backup file")

        // The keyring served this user before: a new app gets nothing without it (75).
        let fresh = Self.newApp()
        let refused = try Idtool.run(["get", "--app", fresh], environment: environment)
        #expect(refused.status == 75 && refused.stdout.isEmpty, "\(refused.stderr)")
        refused.expectOneLineError(containing: "cannot be reached now")

        // A user no keyring ever served (a state directory of its own) gets the headless default.
        var neverServed = environment
        neverServed["XDG_STATE_HOME"] = environment["XDG_RUNTIME_DIR"]! + "/state"
        var neverServedWithBus = Idtool.baseEnvironment
        neverServedWithBus["XDG_STATE_HOME"] = neverServed["XDG_STATE_HOME"]
        let made = try Idtool.run(["get", "--app", fresh], environment: neverServed)
        #expect(made.status == 0 && Self.isUUIDv4Line(made.stdoutText))
        #expect(try Idtool.run(["get", "--app", fresh], environment: neverServed).stdoutText == made.stdoutText)
        #expect(try Idtool.run(["get", "--app", fresh], environment: neverServedWithBus).stdoutText == made.stdoutText, "pushed into the keyring")
        let keyringCopy = try Idtool.runProgram(URL(fileURLWithPath: "/usr/bin/secret-tool"),
                                                ["lookup", "identity-scope", "app", "identity-name", fresh])
        #expect(keyringCopy.stdoutText + "\n" == made.stdoutText)
    }

    @Test("a locked keyring: get serves the backup (0), a new app fails with 75, reset fails with 75 and removes nothing")
    func locked() throws {
        try requireTestKeyring()
        let app = Self.newApp()
        let value = try Idtool.run(["get", "--app", app]).stdoutText
        let fresh = Self.newApp()
        #expect(try Idtool.keyringCtl("lock").status == 0)
        defer { _ = try? Idtool.keyringCtl("restart") }

        let served = try Idtool.run(["get", "--app", app, "--no-prompt"])
        #expect(served.status == 0)
        #expect(served.stdoutText == value)
        served.expectOneLineError(hiding: [value.trimmingCharacters(in: .newlines)], containing: "locked")

        let refused = try Idtool.run(["get", "--app", fresh, "--no-prompt"])
        #expect(refused.status == 75)
        #expect(refused.stdout.isEmpty)
        refused.expectOneLineError(containing: "locked")

        let reset = try Idtool.run(["reset", "--app", app, "--no-prompt"])
        #expect(reset.status == 75)
        #expect(try Idtool.keyringCtl("restart").status == 0)
        #expect(try Idtool.run(["get", "--app", app]).stdoutText == value)
    }

    @Test("a configured but dead bus with no backup is an error (69), never a new identifier")
    func staleBus() throws {
        try requireTestKeyring()
        let app = Self.newApp()
        let value = try Idtool.run(["get", "--app", app]).stdoutText
        let state = ProcessInfo.processInfo.environment["XDG_STATE_HOME"]!
        try FileManager.default.removeItem(atPath: "\(state)/keyring-identity/app/\(app)/identifier")
        var environment = Idtool.baseEnvironment
        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=/nonexistent/\(UUID().uuidString)"
        let run = try Idtool.run(["get", "--app", app], environment: environment)
        #expect(run.status == 69)
        #expect(run.stdout.isEmpty)
        run.expectOneLineError(hiding: [value.trimmingCharacters(in: .newlines)])
        #expect(!FileManager.default.fileExists(atPath: "\(state)/keyring-identity/app/\(app)/identifier"))
        #expect(try Idtool.run(["get", "--app", app]).stdoutText == value)
    }

    @Test("eight processes writing a new item at once leave exactly one item")
    func concurrentItemCreates() throws {
        try requireTestKeyring()
        for round in 0..<3 {
            let id = "test.concurrent.\(UUID().uuidString)"
            let runs = Guarded<[Int: Result<Idtool.Run, any Error>]>([:])
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                let run = Result { try Idtool.run(["item", "set", id, "--timeout", "600"], stdin: Data("v\(index)".utf8)) }
                runs.withLock { $0[index] = run }
            }
            let results = runs.withLock { $0 }
            #expect(results.count == 8)
            for index in 0..<8 {
                switch results[index] {
                case .success(let run)?:
                    #expect(run.status == 0, "round \(round), creator \(index): exit \(run.status), stderr: \(run.stderr)")
                    #expect(run.stdout.isEmpty && run.stderr.isEmpty, "round \(round), creator \(index) is silent: \(run.stderr)")
                case .failure(let error)?:
                    Issue.record("round \(round), creator \(index) could not be run: \(error)")
                case nil:
                    Issue.record("round \(round), creator \(index) never ran")
                }
            }
            let items = try Idtool.runProgram(URL(fileURLWithPath: "/usr/bin/secret-tool"), ["search", "--all", "service", id])
            #expect(items.stdoutText.components(separatedBy: "[/").count - 1 == 1, "round \(round): exactly one item")
            // The one item holds what one of the creators wrote.
            let stored = try Idtool.run(["item", "get", id])
            #expect(stored.status == 0, "round \(round): \(stored.stderr)")
            #expect((0..<8).map { Data("v\($0)".utf8) }.contains(stored.stdout), "round \(round): \(stored.stdoutText.debugDescription)")
        }
    }

    @Test("a hung daemon: --timeout applies; get serves the backup (0), a new app is 75, reset is 75")
    func hungDaemon() throws {
        try requireTestKeyring()
        let app = Self.newApp()
        let value = try Idtool.run(["get", "--app", app]).stdoutText
        let paused = try PausedDaemon()
        defer { paused.resume() }
        let served = try Idtool.run(["get", "--app", app, "--timeout", "1"])
        #expect(served.status == 0)
        #expect(served.stdoutText == value)
        served.expectOneLineError(hiding: [value.trimmingCharacters(in: .newlines)], containing: "did not answer")
        let fresh = try Idtool.run(["get", "--app", Self.newApp(), "--timeout", "1"])
        #expect(fresh.status == 75)
        #expect(fresh.stdout.isEmpty)
        #expect(try Idtool.run(["reset", "--app", app, "--timeout", "1"]).status == 75)
        paused.resume()
        #expect(try Idtool.run(["get", "--app", app]).stdoutText == value)
    }

    @Test("a closed stdout is an internal error (70) with a one-line message, for get and item get")
    func closedStdout() throws {
        try requireTestKeyring()
        let binary = try #require(Idtool.binary)
        let id = Idtool.uniqueIdentifier()
        #expect(try Idtool.run(["item", "set", id], stdin: Data("v".utf8)).status == 0)
        for arguments in ["get --app \(Self.newApp())", "item get \(id)"] {
            let run = try Idtool.runProgram(URL(fileURLWithPath: "/bin/sh"), ["-c", "exec \"$0\" \(arguments) >&-", binary.path],
                                            environment: Idtool.baseEnvironment)
            #expect(run.status == 70, "\(arguments): \(run.stderr)")
            run.expectOneLineError(containing: "stdout")
        }
    }

    @Test("migrate maps a bad attribute source to 65 and a locked legacy item to 75")
    func migrateErrorCodes() throws {
        try requireTestKeyring()
        let bad = try Idtool.run(["migrate", "--app", Self.newApp(), "--from", "keyring:xdg:foo=1"])
        #expect(bad.status == 65)
        bad.expectOneLineError()
        // A legacy item in the locked collection: locked, whether the provider lists it or hides it.
        let legacy = Idtool.uniqueIdentifier()
        #expect(try Idtool.run(["item", "set", legacy], stdin: Data("legacy-value".utf8)).status == 0)
        defer { _ = try? Idtool.run(["item", "reset", legacy]) }
        #expect(try Idtool.keyringCtl("lock").status == 0)
        defer { _ = try? Idtool.keyringCtl("restart") }
        let locked = try Idtool.run(["migrate", "--app", Self.newApp(), "--from", "keyring:service=\(legacy)", "--no-prompt"])
        #expect(locked.status == 75)
        locked.expectOneLineError(containing: "locked")
    }
}

