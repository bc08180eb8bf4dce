// Issue 20, item 8 (the smaller seams), through idtool against the real provider: a legacy
// keyring item behind a locked keyring is never taken for absent.
import Foundation
import Testing
import TestSupport

@Suite(
    "Smaller seams (issue 20, item 8)", .serialized,
    .disabled(if: TestProvider.usesFileBackend, "locks the keyring; libsecret's file backend has nothing to lock"))
struct SmallSeamFaults {
    @Test("migrate from a legacy keyring item while the keyring is locked: exit 75, nothing made, adopted after unlock")
    func migrateLockedLegacyItem() throws {
        try Fault.requireTestKeyring()
        let box = try Sandbox()
        let app = Fault.newApp("legacy-locked")
        let legacy = [("service", "legacy.\(app)"), ("username", "udid")]
        let value = "legacy-\(UUID().uuidString.prefix(8).lowercased())"
        try Fault.storeItem(legacy, value: Data(value.utf8), label: "legacy")
        defer { _ = try? Fault.run("/usr/bin/secret-tool", ["clear"] + legacy.flatMap { [$0.0, $0.1] }) }
        try Fault.lockKeyring()
        var locked = true
        defer { if locked { Fault.restoreDaemon() } }
        let source = "keyring:service=legacy.\(app),username=udid"
        let migrate = try box.idtool(["migrate", "--app", app, "--from", source, "--no-prompt", "--timeout", "5"])
        migrate.expectExit(FaultTable["small.migrate.locked-legacy-item"])
        #expect(migrate.stdoutText.isEmpty, "prints nothing: \(migrate.summary)")
        migrate.expectClean(hiding: [value])
        #expect(!FileManager.default.fileExists(atPath: box.backupPath(app)), "no backup holds a new identifier")
        Fault.restoreDaemon()
        locked = false
        #expect(try Fault.keyringItemCount(app: app) == 0, "no identifier item was made")
        let adopted = try box.idtool(["migrate", "--app", app, "--from", source])
        #expect(adopted.status == 0 && adopted.line == value, "adopted once unlocked: \(adopted.summary)")
    }
}
