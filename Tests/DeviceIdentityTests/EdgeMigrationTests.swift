// Migration edges (issue 9, items 5 and 12a; issue 20, item 8): a machine-id placeholder is not an identifier,
// removing a legacy SecretStore copy removes only the item the value came from, and a keyring source
// reads only the resolver's keyring.
import Foundation
import Keyring
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif
@testable import DeviceIdentity

@Suite("Migration edges against the real keyring", .serialized)
struct EdgeMigrationTests {
    @Test("a machine-id placeholder (\"uninitialized\", all zeros) is rejected, never adopted", arguments: [
        "uninitialized\n", String(repeating: "0", count: 32) + "\n",
    ])
    func machineIDPlaceholderRejected(content: String) throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let path = fixture.directory + "/machine-id"
        try Data(content.utf8).write(to: URL(fileURLWithPath: path))

        let report = try fixture.resolver(migrations: [.machineID(path: path)]).migrate()
        #expect(report.outcome == .nothingToMigrate, "\(report.outcome)")
        #expect(report.resolution == nil, "nothing adopted: \(String(describing: report.resolution?.value))")
        #expect(report.rejected.map(\.source) == ["machine-id"], "the placeholder is reported as rejected")
        #expect(try fixture.keyringValue() == nil)
        #expect(!FileManager.default.fileExists(atPath: fixture.backupPath))

        // Resolving falls through to the generation policy instead.
        let resolution = try fixture.resolver(migrations: [.machineID(path: path)]).resolve()
        #expect(resolution.provenance == .generated(policy: "randomUUID"), "\(resolution.provenance)")
        #expect(isUUIDv4(resolution.value))
    }

    @Test("a .secretStore source with removeAfterMigration removes only the item it adopted, not another client's")
    func secretStoreRemovalIsExact() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let service = "legacy.\(fixture.appID)"
        let alice = ["service": service, "username": "alice"]
        let bob = ["service": service, "username": "bob"]
        try Keyring.default.store(Data("alice-legacy-id".utf8), attributes: alice, label: "alice")
        usleep(1_100_000)  // bob's item is the younger one, in a later second
        try Keyring.default.store(Data("bob-secret".utf8), attributes: bob, label: "bob")
        defer { _ = try? Keyring.default.delete(["service": service]) }

        let report = try fixture.resolver(migrations: [.secretStore(identifier: service, removeAfterMigration: true)]).migrate()
        #expect(report.outcome == .adopted(source: "secret-store:\(service)"), "\(report.outcome)")
        #expect(report.resolution?.value == "alice-legacy-id", "the oldest item is the one a SecretStore reads")
        #expect(report.legacyRemoved)
        #expect(try Keyring.default.lookup(alice) == nil, "the adopted item is gone")
        #expect(try Keyring.default.lookup(bob) == Data("bob-secret".utf8), "another client's item stays")
    }

    // Issue 20, item 8: a keyring source reads the resolver's keyring with the time left of its call;
    // before, a resolver without one read Keyring.default (25 s, prompting) outside its budget.
    @Test("a resolver without a keyring never reads a keyring source from Keyring.default (outside its budget)")
    func noKeyringNoDefaultKeyring() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let legacy = ["service": "legacy.\(fixture.appID)", "username": "udid"]
        try Keyring.default.store(Data("legacy-in-the-default-keyring".utf8), attributes: legacy, label: "legacy")
        defer { _ = try? Keyring.default.delete(legacy) }
        for source in [MigrationSource.keyringItem(legacy), .secretStore(identifier: "legacy.\(fixture.appID)")] {
            let error = identityError { try fixture.resolver(migrations: [source], keyring: nil).resolve() }
            guard case .migrationSourceUnreadable(let described, let reason) = error else {
                Issue.record("\(source): expected migrationSourceUnreadable, got \(String(describing: error))")
                continue
            }
            #expect(described == source.description)
            #expect(reason.contains("no keyring"), "\(reason)")
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.backupPath), "nothing was made")
    }
}
