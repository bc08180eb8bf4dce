import Foundation
import Keyring
import Testing
import TestSupport

/// A locked keyring is never reported as empty. Each test locks the shared daemon and restarts
/// it unlocked in a defer, even when an expectation fails. The handles never prompt
/// (`unlock: .never`): unlocking on demand is UnlockPromptTests' subject.
@Suite("Locked is not absent", .needs(.locking))
struct LockedKeyringTests {
    @Test("locked keyring reports locked, never nil; nothing is written or deleted; the value survives")
    func lockedKeyringReportsLocked() throws {
        try requireTestKeyring()
        let id = uniqueID("locked")
        let secret = uniqueSecret()
        let keyring = Keyring(unlock: .never)
        let store = try SecretStore(identifier: id, keyring: keyring)
        let unknown = try SecretStore(identifier: uniqueID("locked-unknown"), keyring: keyring)
        try store.setObject(secret, forKey: .valueData)
        try store.setObject("alice", forKey: .account)

        // Restart even when locking itself fails half-way, so later tests find a usable keyring.
        defer { restartKeyring() }
        try lockKeyring()
        // KeePassXC hides a locked database's items, so it cannot tell that the item exists.
        let exists = TestProvider.listsLockedItems

        #expect(keyringError { try store.object(forKey: .valueData) } == .locked(itemExists: exists))
        #expect(keyringError { try store.data(forKey: .valueData) } == .locked(itemExists: exists))
        #expect(keyringError { try store.object(forKey: .account) } == .locked(itemExists: exists))
        // An item that is not there: gnome-keyring and KWallet list a locked collection's matches,
        // so none at all proves it absent; KeePassXC hides them, so there it is locked.
        if exists {
            #expect(try unknown.object(forKey: .valueData) == nil)
            #expect(try unknown.object(forKey: .account) == nil)
        } else {
            #expect(keyringError { try unknown.object(forKey: .valueData) } == .locked(itemExists: false))
            #expect(keyringError { try unknown.object(forKey: .account) } == .locked(itemExists: false))
        }

        let writeError = keyringError { try store.setObject("overwrite", forKey: .valueData) }
        #expect(writeError?.isLocked == true, "\(String(describing: writeError))")
        let newError = keyringError { try unknown.setObject("new", forKey: .valueData) }
        #expect(newError?.isLocked == true, "\(String(describing: newError))")
        #expect(keyringError { try store.reset() } == .locked(itemExists: exists))
        expectNoSecret(writeError, secret)

        let status = Keyring.default.status()
        #expect(status.isReachable)
        #expect(status.hasDefaultCollection)
        #expect(status.isLocked)
        #expect(status.problem == .locked(itemExists: false))

        // Lower-level Keyring: search still lists the item, marked locked; KeePassXC hides it, and
        // its empty search is `.locked`, never "no items". Lookup throws.
        if exists {
            let found = try keyring.search(["service": id])
            #expect(found.count == 1)
            #expect(found.first?.isLocked == true)
        } else {
            #expect(keyringError { try keyring.search(["service": id]) } == .locked(itemExists: false))
        }
        #expect(keyringError { try keyring.lookup(["service": id]) } == .locked(itemExists: exists))
        if exists {
            #expect(try keyring.lookup(["service": unknown.identifier]) == nil)
        } else {
            #expect(keyringError { try keyring.lookup(["service": unknown.identifier]) } == .locked(itemExists: false))
        }
        #expect(keyringError { try keyring.delete(["service": id]) } == .locked(itemExists: exists))

        try keyringCtl("restart")
        #expect(Keyring.default.status().isLocked == false)
        #expect(try store.object(forKey: .valueData) == secret)
        #expect(try store.object(forKey: .account) == "alice")
        #expect(try unknown.object(forKey: .valueData) == nil)
        #expect(try items(service: id).count == 1)
        try store.reset()
    }

    @Test("async reads of a locked keyring throw locked too")
    func asyncLocked() async throws {
        try requireTestKeyring()
        let store = try SecretStore(identifier: uniqueID("locked-async"), keyring: Keyring(unlock: .never))
        try await store.setObject("v", forKey: .valueData)
        // Restart even when locking itself fails half-way, so later tests find a usable keyring.
        defer { restartKeyring() }
        try lockKeyring()
        let exists = TestProvider.listsLockedItems  // false on KeePassXC, which hides locked items
        #expect(await keyringError { try await store.object(forKey: .valueData) } == .locked(itemExists: exists))
        #expect(await keyringError { try await store.data(forKey: .valueData) } == .locked(itemExists: exists))
        #expect(await keyringError { try await store.reset() } == .locked(itemExists: exists))
        #expect(await keyringError { try await Keyring(unlock: .never).lookup(["service": store.identifier]) } == .locked(itemExists: exists))
        #expect(await Keyring.default.status().isLocked)
    }
}
