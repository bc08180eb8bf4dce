// Security properties: backup permissions, no writes through symlinks, no identifier in
// stderr or error messages, no secret in argv.
import DeviceIdentity
import Foundation
import Keyring
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Faults: security properties", .serialized)
struct SecurityFaults {
    init() throws { try Fault.requireTestKeyring() }

    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    @Test("the backup is 0600 in a 0700 directory it made; a directory that existed keeps its mode")
    func permissions() throws {
        let box = try Sandbox()
        let row = FaultTable["sec.permissions"]
        let app = Fault.newApp("perm")
        let id = try box.establish(app)
        #expect(Self.mode(box.backupPath(app)) == 0o600)
        #expect(Self.mode(box.backupDirectory(app)) == 0o700)

        let loose = Fault.newApp("perm-loose")
        try FileManager.default.createDirectory(atPath: box.backupDirectory(loose), withIntermediateDirectories: true)
        chmod(box.backupDirectory(loose), 0o755)
        let get = try box.idtool(["get", "--app", loose])
        get.expectExit(row)
        #expect(Self.mode(box.backupPath(loose)) == 0o600)
        #expect(Self.mode(box.backupDirectory(loose)) == 0o755, "a directory the library did not create is never chmod'ed")
        #expect(try box.idtool(["get", "--app", app]).line == id)
    }

    @Test("a symlinked backup directory is never written through")
    func symlinkedDirectory() throws {
        let box = try Sandbox()
        let app = Fault.newApp("symdir")
        let id = try box.establish(app)
        try FileManager.default.removeItem(atPath: box.backupDirectory(app))
        let elsewhere = box.root.appendingPathComponent("elsewhere").path
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try #require(symlink(elsewhere, box.backupDirectory(app)) == 0)
        let get = try box.idtool(["get", "--app", app, "--json"])
        get.expectExit(FaultTable["sec.symlinked-dir"])
        #expect(get.json?["identifier"] as? String == id, "identifier unchanged: \(get.summary)")
        #expect(get.json?["storedIn"] as? [String] == ["keyring"], "\(get.stdoutText)")
        get.expectClean(hiding: [id])
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere) == [], "nothing written through the symlink")
    }

    @Test("identifiers never reach stderr or error messages, even when every store fails", .needs(.secretService))
    func noIdentifierInErrors() throws {
        let box = try Sandbox()
        let app = Fault.newApp("leak")
        let id = try box.establish(app)
        defer { Fault.restoreDaemon() }
        try Fault.lockKeyring()
        // --no-prompt: the locked path itself; kwalletd5 in this harness would open the wallet silently.
        // Locked + backup: degraded notices.
        for arguments in [["get", "--app", app], ["show", "--app", app], ["show", "--app", app, "--json"], ["reset", "--app", app],
                          ["migrate", "--app", app, "--from", "machine-id", "--dry-run"], ["doctor"]] {
            let run = try box.idtool(arguments + ["--no-prompt"])
            run.expectClean(hiding: [id])
        }
        // Locked, no backup: errors, from idtool and from the library.
        try FileManager.default.removeItem(atPath: box.backupPath(app))
        for arguments in [["get", "--app", app], ["show", "--app", app], ["reset", "--app", app]] {
            let run = try box.idtool(arguments + ["--no-prompt"])
            #expect(run.status != 0, "\(arguments): \(run.summary)")
            run.expectClean(hiding: [id])
        }
        let resolver = try IdentifierResolver(scope: .app(app), keyring: Keyring(unlock: .never), backup: .none)
        do {
            _ = try resolver.resolve()
            Issue.record("a locked keyring resolved")
        } catch {
            #expect(!"\(error)".contains(id) && !String(reflecting: error).contains(id), "error text leaks the identifier")
        }
        _ = FaultTable["sec.no-identifier-in-stderr"]
    }

    @Test("a secret given in argv to item set is refused (secrets come from stdin only) and never echoed")
    func noSecretInArgv() throws {
        let box = try Sandbox()
        let id = "fault.argv.\(UUID().uuidString)", secret = "argv-secret-\(UUID().uuidString)"
        let set = try box.idtool(["item", "set", id, secret])
        set.expectExit(FaultTable["sec.no-secret-in-argv"])
        set.expectClean(hiding: [secret])
        for flag in ["--value", "--secret", "--password"] {
            let run = try box.idtool(["item", "set", id, flag, secret])
            #expect(run.status == 64, "\(flag): \(run.summary)")
            run.expectClean(hiding: [secret])
        }
        #expect(try box.idtool(["item", "get", id]).status == 1, "nothing stored")
        // The honest path: stdin.
        #expect(try box.idtool(["item", "set", id], stdin: Data(secret.utf8)).status == 0)
        #expect(try box.idtool(["item", "get", id]).stdoutText == secret)
        #expect(try box.idtool(["item", "reset", id]).status == 0)
    }
}
