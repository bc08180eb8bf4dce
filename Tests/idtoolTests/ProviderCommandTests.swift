// idtool on every provider, for the cases KeePassXC 2.7.4 once got wrong (issue 10's table): a
// locked database, a second database, metadata updates, values its password field would change.
// The two-database cases run only under scripts/with-keepassxc.
import Foundation
import TestSupport
import Testing

@Suite("idtool keeps values and reports locks on every provider", .serialized, .needs(.secretService))
struct ProviderCommandTests {
    static func newApp() -> String { "test.idtool.\(UUID().uuidString.lowercased())" }

    static func ctl(_ arguments: String...) throws {
        let run = try Idtool.runProgram(Idtool.packageRoot.appendingPathComponent("scripts/keyring-ctl"), arguments)
        try #require(run.status == 0, "keyring-ctl \(arguments) failed: \(run.stderr)")
    }

    /// The app's backup file (README: state layout).
    static func backupPath(app: String) -> String {
        ProcessInfo.processInfo.environment["XDG_STATE_HOME"]! + "/keyring-identity/app/\(app)/identifier"
    }

    @Test("locked keyring: item reset exits 75 and the item keeps its value")
    func itemResetLocked() throws {
        try requireTestKeyring()
        let id = Idtool.uniqueIdentifier()
        #expect(try Idtool.run(["item", "set", id], stdin: Data("keep me".utf8)).status == 0)
        try Self.ctl("lock")
        defer { _ = try? Self.ctl("restart") }
        let reset = try Idtool.run(["item", "reset", id, "--no-prompt"])
        #expect(reset.status == 75)
        reset.expectOneLineError(hiding: [id], containing: "locked")
        try Self.ctl("unlock")
        #expect(try Idtool.run(["item", "get", id]).stdoutText == "keep me")
        #expect(try Idtool.run(["item", "reset", id]).status == 0)
    }

    @Test("locked keyring: reset --app exits 75, keeps the backup, and get still returns the old identifier")
    func appResetLocked() throws {
        try requireTestKeyring()
        let app = Self.newApp()
        let value = try Idtool.run(["get", "--app", app]).stdoutText
        try #require(!value.isEmpty)
        // On KeePassXC the harder case: a second database is the (unlocked) default, the
        // identifier's database is locked and hides it.
        if TestConfiguration.current.offers(.secondDatabase) { try Self.ctl("second-db") }
        try Self.ctl("lock", "keyring")
        defer { _ = try? Self.ctl("restart") }
        let reset = try Idtool.run(["reset", "--app", app, "--no-prompt"])
        #expect(reset.status == 75)
        #expect(FileManager.default.fileExists(atPath: Self.backupPath(app: app)), "the backup survives")
        try Self.ctl("unlock", "keyring")
        #expect(try Idtool.run(["get", "--app", app]).stdoutText == value)
    }

    @Test(
        "two databases, the item's one locked and the other active: item get exits 75, never absent",
        .needs(.secondDatabase))
    func itemGetSecondDatabase() throws {
        try requireTestKeyring()
        let id = Idtool.uniqueIdentifier()
        #expect(try Idtool.run(["item", "set", id], stdin: Data("first db".utf8)).status == 0)
        try Self.ctl("second-db")
        defer { _ = try? Self.ctl("restart") }
        try Self.ctl("lock", "keyring")
        let get = try Idtool.run(["item", "get", id, "--no-prompt"])
        #expect(get.status == 75)
        #expect(get.stdout.isEmpty)
        get.expectOneLineError(hiding: [id], containing: "locked")
        try Self.ctl("unlock", "keyring")
        #expect(try Idtool.run(["item", "get", id]).stdoutText == "first db")
    }

    @Test(
        "two databases, the item's one locked and the other active: item set exits 75 and creates nothing; no write is lost",
        .needs(.secondDatabase))
    func itemSetSecondDatabase() throws {
        try requireTestKeyring()
        let id = Idtool.uniqueIdentifier()
        defer { _ = try? Idtool.run(["item", "reset", id]) }
        #expect(try Idtool.run(["item", "set", id], stdin: Data("first db".utf8)).status == 0)
        try Self.ctl("second-db")
        defer { _ = try? Self.ctl("restart") }
        try Self.ctl("lock", "keyring")
        // Before: exit 0, a second item in the active database, and after the unlock the old one won.
        let set = try Idtool.run(["item", "set", id, "--no-prompt"], stdin: Data("new".utf8))
        #expect(set.status == 75, "\(set.stderr)")
        set.expectOneLineError(hiding: [id], containing: "locked")
        try Self.ctl("unlock", "keyring")
        #expect(try Idtool.run(["item", "get", id]).stdoutText == "first db")
        let list = try Idtool.run(["item", "list", id, "--json"])
        #expect(list.stdoutText.components(separatedBy: "\"locked\"").count - 1 == 1, "one item: \(list.stdoutText)")
    }

