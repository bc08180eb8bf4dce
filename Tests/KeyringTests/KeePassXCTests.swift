// KeePassXC's own behaviour: a locked database hides its items from every search, several
// databases are several collections (the default alias follows the active one), and with
// UnlockBeforeSearch=true a search waits on an unlock dialog. Runs only under scripts/with-keepassxc.
import Foundation
import Keyring
import Testing
import TestSupport

@Suite(
    "KeePassXC: hidden items of locked databases are locked, never absent", .serialized,
    .enabled(if: TestProvider.isKeePassXC, "KeePassXC-only behaviour; run under scripts/with-keepassxc"))
struct KeePassXCTests {
    @Test("a locked database's item reads, deletes and resets as locked; nothing changes; it is back after unlock")
    func lockedDatabaseHidesItems() throws {
        try requireTestKeyring()
        let id = uniqueID("kpx-locked")
        // .never: the locked path itself (asking opens KeePassXC's own window; see below).
        let never = Keyring(unlock: .never)
        let store = try SecretStore(identifier: id, keyring: never)
        let attributes = ["service": id, "username": ""]
        try store.setObject("kept", forKey: .valueData)
        try keyringCtl(["lock"])
        defer { _ = try? keyringCtl(["unlock"]) }
        // Searches find nothing while the database is locked: that is `.locked`, never "no items".
        #expect(keyringError { try never.search(attributes) } == .locked(itemExists: false))
        #expect(keyringError { try store.object(forKey: .valueData) } == .locked(itemExists: false))
        #expect(keyringError { try never.lookup(attributes) } == .locked(itemExists: false))
        #expect(keyringError { try never.delete(attributes) } == .locked(itemExists: false))
        #expect(keyringError { try store.reset() } == .locked(itemExists: false))
        // Allowed to ask, the call opens KeePassXC's unlock window, which nobody answers here: it
        // ends at its timeout as locked, unanswered.
        #expect(keyringError { try Keyring(timeout: .seconds(10)).lookup(attributes) } == .locked(itemExists: false, unlock: .unanswered))
        try keyringCtl(["unlock"])
        #expect(try store.object(forKey: .valueData) == "kept")
        try store.reset()
    }

    @Test("two databases: the item's one locked, the other active and unlocked: locked, never absent")
    func secondDatabaseActive() throws {
        try requireTestKeyring()
        let id = uniqueID("kpx-two")
        let store = try SecretStore(identifier: id)
        try store.setObject("in the first", forKey: .valueData)
        try keyringCtl(["second-db"])
        // A restart opens only the first database again, unlocked and default.
        defer { _ = try? keyringCtl(["restart"]) }
        try keyringCtl(["lock", "keyring"])
        let status = Keyring.default.status()
        #expect(status.hasDefaultCollection && !status.isLocked, "the default alias follows the open second database")
        #expect(status.collections.filter(\.isLocked).count == 1 && status.collections.count == 2, "\(status.collections)")
        let never = Keyring(unlock: .never)
        let neverStore = try SecretStore(identifier: id, keyring: never)
        #expect(keyringError { try neverStore.object(forKey: .valueData) } == .locked(itemExists: false))
        #expect(keyringError { try neverStore.reset() } == .locked(itemExists: false))
        #expect(keyringError { try never.delete(["service": id]) } == .locked(itemExists: false))
        #expect(keyringError { try never.readAll(["service": id]) } == .locked(itemExists: false))
        #expect(keyringError { try never.search(["service": id]) } == .locked(itemExists: false))
        // Allowed to ask, the unlock is asked of the locked first database, not of the open default
        // (which answered at once and changed nothing before): its window, unanswered here.
        let asking = try SecretStore(identifier: id, keyring: Keyring(timeout: .seconds(10)))
        #expect(keyringError { try asking.object(forKey: .valueData) } == .locked(itemExists: false, unlock: .unanswered))
        try keyringCtl(["unlock", "keyring"])
        #expect(try store.object(forKey: .valueData) == "in the first")
        try store.reset()
    }

