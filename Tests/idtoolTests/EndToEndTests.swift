import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The built idtool against the real throwaway gnome-keyring of scripts/with-keyring.
/// Serialized: some tests lock or restart the shared daemon, and always restore it.
@Suite("idtool binary against the test keyring", .serialized, .needs(.secretService))
struct KeyringEndToEndTests {
    init() throws { try requireTestKeyring() }

    // MARK: item round trips

    @Test("item set then get round-trips binary values byte for byte through stdin and stdout", arguments: [
        ("NUL bytes", Data([0, 1, 0, 0x41, 0, 0])),
        ("invalid UTF-8", Data([0xFF, 0xFE, 0xC3, 0x28, 0xA0, 0xA1, 0xED, 0xA0, 0x80])),
        ("every byte", Data((0...255).map(UInt8.init))),
        ("text with a trailing newline", Data("tr\u{e8}s secret\n".utf8)),
        ("empty", Data()),
    ])
    func binaryRoundTrip(_ name: String, _ value: Data) throws {
        let id = Idtool.uniqueIdentifier()
        let set = try Idtool.run(["item", "set", id], stdin: value)
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.isEmpty)
        let get = try Idtool.run(["item", "get", id])
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.stdout == value)
        #expect(get.stderr.isEmpty)
        _ = try Idtool.run(["item", "reset", id])
    }

    @Test("a 1 MiB random value round-trips exactly")
    func oneMebibyte() throws {
        var generator = SystemRandomNumberGenerator()
        let value = Data((0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let id = Idtool.uniqueIdentifier()
        let set = try Idtool.run(["item", "set", id, "--timeout", "60"], stdin: value)
        #expect(set.status == 0, "\(set.stderr)")
        let get = try Idtool.run(["item", "get", id, "--timeout", "60"])
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.stdout.count == value.count)
        #expect(get.stdout == value)
        _ = try Idtool.run(["item", "reset", id])
    }

    @Test("item get of an absent item exits 1 with empty stdout and a one-line stderr without the identifier")
    func absent() throws {
        let id = Idtool.uniqueIdentifier()
        let get = try Idtool.run(["item", "get", id])
        #expect(get.status == 1)
        #expect(get.stdout.isEmpty)
        get.expectOneLineError(hiding: [id], containing: "no such item")
        let label = try Idtool.run(["item", "get", id, "--key", "label"])
        #expect(label.status == 1)
        #expect(label.stdout.isEmpty)
    }

    @Test("every KEY is written and read back", arguments: ["account", "label", "description", "comment", "generic"])
    func everyKey(_ key: String) throws {
        let id = Idtool.uniqueIdentifier()
        let secret = "secret-\(UUID().uuidString)"
        let text = "\(key)-text \u{e9}\u{1F511} \(UUID().uuidString)"
        #expect(try Idtool.run(["item", "set", id], stdin: Data(secret.utf8)).status == 0)
        let set = try Idtool.run(["item", "set", id, "--key", key], stdin: Data(text.utf8))
        #expect(set.status == 0, "\(set.stderr)")
        let get = try Idtool.run(["item", "get", id, "--key", key])
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.stdoutText == text)
        let value = try Idtool.run(["item", "get", id, "--key", "value"])
        #expect(value.stdoutText == secret, "writing \(key) keeps the secret")
        for run in [set, get, value] { run.expectClean(hiding: [id, secret, text]) }
        _ = try Idtool.run(["item", "reset", id])
    }

    @Test("metadata must be UTF-8: binary for a non-value KEY is bad data (65)")
    func binaryMetadata() throws {
        let id = Idtool.uniqueIdentifier()
        let run = try Idtool.run(["item", "set", id, "--key", "comment"], stdin: Data([0x61, 0xFF]))
        #expect(run.status == 65)
        run.expectOneLineError(hiding: [id])
        _ = try Idtool.run(["item", "reset", id])
    }

    @Test("item reset removes the item, and resetting an absent item succeeds")
    func reset() throws {
        let id = Idtool.uniqueIdentifier()
        #expect(try Idtool.run(["item", "set", id], stdin: Data("v".utf8)).status == 0)
        let reset = try Idtool.run(["item", "reset", id])
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(reset.stdout.isEmpty)
        #expect(try Idtool.run(["item", "get", id]).status == 1)
        #expect(try Idtool.run(["item", "reset", id]).status == 0)
    }

    @Test("--group keeps items apart")
    func groups() throws {
        let id = Idtool.uniqueIdentifier()
        #expect(try Idtool.run(["item", "set", id, "--group", "g1"], stdin: Data("in-g1".utf8)).status == 0)
        #expect(try Idtool.run(["item", "get", id, "--group", "g1"]).stdoutText == "in-g1")
        #expect(try Idtool.run(["item", "get", id]).status == 1, "an ungrouped read does not see a grouped item")
        #expect(try Idtool.run(["item", "get", id, "--group", "g2"]).status == 1)
        #expect(try Idtool.run(["item", "reset", id, "--group", "g1"]).status == 0)
        #expect(try Idtool.run(["item", "get", id, "--group", "g1"]).status == 1)
    }

    @Test("-- lets an identifier start with a dash")
    func dashIdentifier() throws {
        let id = "-weird-\(UUID().uuidString)"
        #expect(try Idtool.run(["item", "set", "--", id], stdin: Data("dash".utf8)).status == 0)
        let get = try Idtool.run(["item", "get", "--", id])
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.stdoutText == "dash")
        #expect(try Idtool.run(["item", "reset", "--", id]).status == 0)
    }

    // MARK: interop

    @Test("an item stored by python-keyring is read by idtool item get")
    func pythonKeyring() throws {
        let service = Idtool.uniqueIdentifier(), account = "py-\(UUID().uuidString)", password = "py-pw-\(UUID().uuidString)"
        let script = "import sys, keyring; keyring.set_password(sys.argv[1], sys.argv[2], sys.argv[3])"
        let python = try Idtool.runProgram(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script, service, account, password])
        try #require(python.status == 0, "python-keyring failed: \(python.stderr)")
        let get = try Idtool.run(["item", "get", service])
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.stdoutText == password)
        #expect(try Idtool.run(["item", "get", service, "--key", "account"]).stdoutText == account)
        get.expectClean(hiding: [service, account, password])
        #expect(try Idtool.run(["item", "reset", service]).status == 0)
    }

    @Test("an item stored by secret-tool is read by idtool item get")
    func secretTool() throws {
        let id = Idtool.uniqueIdentifier(), account = "A-\(UUID().uuidString)", secret = "st-\(UUID().uuidString)"
        let store = try Idtool.runProgram(URL(fileURLWithPath: "/usr/bin/secret-tool"),
                                          ["store", "--label=x", "service", id, "username", account], stdin: Data(secret.utf8))
        try #require(store.status == 0, "secret-tool failed: \(store.stderr)")
        #expect(try Idtool.run(["item", "get", id]).stdoutText == secret)
        #expect(try Idtool.run(["item", "get", id, "--key", "account"]).stdoutText == account)
        #expect(try Idtool.run(["item", "get", id, "--key", "label"]).stdoutText == "x")
        #expect(try Idtool.run(["item", "reset", id]).status == 0)
    }

    @Test("secret-tool reads what idtool item set wrote")
    func secretToolReadsIdtool() throws {
        let id = Idtool.uniqueIdentifier(), secret = "it-\(UUID().uuidString)"
        #expect(try Idtool.run(["item", "set", id], stdin: Data(secret.utf8)).status == 0)
        #expect(try Idtool.run(["item", "set", id, "--key", "account"], stdin: Data("bob".utf8)).status == 0)
        let lookup = try Idtool.runProgram(URL(fileURLWithPath: "/usr/bin/secret-tool"), ["lookup", "service", id, "username", "bob"])
        #expect(lookup.stdoutText == secret)
        #expect(try Idtool.run(["item", "reset", id]).status == 0)
    }

    // MARK: doctor

    @Test("doctor passes under the test keyring and names the implementation")
    func doctorHealthy() throws {
        let run = try Idtool.run(["doctor"])
        #expect(run.status == 0, "\(run.stdoutText)\(run.stderr)")
        let lines = run.stdoutText.split(separator: "\n")
        for check in ["session bus", "secret service", "default collection", "default collection unlocked"] {
            #expect(lines.contains { $0.hasPrefix("ok \(check): ") }, "\(run.stdoutText)")
        }
        #expect(run.stdoutText.contains(TestProvider.processName))
        let json = try Idtool.run(["doctor", "--json"])
        #expect(json.status == 0)
        let object = try #require(JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        #expect(object["ok"] as? Bool == true)
        #expect((object["checks"] as? [[String: Any]])?.count ?? 0 >= 4)
    }

    /// oo7-daemon (Fedora 45, GNOME OS) keeps keyrings in keyrings/v1/ and deletes gnome-keyring's
    /// login.keyring without importing it when a v1 file exists (issue 34, from oo7's source).
    @Test("doctor fails on a split login keyring (gnome-keyring's beside oo7-daemon's v1/), naming both; one alone is no finding")
    func doctorSplitKeyring() throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("split-keyring-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let keyrings = data.appendingPathComponent("keyrings")
        try FileManager.default.createDirectory(at: keyrings.appendingPathComponent("v1"), withIntermediateDirectories: true)
        var environment = Idtool.baseEnvironment
        environment["XDG_DATA_HOME"] = data.path
        try Data("GnomeKeyring\n\r\0\n".utf8).write(to: keyrings.appendingPathComponent("login.keyring"))
        let alone = try Idtool.run(["doctor"], environment: environment)
        #expect(alone.status == 0, "\(alone.stdoutText)\(alone.stderr)")
        #expect(!alone.stdoutText.contains("keyring files"), "\(alone.stdoutText)")

        try Data("GnomeKeyring\n\r\0\n".utf8).write(to: keyrings.appendingPathComponent("v1/login.keyring"))
        let split = try Idtool.run(["doctor"], environment: environment)
        #expect(split.status != 0)
        let line = try #require(split.stdoutText.split(separator: "\n").first { $0.hasPrefix("FAIL keyring files: ") }, "\(split.stdoutText)")
        #expect(line.contains(keyrings.path) && line.contains("v1/login.keyring") && line.contains("read as absent"), "\(line)")
        #expect(split.stdoutText.contains("fix: copy both files somewhere safe first"), "\(split.stdoutText)")
    }

    // MARK: locked keyring

    @Test("a locked keyring gives 75 and one stderr line, never absent or a new item")
    func locked() throws {
        let id = Idtool.uniqueIdentifier(), secret = "locked-\(UUID().uuidString)"
        #expect(try Idtool.run(["item", "set", id], stdin: Data(secret.utf8)).status == 0)
        let lock = try Idtool.keyringCtl("lock")
        try #require(lock.status == 0, "keyring-ctl lock failed: \(lock.stderr)")
        // --no-prompt: the locked path itself; kwalletd5 in this harness would open the wallet silently.
        defer {
            let restart = try? Idtool.keyringCtl("restart")
            #expect(restart?.status == 0, "keyring-ctl restart failed: \(restart?.stderr ?? "did not run")")
        }
        let existing = try Idtool.run(["item", "get", id, "--no-prompt"])
        #expect(existing.status == 75)
        #expect(existing.stdout.isEmpty)
        existing.expectOneLineError(hiding: [id, secret], containing: "locked")

        // gnome-keyring and KWallet list a locked collection's matches, so none proves absence (1);
        // KeePassXC hides them, so there a miss is locked (75), never absent.
        let missing = try Idtool.run(["item", "get", Idtool.uniqueIdentifier(), "--no-prompt"])
        if TestProvider.listsLockedItems {
            #expect(missing.status == 1, "\(missing.stderr)")
            missing.expectOneLineError(containing: "no such item")
        } else {
            #expect(missing.status == 75, "a miss a locked database may hide is never reported as absent")
            missing.expectOneLineError(containing: "locked")
        }

        let other = Idtool.uniqueIdentifier()
        let set = try Idtool.run(["item", "set", other, "--no-prompt"], stdin: Data(secret.utf8))
        #expect(set.status == 75)
        set.expectOneLineError(hiding: [other, secret], containing: "locked")

        let reset = try Idtool.run(["item", "reset", id, "--no-prompt"])
        #expect(reset.status == 75)
        reset.expectOneLineError(hiding: [id])

        let doctor = try Idtool.run(["doctor", "--no-prompt"])
        #expect(doctor.status == 75, "\(doctor.stdoutText)")
        #expect(doctor.stdoutText.contains("FAIL default collection unlocked: locked"))
    }

    @Test("after the keyring is unlocked again the item is still there")
    func afterLock() throws {
        // Runs after `locked` (serialized): proves the restart in its defer restored the daemon.
        let id = Idtool.uniqueIdentifier()
        #expect(try Idtool.run(["item", "set", id], stdin: Data("back".utf8)).status == 0)
        #expect(try Idtool.run(["item", "get", id]).stdoutText == "back")
        #expect(try Idtool.run(["item", "reset", id]).status == 0)
    }

    // MARK: headless

    @Test("with no session bus, item commands and doctor fail with 69 and no plaintext fallback")
    func noSessionBus() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("idtool-empty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        var environment = Idtool.baseEnvironment
        environment["DBUS_SESSION_BUS_ADDRESS"] = nil
        environment["XDG_RUNTIME_DIR"] = empty.path
        environment["DISPLAY"] = nil

        let id = Idtool.uniqueIdentifier(), secret = "headless-\(UUID().uuidString)"
        let set = try Idtool.run(["item", "set", id], stdin: Data(secret.utf8), environment: environment)
        #expect(set.status == 69)
        set.expectOneLineError(hiding: [id, secret], containing: "no D-Bus session bus")
        for arguments in [["item", "get", id], ["item", "reset", id]] {
            let run = try Idtool.run(arguments, environment: environment)
            #expect(run.status == 69)
            #expect(run.stdout.isEmpty)
            run.expectOneLineError(hiding: [id], containing: "no D-Bus session bus")
        }
        let doctor = try Idtool.run(["doctor"], environment: environment)
        #expect(doctor.status == 69)
        // The first line names the backend; the first check that can fail is the bus.
        #expect(doctor.stdoutText.hasPrefix("ok keyring backend: secret-service, the default\nFAIL session bus: "), "\(doctor.stdoutText)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty.path).isEmpty, "nothing was written in its place")
    }

    @Test("a session bus without a Secret Service gives 69 and says so")
    func busWithoutSecretService() throws {
        let bus = try BusWithoutSecretService()
        var environment = Idtool.baseEnvironment
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        let id = Idtool.uniqueIdentifier(), secret = "nobus-\(UUID().uuidString)"
        let set = try Idtool.run(["item", "set", id], stdin: Data(secret.utf8), environment: environment)
        #expect(set.status == 69)
        set.expectOneLineError(hiding: [id, secret], containing: "no Secret Service")
        let get = try Idtool.run(["item", "get", id], environment: environment)
        #expect(get.status == 69)
        #expect(get.stdout.isEmpty)
        get.expectOneLineError(hiding: [id], containing: "no Secret Service")
        let doctor = try Idtool.run(["doctor"], environment: environment)
        #expect(doctor.status == 69)
        #expect(doctor.stdoutText.contains("ok session bus: "))
        #expect(doctor.stdoutText.contains("FAIL secret service: "))
    }

    @Test("stdin larger than the SecretStore limit is bad data (65)")
    func tooLarge() throws {
        let id = Idtool.uniqueIdentifier()
        let run = try Idtool.run(["item", "set", id], stdin: Data(count: (16 << 20) + 1))
        #expect(run.status == 65)
        run.expectOneLineError(hiding: [id])
        #expect(try Idtool.run(["item", "get", id]).status == 1, "nothing was stored")
    }
}

