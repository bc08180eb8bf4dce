// Issue 20, item 8: the `.keyringItem` migration source proves a miss as every read does: a miss
// that a locked collection may hide is "locked" (KeePassXC hides a locked database's items), so no
// new identifier is made instead of migrating. gnome-keyring and KWallet list a locked
// collection's matches, so there no match at all is a proven absence (issue 29). (Reading only the resolver's keyring: EdgeMigrationTests.)
// Runs against the real provider under scripts/with-keyring, with-kwallet or with-keepassxc.
import Foundation
import Keyring
import TestSupport
import Testing
@testable import DeviceIdentity

@Suite(
    "Migration sources against a locked keyring", .serialized,
    .disabled(if: TestProvider.usesFileBackend, "locks the keyring; libsecret's file backend has nothing to lock"))
struct MigrationLockedTests {
    /// A legacy item written by secret-tool, as an older version or another tool would.
    func storeLegacyItem(_ attributes: [String: String], value: String) throws {
        let arguments = ["store", "--label=legacy"] + attributes.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] }
        let out = try run("/usr/bin/secret-tool", arguments, input: Data(value.utf8))
        try #require(out.status == 0, "secret-tool store failed: \(out.stderr)")
    }

    /// The keyring error a source read throws; records an issue when it answers instead.
    func lockedRead(_ source: MigrationSource, sourceLocation: SourceLocation = #_sourceLocation) -> KeyringError? {
        do {
            let reading = try source.read(budget: Budget(timeout: .seconds(5), keyring: Keyring(timeout: .seconds(5), unlock: .never)))
            Issue.record("expected locked, the source answered \(reading)", sourceLocation: sourceLocation)
        } catch .keyring(let error) {
            return error
        } catch {
            Issue.record("expected a keyring error, got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    @Test(
        "a legacy keyring item's source is locked, never absent, while the keyring is locked (stored or not)",
        arguments: [true, false])
    func lockedKeyringIsNotAbsent(legacyStored: Bool) throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let legacy = ["service": "legacy.\(fixture.appID)", "username": "udid"]
        if legacyStored { try storeLegacyItem(legacy, value: "legacy-udid-7") }
        defer { _ = try? Keyring.default.delete(legacy) }
        try keyringCtl("lock")
        var locked = true
        defer { if locked { _ = try? keyringCtl("restart") } }  // unlocked again for the suites after this one

        // KeePassXC hides the locked database's item; gnome-keyring and KWallet list it as locked.
        // With no legacy item at all, the miss is proven only where locked matches are listed.
        if legacyStored || !TestProvider.listsLockedItems {
            guard case .locked = lockedRead(.keyringItem(legacy)) else {
                Issue.record("a locked legacy item, or a miss a locked database may hide, must be locked")
                return
            }
        } else {
            let budget = Budget(timeout: .seconds(5), keyring: Keyring(timeout: .seconds(5), unlock: .never))
            let reading = try MigrationSource.keyringItem(legacy).read(budget: budget)
            guard case .absent = reading else {
                Issue.record("no match at all where locked matches are listed is absent, got \(reading)")
                return
            }
        }
        // The resolver makes nothing: no identifier, no backup, no keyring item. Where the misses
        // are proven (nothing to migrate, nothing stored), migrate says so; else it is locked.
        let resolver = try fixture.resolver(migrations: [.keyringItem(legacy)], keyring: Keyring(timeout: .seconds(5), unlock: .never))
        if !legacyStored && TestProvider.listsLockedItems {
            #expect(try resolver.migrate().resolution == nil, "nothing to migrate, and migrate never generates")
        } else {
            let error = identityError { try resolver.migrate() }
            guard case .keyring(.locked) = error else {
                Issue.record("migrate must fail as locked, got \(String(describing: error))")
                return
            }
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.backupPath), "no backup may hold a new identifier")
        try keyringCtl("restart")
        locked = false
        #expect(try fixture.keyringValue() == nil, "no identifier item was made")
        if legacyStored {
            let report = try fixture.resolver(migrations: [.keyringItem(legacy)]).migrate()
            #expect(report.resolution?.value == "legacy-udid-7", "once unlocked, the legacy value is adopted")
        }
    }

    @Test(
        "KeePassXC, two databases: the legacy item's one locked, the other active and unlocked: locked, never absent",
        .needs(.secondDatabase))
    func secondDatabaseHidesLegacyItem() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let legacy = ["service": "legacy.\(fixture.appID)", "username": "udid"]
        try storeLegacyItem(legacy, value: "legacy-in-the-first-database")
        defer { _ = try? Keyring.default.delete(legacy) }
        try keyringCtl("second-db")
        defer { _ = try? keyringCtl("restart") }  // a restart opens only the first database, unlocked
        let lock = try run(repoRoot.appendingPathComponent("scripts/keyring-ctl").path, ["lock", "keyring"])
        try #require(lock.status == 0, "keyring-ctl lock keyring failed: \(lock.stderr)")
        #expect(Keyring.default.status().isLocked == false, "the default alias follows the unlocked second database")
        guard case .locked = lockedRead(.keyringItem(legacy)) else {
            Issue.record("the hidden legacy item must read as locked")
            return
        }
        let resolver = try fixture.resolver(migrations: [.keyringItem(legacy)], keyring: Keyring(timeout: .seconds(5), unlock: .never))
        guard case .keyring(.locked) = identityError({ try resolver.resolve() }) else {
            Issue.record("resolve must fail as locked")
            return
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.backupPath), "no backup may hold a new identifier")
    }
}