    @Test("two databases, one locked: secret(of:) of an item deleted from the open one is nil, not locked")
    func secretOfDeletedItemBesideALockedDatabase() throws {
        try requireTestKeyring()
        try keyringCtl(["second-db"])
        defer { _ = try? keyringCtl(["restart"]) }
        let keyring = Keyring(unlock: .never)
        let id = uniqueID("kpx-two-deleted")
        try keyring.store(Data("v".utf8), attributes: ["service": id], label: id, contentType: "application/octet-stream")
        let item = try #require(try keyring.search(["service": id]).first)
        try keyringCtl(["lock", "keyring"])
        #expect(try keyring.delete(["service": id]) == 1)
        // Its own database (the second, open) no longer has it: deleted, whatever else is locked.
        #expect(try keyring.secret(of: item) == nil)
    }

    @Test("two databases, the item's one locked: a write creates nothing in the active one, and no value is lost")
    func writeWhileTheItemsDatabaseIsLocked() throws {
        try requireTestKeyring()
        let id = uniqueID("kpx-two-write")
        let store = try SecretStore(identifier: id)
        try store.setObject("in the first", forKey: .valueData)
        try keyringCtl(["second-db"])
        defer { _ = try? keyringCtl(["restart"]) }
        try keyringCtl(["lock", "keyring"])
        // Before: exit 0 and a second item in the active database, which lost to the old one after the unlock.
        let never = try SecretStore(identifier: id, keyring: Keyring(unlock: .never))
        #expect(keyringError { try never.setObject("new", forKey: .valueData) } == .locked(itemExists: false))
        #expect(
            keyringError { try Keyring(unlock: .never).store(Data("new".utf8), attributes: ["service": id], label: id) }
                == .locked(itemExists: false))
        #expect(
            keyringError { try Keyring(unlock: .never).insertIfAbsent(Data("new".utf8), attributes: ["service": id], label: id) }
                == .locked(itemExists: false))
        try keyringCtl(["unlock", "keyring"])
        #expect(try items(service: id).count == 1, "nothing was created in the second database")
        #expect(try store.object(forKey: .valueData) == "in the first")
        try store.reset()
    }

    @Test("UnlockBeforeSearch=true: calls on a locked database say locked instead of waiting out the timeout")
    func unlockBeforeSearch() throws {
        try requireTestKeyring()
        try keyringCtl(["restart"], environment: ["KEEPASSXC_UNLOCK_BEFORE_SEARCH": "true"])
        defer { _ = try? keyringCtl(["restart"]) }
        let id = uniqueID("kpx-ubs")
        let attributes = ["service": id, "username": ""]
        let store = try SecretStore(identifier: id, keyring: Keyring(unlock: .never))
        try store.setObject("kept", forKey: .valueData)
        // The locked path itself; 10 s keeps back 2 s to ask which collections are locked, enough under load.
        let keyring = Keyring(timeout: .seconds(10), unlock: .never)
        let locked = try SecretStore(identifier: id, keyring: keyring)
        try keyringCtl(["lock"])
        // Each search waits on a dialog nobody answers; the library asks the collections instead.
        #expect(keyringError { try keyring.lookup(attributes) } == .locked(itemExists: false))
        #expect(keyringError { try locked.object(forKey: .valueData) } == .locked(itemExists: false))
        #expect(keyringError { try keyring.delete(attributes) } == .locked(itemExists: false))
        #expect(keyringError { try locked.reset() } == .locked(itemExists: false))
        let write = keyringError { try locked.setObject("new", forKey: .valueData) }
        #expect(write?.isLocked == true, "\(String(describing: write))")
        try keyringCtl(["unlock"])
        #expect(try store.object(forKey: .valueData) == "kept")
        try store.reset()
    }
}