    @Test(
        "two databases, the identifier's one locked, the backup gone: get exits 75, never a new identifier",
        .needs(.secondDatabase))
    func getSecondDatabaseNoBackup() throws {
        try requireTestKeyring()
        let app = Self.newApp()
        let value = try Idtool.run(["get", "--app", app]).stdoutText
        try #require(!value.isEmpty)
        try Self.ctl("second-db")
        defer { _ = try? Self.ctl("restart") }
        try Self.ctl("lock", "keyring")
        try FileManager.default.removeItem(atPath: Self.backupPath(app: app))
        let get = try Idtool.run(["get", "--app", app, "--no-prompt"])
        #expect(get.status == 75, "stdout: \(get.stdoutText)")
        #expect(get.stdout.isEmpty)
        try Self.ctl("unlock", "keyring")
        #expect(try Idtool.run(["get", "--app", app]).stdoutText == value)
    }

    @Test("item set --key account and --key description update an existing item")
    func metadataOnExistingItem() throws {
        try requireTestKeyring()
        let id = Idtool.uniqueIdentifier()
        defer { _ = try? Idtool.run(["item", "reset", id]) }
        #expect(try Idtool.run(["item", "set", id], stdin: Data("value".utf8)).status == 0)
        for key in ["account", "description"] {
            let set = try Idtool.run(["item", "set", id, "--key", key], stdin: Data("new \(key)".utf8))
            #expect(set.status == 0, "\(key): \(set.stderr)")
            #expect(try Idtool.run(["item", "get", id, "--key", key]).stdoutText == "new \(key)")
        }
        #expect(try Idtool.run(["item", "get", id]).stdoutText == "value")
    }

    @Test("item set of a {REF:…} field reference: stored byte for byte, or on KeePassXC refused with 65 and nothing stored")
    func fieldReference() throws {
        try requireTestKeyring()
        let id = Idtool.uniqueIdentifier()
        defer { _ = try? Idtool.run(["item", "reset", id]) }
        let value = Data("{REF:U@I:0123456789ABCDEF0123456789ABCDEF}".utf8)
        let set = try Idtool.run(["item", "set", id], stdin: value)
        if TestProvider.quirks.rejectsFieldReferences {
            // KeePassXC 2.7 refuses such values (InvalidArgs) and would leave an empty item.
            #expect(set.status == 65)
            set.expectOneLineError(hiding: [id], containing: "KeePassXC refuses")
            #expect(try Idtool.run(["item", "get", id]).status == 1, "nothing stored")
        } else {
            #expect(set.status == 0)
            #expect(try Idtool.run(["item", "get", id]).stdout == value)
        }
    }

    @Test("item values with placeholders, NUL bytes and binary read back byte for byte, also after a restart")
    func valuesByteForByte() throws {
        try requireTestKeyring()
        let values = [Data("x{TITLE}y".utf8), Data("{REF:x} {PASSWORD}".utf8),
                      Data("text\u{0}with NUL".utf8), Data([0xFF, 0, 0x7B]), Data()]
        var ids: [String] = []
        defer { for id in ids { _ = try? Idtool.run(["item", "reset", id]) } }
        for value in values {
            let id = Idtool.uniqueIdentifier()
            ids.append(id)
            #expect(try Idtool.run(["item", "set", id], stdin: value).status == 0)
            #expect(try Idtool.run(["item", "get", id]).stdout == value)
        }
        try Self.ctl("restart")
        for (id, value) in zip(ids, values) {
            #expect(try Idtool.run(["item", "get", id]).stdout == value, "after restart: \(value as NSData)")
        }
    }

    @Test(
        "doctor names KeePassXC and explains its settings as the harness wrote them",
        .enabled(if: TestProvider.isKeePassXC, "the keepassxc settings line appears only with KeePassXC"))
    func doctorKeePassXC() throws {
        try requireTestKeyring()
        let run = try Idtool.run(["doctor"])
        #expect(run.status == 0, "\(run.stdoutText)\(run.stderr)")
        #expect(run.stdoutText.contains("ok secret service: provided by keepassxc"))
        let line = run.stdoutText.split(separator: "\n").first { $0.hasPrefix("ok keepassxc settings: ") } ?? ""
        for fragment in ["exposed to the Secret Service", "UnlockBeforeSearch=false:", "ConfirmAccessItem=false:", "ConfirmDeleteItem=false:"] {
            #expect(line.contains(fragment), "\(run.stdoutText)")
        }
    }
}
