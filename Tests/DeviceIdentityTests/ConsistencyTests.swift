// Regressions found in review: each would let an identifier change without a reset.
import Foundation
import Keyring
import TestSupport
import Testing
@testable import DeviceIdentity

#if canImport(Glibc)
import Glibc
#endif

@Suite("Consistency under odd conditions, against the real keyring", .serialized)
struct ConsistencyTests {
    @Test("migrating with removal deletes only the adopted legacy item, never another scope's identifier")
    func removalIsExact() throws {
        try requireTestKeyring()
        let other = try Fixture()
        let mine = try Fixture()
        let otherValue = try other.resolver().identifier()
        // A source broad enough to match every identifier item: they must be neither adopted nor removed.
        let broad = try mine.resolver(migrations: [.keyringItem(["identity-scope": "app"], removeAfterMigration: true)]).migrate()
        #expect(broad.outcome == .nothingToMigrate)
        #expect(try other.keyringValue() == otherValue)

        // A legacy item that shares an attribute with the new item: only the legacy item goes.
        let legacy = ["identity-name": mine.appID, "legacy": "yes"]
        try Keyring.default.store(Data("legacy-42".utf8), attributes: legacy, label: "legacy")
        let report = try mine.resolver(migrations: [.keyringItem(["identity-name": mine.appID], removeAfterMigration: true)]).migrate()
        #expect(report.outcome == .adopted(source: "keyring:identity-name=\(mine.appID)"))
        #expect(report.legacyRemoved)
        #expect(try Keyring.default.lookup(legacy) == nil)
        #expect(try mine.keyringValue() == "legacy-42")
        #expect(try other.keyringValue() == otherValue)
    }

