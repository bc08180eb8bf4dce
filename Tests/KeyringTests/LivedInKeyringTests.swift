// A keyring as years of desktop use leave it (scripts/with-keyring --lived-in). gnome-keyring: 500
// other clients' items in login and 1,500 in the session collection, an old "Default keyring" with
// its own password left locked, and the default alias on a third keyring, "Work". KWallet: 300
// other clients' items, and a second wallet with its own password, closed. Each fix here was red on
// the code before it: every miss read `.locked` (the old keyring is locked), and an unlock asked
// only for the default keyring, which was already open. KeePassXC, which hides a locked database's
// items, and the file backend have suites of their own below.
import Foundation
import Keyring
import TestSupport
import Testing

@Suite(
    "Lived-in keyring: a locked second keyring never blocks other items", .serialized,
    .enabled(
        if: TestProvider.isLivedIn && !TestProvider.usesFileBackend && TestProvider.listsLockedItems,
        "needs scripts/with-keyring --lived-in on a provider that lists locked items (gnome-keyring, KWallet)"))
struct LivedInKeyringTests {
    @Test("a miss is absent, not locked, while an old keyring stays locked; its own item is locked")
    func missIsAbsentBesideALockedKeyring() throws {
        try requireTestKeyring()
        // As after a login: the old keyring loaded locked from disk, its items' attributes hashed.
        try keyringCtl("restart")
        let never = Keyring(unlock: .never)
        let unknown = try SecretStore(identifier: uniqueID("lived-in-unknown"), keyring: never)
        #expect(try unknown.object(forKey: .valueData) == nil)
        #expect(try unknown.object(forKey: .account) == nil)
        #expect(try never.lookup(["service": unknown.identifier]) == nil)
        #expect(try never.readAll(["service": unknown.identifier]).isEmpty)
        #expect(try never.delete(["service": unknown.identifier]) == 0)
        try unknown.reset()
        #expect(try SecretStore.items(identifier: unknown.identifier, keyring: never).isEmpty)

        // The old keyring's item is listed, locked, and reads as locked, never absent or empty.
        let old = try SecretStore(identifier: TestProvider.livedInOldItem.identifier, keyring: never)
        #expect(keyringError { try old.object(forKey: .valueData) } == .locked(itemExists: true))
        #expect(keyringError { try old.setObject("overwrite", forKey: .valueData) } == .locked(itemExists: true))
        #expect(keyringError { try old.reset() } == .locked(itemExists: true))
        #expect(try never.search(["service": old.identifier]).map(\.isLocked) == [true])
        if TestProvider.isGnomeKeyring {
            // Its attributes read hashed: a listing cannot say whose it is.
            #expect(keyringError { try SecretStore.items(identifier: old.identifier, keyring: never) } == .locked(itemExists: true))
        } else {
            let listed = try SecretStore.items(identifier: old.identifier, keyring: never)
            #expect(listed.map(\.identifier) == [old.identifier] && listed.allSatisfy(\.isLocked), "\(listed)")
        }
        // Storing exactly that item's attributes updates it or fails: never a twin beside it.
        let exact = ["service": old.identifier, "username": ""]
        #expect(keyringError { try never.store(Data("twin".utf8), attributes: exact, label: "twin") } == .locked(itemExists: true))
        #expect(try never.search(["service": old.identifier]).count == 1, "no twin was created")
    }