/// The binary's command-line behaviour: these runs never reach the keyring.
@Suite("idtool binary: help and usage errors")
struct CommandLineEndToEndTests {
    @Test("--help prints to stdout and exits 0 for every command", arguments: [
        ["--help"], ["-h"], ["get", "--help"], ["show", "-h"], ["reset", "--help"], ["migrate", "--help"], ["derive", "--help"],
        ["doctor", "--help"], ["item", "--help"], ["item", "get", "--help"], ["item", "set", "--help"], ["item", "reset", "-h"],
    ])
    func help(_ arguments: [String]) throws {
        let run = try Idtool.run(arguments)
        #expect(run.status == 0)
        #expect(run.stdoutText.contains("Usage"))
        #expect(run.stderr.isEmpty)
    }

    @Test("the overview lists the exit codes")
    func overview() throws {
        let text = try Idtool.run(["--help"]).stdoutText
        for code in ["0", "1", "64", "65", "69", "70", "75"] { #expect(text.contains("\n  \(code) "), "exit code \(code)") }
    }

    @Test("--version prints a version and exits 0")
    func version() throws {
        let run = try Idtool.run(["--version"])
        #expect(run.status == 0)
        #expect(run.stdoutText.hasPrefix("idtool "))
    }

    @Test("usage errors exit 64 with nothing on stdout, one error line, then the usage, on stderr", arguments: [
        [], ["bogus"], ["get", "--bogus"], ["get", "--json", "--json"], ["get", "--app"], ["get", "--app", ""],
        ["item", "get"], ["item", "get", "id", "--key", "password"], ["item", "set", "id", "--timeout", "0"],
        ["migrate", "--app", "a", "--from", "nowhere"], ["item", "get", "a", "b"], ["doctor", "--timeout", "x"],
    ])
    func usageErrors(_ arguments: [String]) throws {
        let run = try Idtool.run(arguments)
        #expect(run.status == 64)
        #expect(run.stdout.isEmpty)
        #expect(run.stderrLines.first?.hasPrefix("idtool: ") == true, "\(run.stderr)")
        #expect(run.stderr.contains("Usage"))
        run.expectClean()
    }

    @Test("a bad --app-key exits 65 with one line and no usage")
    func badAppKey() throws {
        let run = try Idtool.run(["derive", "--app-key", "not-a-key"])
        #expect(run.status == 65)
        #expect(run.stdout.isEmpty)
        run.expectOneLineError(hiding: ["not-a-key"])
    }

    @Test("a stray extra identifier is not echoed on stderr")
    func extraIdentifierNotEchoed() throws {
        let run = try Idtool.run(["item", "get", "first-secret-id", "second-secret-id"])
        #expect(run.status == 64)
        run.expectClean(hiding: ["first-secret-id", "second-secret-id"])
    }
}
