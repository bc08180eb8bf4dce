// Migration against the real keyring: legacy values written by independent clients.
import Foundation
import Keyring
import TestSupport
import Testing
@testable import DeviceIdentity

@Suite("Migration against the real keyring", .serialized)
struct MigrationTests {
    /// A legacy item written by secret-tool, as another tool or an older version would.
    func storeLegacyItem(_ attributes: [String: String], value: String) throws {
        let arguments = ["store", "--label=legacy"] + attributes.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] }
        let out = try run("/usr/bin/secret-tool", arguments, input: Data(value.utf8))
        try #require(out.status == 0, "secret-tool store failed: \(out.stderr)")
    }

    @Test("a legacy keyring item is adopted byte for byte (trimmed), recorded in provenance, and kept unless asked")
    func keyringItemAdopted() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let legacy = ["service": "legacy.\(fixture.appID)", "username": "udid"]
        try storeLegacyItem(legacy, value: "  Legacy-UDID_0042\n")
        let resolution = try fixture.resolver(migrations: [.keyringItem(legacy)]).resolve()
        #expect(resolution.value == "Legacy-UDID_0042")
        #expect(resolution.provenance == .migrated(source: "keyring:service=legacy.\(fixture.appID),username=udid"))
        #expect(resolution.storedIn == [.keyring, .backup])
        #expect(try fixture.keyringValue() == "Legacy-UDID_0042")
        #expect(try Keyring.default.lookup(legacy) != nil, "the legacy item must stay when removal was not asked for")
        #expect(try fixture.resolver().resolve().origin == "migrated from keyring:service=legacy.\(fixture.appID),username=udid")
    }

    @Test("the legacy copy is removed only when asked, after the adopted value read back")
    func legacyRemovedWhenAsked() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let legacy = ["service": "legacy.\(fixture.appID)", "username": "udid"]
        try storeLegacyItem(legacy, value: "old-id-1")
        let file = fixture.directory + "/legacy-file"
        try "old-id-2".write(toFile: file, atomically: true, encoding: .utf8)
        let report = try fixture.resolver(migrations: [.keyringItem(legacy, removeAfterMigration: true)]).migrate()
        #expect(report.outcome == .adopted(source: "keyring:service=legacy.\(fixture.appID),username=udid"))
        #expect(report.legacyRemoved)
        #expect(try Keyring.default.lookup(legacy) == nil)
        #expect(try fixture.keyringValue() == "old-id-1")

        let other = try Fixture()
        let fileReport = try other.resolver(migrations: [.file(file, removeAfterMigration: true)]).migrate()
        #expect(fileReport.resolution?.value == "old-id-2")
        #expect(!FileManager.default.fileExists(atPath: file))
    }

    @Test("migration never overwrites an existing identifier: the destination wins")
    func destinationWins() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let existing = try fixture.resolver().identifier()
        let file = fixture.directory + "/legacy"
        try "legacy-value".write(toFile: file, atomically: true, encoding: .utf8)
        let report = try fixture.resolver(migrations: [.file(file, removeAfterMigration: true)]).migrate()
        #expect(report.outcome == .destinationHadIdentifier)
        #expect(report.resolution?.value == existing)
        #expect(FileManager.default.fileExists(atPath: file), "nothing is removed when nothing was migrated")
        #expect(try fixture.resolver(migrations: [.file(file)]).resolve().value == existing)
    }

    @Test("an invalid legacy value is rejected and the next source is used", arguments: [
        "", "   \n", "bad\u{1}value", "line1\nline2", String(repeating: "x", count: 300),
    ])
    func invalidValueFallsThrough(bad: String) throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let badFile = fixture.directory + "/bad"
        let goodFile = fixture.directory + "/good"
        try Data(bad.utf8).write(to: URL(fileURLWithPath: badFile))
        try "\u{FEFF}good-legacy-id\r\n".write(toFile: goodFile, atomically: true, encoding: .utf8)
        let report = try fixture.resolver(migrations: [.file(badFile), .file(goodFile)]).migrate()
        #expect(report.outcome == .adopted(source: "file:\(goodFile)"))
        #expect(report.resolution?.value == "good-legacy-id")
        #expect(report.rejected.map(\.source) == ["file:\(badFile)"])
    }

    @Test("invalid values in a keyring item and a SecretStore are rejected too")
    func invalidKeyringValues() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let legacy = ["service": "legacy.\(fixture.appID)", "username": "udid"]
        try storeLegacyItem(legacy, value: "has\u{7}bell")
        let store = try SecretStore(identifier: "old.\(fixture.appID)")
        try store.setData(Data([0xff, 0xfe, 0x00]), forKey: .valueData)
        let report = try fixture.resolver(migrations: [
            .keyringItem(legacy), .secretStore(identifier: "old.\(fixture.appID)"),
        ]).migrate()
        #expect(report.outcome == .nothingToMigrate)
        #expect(report.rejected.count == 2)
        #expect(try fixture.keyringValue() == nil)
    }

    @Test("an older version's SecretStore is a migration source")
    func secretStoreSource() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let store = try SecretStore(identifier: "old.\(fixture.appID)", accessGroup: "legacy-group")
        try store.setObject("from-old-wrapper", forKey: .valueData)
        let resolution = try fixture.resolver(migrations: [
            .secretStore(identifier: "old.\(fixture.appID)"),  // no group: must not see the grouped item
            .secretStore(identifier: "old.\(fixture.appID)", accessGroup: "legacy-group", removeAfterMigration: true),
        ]).resolve()
        #expect(resolution.value == "from-old-wrapper")
        #expect(resolution.provenance == .migrated(source: "secret-store:old.\(fixture.appID)@legacy-group"))
        #expect(try store.object(forKey: .valueData) == nil)
    }

    @Test("the raw machine ID is adopted only when listed as a source")
    func machineIDOptIn() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let path = fixture.directory + "/machine-id"
        try "0123456789abcdef0123456789abcdef\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try fixture.resolver().dryRun().provenance == .generated(policy: "randomUUID"))
        let resolution = try fixture.resolver(migrations: [.machineID(path: path)]).resolve()
        #expect(resolution.value == "0123456789abcdef0123456789abcdef")
        #expect(resolution.provenance == .migrated(source: "machine-id"))
    }

    @Test("a dry run reports what would happen and writes nothing")
    func dryRunWritesNothing() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let file = fixture.directory + "/legacy"
        try "dry-run-id".write(toFile: file, atomically: true, encoding: .utf8)
        let resolver = try fixture.resolver(migrations: [.file(file, removeAfterMigration: true)])
        let report = try resolver.migrate(dryRun: true)
        #expect(report.outcome == .wouldAdopt(source: "file:\(file)"))
        #expect(report.resolution?.value == "dry-run-id")
        #expect(report.resolution?.isDryRun == true)
        #expect(try fixture.keyringValue() == nil)
        #expect(!FileManager.default.fileExists(atPath: fixture.backupPath))
        #expect(FileManager.default.fileExists(atPath: file))
        #expect(try resolver.dryRun().storedIn.isEmpty)
    }

    @Test("an unreadable migration source is not absence: nothing is generated")
    func unreadableSourceBlocksGeneration() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        // A directory cannot be read as a file, even by root.
        let error = identityError { try fixture.resolver(migrations: [.file(fixture.directory)]).resolve() }
        guard case .migrationSourceUnreadable = error else {
            Issue.record("expected migrationSourceUnreadable, got \(String(describing: error))")
            return
        }
        #expect(try fixture.keyringValue() == nil)
    }
}