    @Test("status lists every collection with its lock state, the default first")
    func statusListsCollections() throws {
        try requireTestKeyring()
        let collections = Keyring.default.status().collections
        #expect(
            collections.first == CollectionStatus(label: TestProvider.livedInDefaultKeyring, isLocked: false, isDefault: true),
            "\(collections)")
        #expect(collections.contains(CollectionStatus(label: TestProvider.livedInOldKeyring.label, isLocked: true, isDefault: false)))
        if let other = TestProvider.livedInOtherUnlockedKeyring {
            #expect(collections.contains(CollectionStatus(label: other, isLocked: false, isDefault: false)))
        }
        #expect(collections.count == TestProvider.livedInCollectionCount, "\(collections)")
        #expect(collections.filter(\.isDefault).count == 1)
    }

    @Test("new items land in the collection the default alias names, whatever its name")
    func newItemsLandInTheDefaultAliasCollection() throws {
        try requireTestKeyring()
        let status = Keyring.default.status()
        #expect(status.defaultCollectionLabel == TestProvider.livedInDefaultKeyring && !status.isLocked, "\(status)")
        let store = try SecretStore(identifier: uniqueID("lived-in-new"))
        try store.setObject("v", forKey: .valueData)
        defer { try? store.reset() }
        let found = try items(service: store.identifier)
        #expect(found.count == 1)
        let collection = "/org/freedesktop/secrets/collection/\(TestProvider.livedInDefaultKeyring)/"
        #expect(found.first?.objectPath.hasPrefix(collection) == true, "\(found)")
        #expect(try store.object(forKey: .valueData) == "v")
    }

    @Test("secret(of:) of an item deleted since its search is nil, not locked")
    func secretOfDeletedItemIsNil() throws {
        try requireTestKeyring()
        let keyring = Keyring(unlock: .never)
        let id = uniqueID("lived-in-deleted")
        try keyring.store(Data("v".utf8), attributes: ["service": id], label: id)
        let item = try #require(try keyring.search(["service": id]).first)
        #expect(try keyring.delete(["service": id]) == 1)
        #expect(try keyring.secret(of: item) == nil)
        try keyring.delete(item: item)
    }

    @Test(
        "an unlock asks for the keyring that holds the locked item, not the default one",
        .needs(.mockPrompter))
    func unlockAsksForTheItemsKeyring() throws {
        try requireTestKeyring()
        try withMockPrompter {
            let old = try SecretStore(identifier: TestProvider.livedInOldItem.identifier)
            let path = try #require(try Keyring.default.search(["service": old.identifier]).first?.objectPath)
            let collection = String(path[..<path.lastIndex(of: "/")!])
            // Locked again afterwards, as the fixture has it, for the tests after this one, even when an expectation fails.
            defer {
                _ = try? mustRun(
                    "/usr/bin/dbus-send",
                    [
                        "--session", "--print-reply", "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets",
                        "org.freedesktop.Secret.Service.Lock", "array:objpath:\(collection)",
                    ])
            }
            try keyringCtl(["prompt-answer", "ok", TestProvider.livedInOldKeyring.password])
            #expect(try old.object(forKey: .valueData) == TestProvider.livedInOldItem.value)
            #expect(try promptStatus() == (false, 0), "the one queued answer was used, and no other prompt came")
        }
    }
}

// KeePassXC as a user with several databases has it (scripts/with-keepassxc --lived-in): "old"
// opened first and locked, "other" with 300 other clients' items, and "keyring", opened last, the
// active one. KeePassXC hides a locked database's items, so any miss may be an item of "old": it is
// locked, never absent, and a write creates nothing, until "old" is unlocked.
@Suite(
    "Lived-in KeePassXC: three databases, the first locked, the active one last", .serialized,
    .enabled(if: TestProvider.isLivedIn && TestProvider.isKeePassXC, "needs scripts/with-keepassxc --lived-in"))
struct LivedInKeePassXCTests {
    /// Runs `body` with "old" unlocked, and locks it again afterwards, as the fixture has it.
    func withOldDatabaseUnlocked(_ body: () throws -> Void) throws {
        try keyringCtl(["unlock", "old"])
        defer {
            do { try keyringCtl(["lock", "old"]) } catch { Issue.record("could not lock the old database again: \(error)") }
        }
        try body()
    }

    @Test("status lists the three databases, the active one as the default, the old one locked")
    func statusListsDatabases() throws {
        try requireTestKeyring()
        let collections = Keyring.default.status().collections
        #expect(collections.first == CollectionStatus(label: "keyring", isLocked: false, isDefault: true), "\(collections)")
        #expect(collections.contains(CollectionStatus(label: "old", isLocked: true, isDefault: false)), "\(collections)")
        #expect(collections.contains(CollectionStatus(label: "other", isLocked: false, isDefault: false)), "\(collections)")
        #expect(collections.count == 3)
    }