    @Test(
        "a reset made without a keyring is completed once the keyring is back: the old identifier never returns",
        .enabled(if: !TestProvider.usesFileBackend, hidesTheKeyringByHidingTheBus))
    func headlessResetIsCompletedLater() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let old = try fixture.resolver().identifier()
        try withoutSessionBus { try fixture.resolver().reset() }
        #expect(try fixture.keyringValue() == old, "the keyring could not be reached")
        // The keyring served this user: without it, nothing new is made.
        guard case .keyringUnreachable = identityError({ try withoutSessionBus { try fixture.resolver().identifier() } }) else {
            Issue.record("a user the keyring served gets no headless identifier")
            return
        }
        // A user no keyring ever served (the marker gone) gets the headless default.
        fixture.forgetKeyring()
        let headless = try withoutSessionBus { try fixture.resolver().identifier() }
        #expect(headless != old)
        let back = try fixture.resolver().resolve()
        #expect(back.value == headless)
        #expect(back.repairs.contains("a pending reset removed the keyring's old identifier"))
        #expect(try fixture.keyringValue() == headless)
        #expect(try fixture.resolver().resolve().value == headless)
    }

    @Test(
        "while a reset is pending, a dry run still sees the headless identifier",
        .enabled(if: !TestProvider.usesFileBackend, hidesTheKeyringByHidingTheBus))
    func dryRunDuringPendingReset() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        _ = try fixture.resolver().identifier()
        try withoutSessionBus { try fixture.resolver().reset() }
        fixture.forgetKeyring()
        let headless = try withoutSessionBus { try fixture.resolver().identifier() }
        let shown = try fixture.resolver().dryRun()
        #expect(shown.value == headless)
        #expect(shown.provenance == .backup)
    }

    @Test("a reset interrupted after the keyring step never brings the old identifier back")
    func interruptedReset() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let old = try fixture.resolver().identifier()
        let saved = try Data(contentsOf: URL(fileURLWithPath: fixture.backupPath))
        try fixture.resolver().reset()
        // Simulate a crash between the keyring step and the backup step: the old backup is back,
        // with the marker the reset writes first.
        try saved.write(to: URL(fileURLWithPath: fixture.backupPath))
        let record = try JSONSerialization.jsonObject(with: saved) as? [String: Any]
        try (record?["checksum"] as? String ?? "").write(toFile: fixture.backupPath + ".reset-pending", atomically: true, encoding: .utf8)
        let next = try fixture.resolver().resolve()
        #expect(next.value != old)
        #expect(next.provenance == .generated(policy: "randomUUID"))
    }

    @Test("a resolver without a keyring never clears another's pending reset")
    func backupOnlyResetKeepsMarker() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let old = try fixture.resolver().identifier()
        try withoutSessionBus { try fixture.resolver().reset() }
        try fixture.resolver(keyring: nil).reset()
        #expect(try fixture.resolver().resolve().value != old)
    }

    @Test(
        "a corrupt backup while the keyring cannot be reached is an error, not a new identifier",
        .enabled(if: !TestProvider.usesFileBackend, hidesTheKeyringByHidingTheBus))
    func corruptBackupWithoutKeyring() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let value = try fixture.resolver().identifier()
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: fixture.backupPath))
        for _ in 0..<2 {
            guard case .backupCorrupt = identityError({ try withoutSessionBus { try fixture.resolver().resolve() } }) else {
                Issue.record("expected backupCorrupt")
                return
            }
        }
        #expect(try fixture.resolver().resolve().value == value)
    }

    /// The environment variable that turns `deadBusChild` on, naming the file it reports to.
    static let deadBusReport = "CONSISTENCY_DEAD_BUS_REPORT"

    @Test(
        "a configured but dead session bus is not a headless session: nothing is generated",
        .enabled(if: !TestProvider.usesFileBackend, hidesTheKeyringByHidingTheBus))
    func staleBusIsNotAbsence() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let value = try fixture.resolver().identifier()
        try FileManager.default.removeItem(atPath: fixture.backupPath)
        // This process's GLib keeps its live bus connection whatever the environment says, so the
        // resolve runs in a fresh process: this test binary, running only `deadBusChild`, with a
        // bus address nothing listens on.
        let report = fixture.directory + "/dead-bus-report.json"
        let binary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let child = try run(
            binary, ["--testing-library", "swift-testing", "--filter", "ConsistencyTests/deadBusChild"],
            environment: [
                Self.deadBusReport: report, "CONSISTENCY_DEAD_BUS_DIRECTORY": fixture.directory,
                "CONSISTENCY_DEAD_BUS_APP": fixture.appID,
                "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/\(UUID().uuidString)/bus",
            ])
        #expect(child.status == 0, "the child test failed: \(child.text)\(child.stderr)")
        let data = try #require(FileManager.default.contents(atPath: report), "the child reported nothing: \(child.text)")
        let outcome = try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
        #expect(outcome["configured"] == "true", "the child saw a configured bus: \(outcome)")
        #expect(outcome["result"] == "error", "resolve must fail, not answer: \(outcome)")
        #expect(outcome["error"] == "keyring.noSessionBus", "\(outcome)")
        #expect(outcome["value"] == nil, "no identifier was handed out")
        // Nothing generated: no backup was written, and the keyring holds the one old item.
        #expect(!FileManager.default.fileExists(atPath: fixture.backupPath), "nothing generated into the backup")
        #expect(try fixture.keyringValue() == value)
        let items = try run("/usr/bin/secret-tool", ["search", "--all", "identity-scope", "app", "identity-name", fixture.appID])
        #expect(items.text.components(separatedBy: "[/").count - 1 == 1, "one keyring item")
        #expect(try fixture.resolver().resolve().value == value, "the live bus still serves the old identifier")
    }

    /// The child half of `staleBusIsNotAbsence`, run only in the process that test starts.
    @Test("(child process of the dead-bus test; skipped when run directly)",
          .enabled(if: ProcessInfo.processInfo.environment[ConsistencyTests.deadBusReport] != nil))
    func deadBusChild() throws {
        let environment = ProcessInfo.processInfo.environment
        let report = try #require(environment[Self.deadBusReport])
        let directory = try #require(environment["CONSISTENCY_DEAD_BUS_DIRECTORY"])
        let app = try #require(environment["CONSISTENCY_DEAD_BUS_APP"])
        let resolver = try IdentifierResolver(
            scope: .app(app), policy: .randomUUID, keyring: Keyring(timeout: .seconds(5)),
            backup: .directory(directory + "/state/" + app), lockDirectories: [directory + "/lock"])
        var outcome = ["configured": "\(Keyring.isSessionBusConfigured)"]
        do {
            outcome["value"] = try resolver.resolve().value
            outcome["result"] = "value"
        } catch {
            outcome["result"] = "error"
            if case .keyring(.noSessionBus) = error { outcome["error"] = "keyring.noSessionBus" } else { outcome["error"] = "\(error)" }
        }
        try JSONSerialization.data(withJSONObject: outcome).write(to: URL(fileURLWithPath: report))
    }

    @Test("a read-only pass never moves files: show leaves a corrupt backup where it is")
    func dryRunDoesNotQuarantine() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        _ = try fixture.resolver().identifier()
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: fixture.backupPath))
        let dry = try fixture.resolver().dryRun()
        #expect(dry.conflicts.contains { $0.contains("corrupt") })
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.backupPath)) == Data("garbage".utf8))
    }

    @Test("the origin survives a backup rewrite, through the keyring item's identity-origin attribute")
    func originSurvives() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let file = fixture.directory + "/legacy"
        try "origin-test-id".write(toFile: file, atomically: true, encoding: .utf8)
        _ = try fixture.resolver(migrations: [.file(file)]).resolve()
        try FileManager.default.removeItem(atPath: fixture.backupPath)
        let again = try fixture.resolver().resolve()
        #expect(again.origin == "migrated from file:\(file)")
        #expect(try fixture.resolver(keyring: nil).resolve().origin == "migrated from file:\(file)")
    }

    @Test("temp files of writers that died are removed on the next write; a live writer's is kept")
    func staleTemporariesRemoved() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        _ = try fixture.resolver().identifier()
        let dead = try run("/bin/sh", ["-c", "echo $$"]).text.trimmingCharacters(in: .whitespacesAndNewlines)
        let stale = fixture.backupPath + ".tmp-\(dead)-1"
        let live = fixture.backupPath + ".tmp-\(getpid())-2"
        for file in [stale, live] { try "partial".write(toFile: file, atomically: false, encoding: .utf8) }
        try FileManager.default.removeItem(atPath: fixture.backupPath)
        _ = try fixture.resolver().resolve()  // rewrites the backup
        #expect(!FileManager.default.fileExists(atPath: stale))
        #expect(FileManager.default.fileExists(atPath: live))
        try FileManager.default.removeItem(atPath: live)
    }

    @Test("Keyring.store replaces only an item with exactly the same attributes")
    func storeIsExact() throws {
        try requireTestKeyring()
        let service = "exact.\(UUID().uuidString)"
        try Keyring.default.store(Data("wider".utf8), attributes: ["service": service, "username": "bob"], label: "wider")
        try Keyring.default.store(Data("narrow".utf8), attributes: ["service": service], label: "narrow")
        try Keyring.default.store(Data("narrow-2".utf8), attributes: ["service": service], label: "narrow")
        #expect(try Keyring.default.search(["service": service]).count == 2)
        #expect(try Keyring.default.lookup(["service": service, "username": "bob"]) == Data("wider".utf8))
    }
}
