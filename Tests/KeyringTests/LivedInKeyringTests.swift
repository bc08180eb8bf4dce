// A keyring as years of desktop use leave it (scripts/with-keyring --lived-in): 500 other clients'
// items in login and 1,500 in the session collection, an old "Default keyring" with its own
// password left locked, and the default alias on a third keyring, "Work". Each fix here was red on
// the code before it: every miss read `.locked` (the old keyring is locked), and an unlock asked
// only for the default keyring, which was already open.
import Foundation
import Keyring
import Testing
import TestSupport

@Suite(
    "Lived-in keyring: a locked second keyring never blocks other items", .serialized,
    .enabled(if: TestProvider.isLivedIn && TestProvider.isGnomeKeyring, "needs scripts/with-keyring --lived-in (gnome-keyring)"))
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
        // Storing exactly that item's attributes updates it or fails: never a twin beside it.
        let exact = ["service": old.identifier, "username": ""]
        #expect(keyringError { try never.store(Data("twin".utf8), attributes: exact, label: "twin") } == .locked(itemExists: true))
        #expect(try never.search(["service": old.identifier]).count == 1, "no twin was created")
    }

    @Test("status lists every collection with its lock state, the default first")
    func statusListsCollections() throws {
        try requireTestKeyring()
        let collections = Keyring.default.status().collections
        #expect(collections.first == CollectionStatus(label: "Work", isLocked: false, isDefault: true), "\(collections)")
        #expect(collections.contains(CollectionStatus(label: TestProvider.livedInOldKeyring.label, isLocked: true, isDefault: false)))
        #expect(collections.contains(CollectionStatus(label: "Login", isLocked: false, isDefault: false)))
        #expect(collections.filter(\.isDefault).count == 1)
    }

    @Test("new items land in the collection the default alias names, whatever its name")
    func newItemsLandInTheDefaultAliasCollection() throws {
        try requireTestKeyring()
        let status = Keyring.default.status()
        #expect(status.defaultCollectionLabel == "Work" && !status.isLocked, "\(status)")
        let store = try SecretStore(identifier: uniqueID("lived-in-new"))
        try store.setObject("v", forKey: .valueData)
        defer { try? store.reset() }
        let found = try items(service: store.identifier)
        #expect(found.count == 1)
        #expect(found.first?.objectPath.hasPrefix("/org/freedesktop/secrets/collection/Work/") == true, "\(found)")
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

    @Test("an unlock asks for the keyring that holds the locked item, not the default one")
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