    @Test("a miss is locked, never absent, and a write creates nothing, while the old database is locked")
    func missIsLockedAndWritesCreateNothing() throws {
        try requireTestKeyring()
        let never = Keyring(unlock: .never)
        let store = try SecretStore(identifier: uniqueID("lived-in-kpx"), keyring: never)
        #expect(keyringError { try store.object(forKey: .valueData) } == .locked(itemExists: false))
        #expect(keyringError { try never.search(["service": store.identifier]) } == .locked(itemExists: false))
        #expect(keyringError { try store.setObject("new", forKey: .valueData) } == .locked(itemExists: false))
        // The old database's own item is as hidden as an absent one.
        let old = try SecretStore(identifier: TestProvider.livedInOldItem.identifier, keyring: never)
        #expect(keyringError { try old.object(forKey: .valueData) } == .locked(itemExists: false))
        #expect(keyringError { try old.setObject("overwrite", forKey: .valueData) } == .locked(itemExists: false))
        try withOldDatabaseUnlocked { () throws in
            #expect(try items(service: store.identifier).isEmpty, "the refused write created no item in any database")
            let found = try items(service: old.identifier)
            #expect(found.count == 1, "the old item got no twin in the active database: \(found), \(Keyring.default.status().collections)")
            #expect(try old.object(forKey: .valueData) == TestProvider.livedInOldItem.value, "the old item was not overwritten")
        }
    }

    @Test("another database's items are found and read while the old one stays locked")
    func otherDatabasesItemsAreRead() throws {
        try requireTestKeyring()
        // lived-in.py's item 3 in "other": python-keyring's shape, for service python-keyring-app-3.
        let attributes = ["service": "python-keyring-app-3", "username": "user3"]
        let found = try Keyring(unlock: .never).search(attributes)
        #expect(found.map(\.objectPath).allSatisfy { $0.hasPrefix("/org/freedesktop/secrets/collection/other/") }, "\(found)")
        #expect(found.count == 1)
        #expect(try Keyring(unlock: .never).lookup(attributes) == Data("secret-3".utf8))
    }

    @Test("once the old database is unlocked, misses are absent and new items land in the active database")
    func unlockedOldDatabase() throws {
        try requireTestKeyring()
        try withOldDatabaseUnlocked { () throws in
            let store = try SecretStore(identifier: uniqueID("lived-in-kpx-new"), keyring: Keyring(unlock: .never))
            #expect(try store.object(forKey: .valueData) == nil)
            try store.setObject("v", forKey: .valueData)
            defer { try? store.reset() }
            let found = try items(service: store.identifier)
            #expect(found.map(\.objectPath).allSatisfy { $0.hasPrefix("/org/freedesktop/secrets/collection/keyring/") }, "\(found)")
            #expect(found.count == 1)
            #expect(try store.object(forKey: .valueData) == "v")
        }
    }
}

// libsecret's file backend on a keyring file with 2,000 other clients' items (scripts/test fills it
// with scripts/providers/lived-in.py fill-file before the lived-in file run).
@Suite(
    "Lived-in keyring file: 2,000 other items", .serialized,
    .enabled(if: TestProvider.isLivedIn && TestProvider.usesFileBackend, "needs scripts/test's lived-in keyring file"))
struct LivedInFileKeyringTests {
    @Test("a miss is absent, a new item round-trips, and a reset removes it and nothing else")
    func roundTripAmongOthers() throws {
        try requireTestKeyring()
        let others = ["service": "python-keyring-app-3"]
        let before = try Keyring.default.search(others)
        #expect(before.count == 17, "lived-in.py's items n < 2,000 with n % 120 == 3")
        let store = try SecretStore(identifier: uniqueID("lived-in-file"))
        #expect(try store.object(forKey: .valueData) == nil)
        try store.setObject("v", forKey: .valueData)
        #expect(try store.object(forKey: .valueData) == "v")
        try store.reset()
        #expect(try store.object(forKey: .valueData) == nil)
        #expect(try Keyring.default.search(others).count == before.count)
        #expect(try Keyring.default.lookup(["service": "python-keyring-app-3", "username": "user3"]) == Data("secret-3".utf8))
    }
}
