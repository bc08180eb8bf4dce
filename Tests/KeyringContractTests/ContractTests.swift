// The behaviour apps rely on, the same test against the in-memory keyring (KeyringTesting) and the
// real provider of the harness. Where the memory keyring or a provider differs, the test says so.
import DeviceIdentity
import Foundation
import Keyring
import KeyringTesting
import TestSupport
import Testing

@Suite("The keyring contract: the memory keyring and every real provider", .serialized)
struct ContractTests {
    @Test("SecretStore: a value round-trips byte for byte, one item per wrapper, reset removes it", arguments: Backend.available)
    func roundTrip(backend: Backend) throws {
        let subject = try Subject(backend)
        let id = uniqueID("round-trip")
        let store = try subject.store(id)
        defer { try? store.reset() }
        #expect(try store.object(forKey: .valueData) == nil)
        try store.setObject("first", forKey: .valueData)
        try store.setObject("second", forKey: .valueData)
        try store.setObject("alice", forKey: .account)
        try store.setObject("Token", forKey: .label)
        let bytes = Data([0, 255, 1, 0x7B, 0x7D, 0])
        try store.setData(bytes, forKey: .valueData)
        #expect(try store.data(forKey: .valueData) == bytes)
        #expect(try store.object(forKey: .account) == "alice")
        #expect(try store.object(forKey: .label) == "Token")
        #expect(try subject.keyring().search(["service": id]).count == 1, "one item per wrapper")
        try store.reset()
        #expect(try store.object(forKey: .valueData) == nil)
        try store.reset()
        #expect(try subject.keyring().search(["service": id]).isEmpty)
    }

    @Test("an access group is its own item beside the ungrouped one", arguments: Backend.available)
    func accessGroups(backend: Backend) throws {
        let subject = try Subject(backend)
        let id = uniqueID("group")
        let plain = try subject.store(id)
        let grouped = try subject.store(id, group: "team")
        defer {
            try? plain.reset()
            try? grouped.reset()
        }
        try plain.setObject("plain", forKey: .valueData)
        try grouped.setObject("grouped", forKey: .valueData)
        #expect(try plain.object(forKey: .valueData) == "plain")
        #expect(try grouped.object(forKey: .valueData) == "grouped")
        try grouped.reset()
        #expect(try plain.object(forKey: .valueData) == "plain")
    }

    @Test("twins: every reader picks the one ItemOrder puts first, and readAll lists both in that order", arguments: Backend.available)
    func twins(backend: Backend) throws {
        let subject = try Subject(backend)
        let keyring = subject.keyring()
        let id = uniqueID("twins")
        defer { _ = try? keyring.delete(["service": id]) }
        try keyring.store(Data("older".utf8), attributes: ["service": id, "username": ""], label: "one")
        try keyring.store(Data("younger".utf8), attributes: ["service": id, "username": "bob"], label: "two")
        let all = try keyring.readAll(["service": id])
        #expect(all.count == 2)
        let first = try #require(ItemOrder.standard.sorted(all.map(\.item)).first)
        #expect(all.first?.item == first, "readAll is in ItemOrder")
        let expected = all.first?.secret
        #expect(try keyring.lookup(["service": id]) == expected)
        #expect(try keyring.firstItem(["service": id])?.secret == expected)
        #expect(try subject.store(id).data(forKey: .valueData) == expected)
        // Within one second the order falls to object paths: gnome-keyring, KWallet and the memory
        // keyring number items in creation order; KeePassXC's are UUIDs and the file backend's digests.
        if subject.isMemory || Backend.realName == "gnome-keyring" { #expect(expected == Data("older".utf8)) }
    }

    @Test("insertIfAbsent: creates once, then hands back the existing item unchanged", arguments: Backend.available)
    func insertIfAbsent(backend: Backend) throws {
        let subject = try Subject(backend)
        let keyring = subject.keyring()
        let id = uniqueID("insert")
        defer { _ = try? keyring.delete(["service": id]) }
        #expect(try keyring.insertIfAbsent(Data("a".utf8), attributes: ["service": id], label: "x") == .inserted)
        guard case .existing(_, let secret) = try keyring.insertIfAbsent(Data("b".utf8), attributes: ["service": id], label: "x") else {
            Issue.record("a second insert did not find the first")
            return
        }
        #expect(secret == Data("a".utf8))
        #expect(try keyring.lookup(["service": id]) == Data("a".utf8))
    }

    @Test(
        "a locked item is never absent: reads, writes and resets throw .locked; a miss is absent only where locked items are listed",
        arguments: Backend.lockable)
    func lockedIsNeverAbsent(backend: Backend) throws {
        let subject = try Subject(backend)
        let id = uniqueID("locked")
        let store = try subject.store(id, unlock: .never)
        let unknown = try subject.store(uniqueID("locked-unknown"), unlock: .never)
        try store.setObject("kept", forKey: .valueData)
        try subject.lock()
        defer {
            try? subject.unlock()
            try? store.reset()
        }
        let exists = subject.listsLockedItems
        #expect(throws: KeyringError.locked(itemExists: exists)) { try store.object(forKey: .valueData) }
        // Where locked items are listed (gnome-keyring, KWallet), a search without a match proves
        // absence; where they hide (KeePassXC), a miss is locked. Creating is refused either way.
        if exists {
            #expect(try unknown.object(forKey: .valueData) == nil)
        } else {
            #expect(throws: KeyringError.locked(itemExists: false)) { try unknown.object(forKey: .valueData) }
        }
        #expect(throws: KeyringError.locked(itemExists: false)) { try unknown.setObject("new", forKey: .valueData) }
        #expect(throws: KeyringError.locked(itemExists: exists)) { try store.setObject("overwrite", forKey: .valueData) }
        #expect(throws: KeyringError.locked(itemExists: exists)) { try store.reset() }
        #expect(throws: KeyringError.locked(itemExists: exists)) { try subject.keyring(unlock: .never).lookup(["service": id]) }
        // KeePassXC hides a locked database's items, so its search is `.locked`, never empty;
        // gnome-keyring, KWallet and the memory keyring list them, locked.
        if exists {
            let found = try subject.keyring().search(["service": id])
            #expect(found.count == 1 && found.allSatisfy(\.isLocked))
        } else {
            #expect(throws: KeyringError.locked(itemExists: false)) { try subject.keyring().search(["service": id]) }
        }
        // Listing is never "no items" for a locked keyring: the item marked locked, or `.locked`.
        if exists {
            #expect(try SecretStore.items(identifier: id, keyring: subject.keyring(unlock: .never)).map(\.isLocked) == [true])
        } else {
            #expect(throws: KeyringError.locked(itemExists: false)) {
                try SecretStore.items(identifier: id, keyring: subject.keyring(unlock: .never))
            }
        }
        #expect(subject.keyring().status().isLocked)
        try subject.unlock()
        #expect(try store.object(forKey: .valueData) == "kept")
        #expect(try subject.keyring().search(["service": id]).count == 1, "a write while locked made no twin")
    }

    @Test(
        "an item found before a restart is that item after it, never another, found unlocked or locked: read and deleted",
        arguments: Backend.renumbering)
    func itemAcrossRestart(backend: Backend) throws {
        let subject = try Subject(backend)
        let keyring = subject.keyring(unlock: .never)
        let id = uniqueID("handle")
        defer { _ = try? keyring.delete(["service": id]) }
        // Where the lock shows attributes, an item found while locked must hold too (KWallet, issue 50).
        for locked in subject.canLock && subject.listsLockedItems ? [false, true] : [false] {
            _ = try keyring.delete(["service": id])
            for n in 0..<4 { try keyring.store(Data("value \(n)".utf8), attributes: ["service": id, "n": "\(n)"], label: "n\(n)") }
            #expect(try keyring.delete(["service": id, "n": "1"]) == 1)
            if locked { try subject.lock() }
            let found = try keyring.search(["service": id, "n": "2"])
            try #require(found.count == 1 && found[0].isLocked == locked)
            // KWallet and oo7-daemon number their paths 1 to n again: n=2's old path is n=3's now.
            try subject.restart()
            if locked { try subject.unlock() }
            #expect(try keyring.secret(of: found[0]) == Data("value 2".utf8), "locked: \(locked)")
            try keyring.delete(item: found[0])
            let left = try keyring.readAll(["service": id]).map { String(decoding: $0.secret, as: UTF8.self) }
            #expect(left.sorted() == ["value 0", "value 3"], "locked: \(locked): the item found was deleted, and nothing else")
        }
    }

    @Test("unlock prompt outcomes: answered unlocks, dismissed and unanswered are .locked with the outcome", arguments: Backend.promptable)
    func unlockOutcomes(backend: Backend) throws {
        let subject = try Subject(backend)
        try subject.withPrompts {
            let id = uniqueID("prompt")
            let store = try subject.store(id)
            // The memory keyring fails an unanswered prompt at once; a real one at the call's timeout,
            // 10 s: the prompt must reach the prompter first, under any load.
            let unanswered = try SecretStore(identifier: id, keyring: subject.keyring(timeout: .seconds(10)))
            try store.setObject("kept", forKey: .valueData)
            defer { try? store.reset() }

            try subject.lock()
            try subject.answer(.dismiss)
            #expect(throws: KeyringError.locked(itemExists: subject.listsLockedItems, unlock: .dismissed)) {
                try store.object(forKey: .valueData)
            }
            try subject.answer(.ignore)
            #expect(throws: KeyringError.locked(itemExists: subject.listsLockedItems, unlock: .unanswered)) {
                try unanswered.object(forKey: .valueData)
            }
            if !subject.isMemory {
                // The answered prompt starts from a freshly locked keyring, not after the unanswered one.
                try subject.unlock()
                try subject.lock()
            }
            try subject.answer(.unlock)
            #expect(try store.object(forKey: .valueData) == "kept")
            #expect(subject.keyring().status().isLocked == false)
        }
    }

    @Test(
        "changes(): an item created, changed and deleted is reported; on the memory keyring a lock and unlock too, and nothing touches the user's files",
        arguments: [.memoryHiding] + Backend.available)
    func changes(backend: Backend) async throws {
        let subject = try Subject(backend)
        // The memory keyring once watched libsecret's real keyring file under HOME, and made its directory.
        let userKeyrings = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share/keyrings").path
        let userKeyringsExisted = FileManager.default.fileExists(atPath: userKeyrings)
        let store = try subject.store(uniqueID("changes"))
        let log = ChangeLog(try await store.changes())
        defer { log.stop() }
        let start = ContinuousClock.now
        try await store.setObject("one", forKey: .valueData)
        #expect(await log.first(.created, from: 0, since: start) != nil, "\(log.kinds)")
        var seen = log.count
        try await store.setObject("two", forKey: .valueData)
        if subject.keepsItemChanges {
            #expect(await log.first(.changed, from: seen, since: start) != nil, "\(log.kinds)")
        } else {
            // oo7-daemon: the update replaces the item (a new path), reported as such.
            #expect(await log.first(.created, from: seen, since: start) != nil, "\(log.kinds)")
            #expect(Array(log.kinds.dropFirst(seen).prefix(2)) == [.deleted, .created], "\(log.kinds)")
        }
        if let memory = subject.memory {
            seen = log.count
            try subject.lock()
            #expect(await log.first(.locked, from: seen, since: start) != nil, "\(log.kinds)")
            try subject.unlock()
            #expect(await log.first(.unlocked, from: seen, since: start) != nil, "\(log.kinds)")
            // A restart stamps the schema, which is no change; the watch's looks meet no injected fault.
            try subject.restart()
            memory.inject(.timeout, times: 1)
            #expect(throws: KeyringError.timedOut(seconds: 25)) { try store.object(forKey: .valueData) }
            try await store.setObject("three", forKey: .valueData)
            #expect(await log.first(anyOf: [.changed, .created], from: seen, since: start) != nil, "\(log.kinds)")
            let kinds = Array(log.kinds.dropFirst(seen))
            // Where an update replaces the item (oo7-daemon), a look that also saw the restart's new
            // paths finds it moved (changed); one after it, a new path (deleted, created).
            let updates: [[KeyringChange.Kind]] = subject.keepsItemChanges ? [[.changed]] : [[.changed], [.deleted, .created]]
            #expect(
                kinds.prefix(2) == [.locked, .unlocked] && updates.contains(Array(kinds.dropFirst(2))),
                "hidden is not deleted, a restart is no change: \(kinds)")
            #expect(
                FileManager.default.fileExists(atPath: userKeyrings) == userKeyringsExisted, "the user's keyring directory is untouched")
        }
        seen = log.count
        try await store.reset()
        #expect(await log.first(.deleted, from: seen, since: start) != nil, "\(log.kinds)")
    }

    @Test(
        "a fault is the same typed error on the memory keyring as on the real provider, and clears: a hung daemon, no session bus",
        arguments: Backend.available)
    func faults(backend: Backend) throws {
        let subject = try Subject(backend)
        let id = uniqueID("fault")
        let store = try subject.store(id)
        // The short timeout is only for the call under the fault: the calls around it must succeed under any load.
        let faulted = try SecretStore(identifier: id, keyring: subject.keyring(timeout: .seconds(2)))
        defer { try? store.reset() }
        try store.setObject("kept", forKey: .valueData)
        for fault in subject.faults where fault == .timeout || fault == .noSessionBus {
            let error = try subject.withFault(fault) { keyringError { try faulted.object(forKey: .valueData) } }
            switch (fault, error) {
            case (.timeout, .timedOut(let seconds)?): #expect(seconds == 2)
            case (.noSessionBus, .noSessionBus?): break
            default: Issue.record("\(fault) gave \(String(describing: error))")
            }
            #expect(try store.object(forKey: .valueData) == "kept", "after \(fault)")
        }
    }

    @Test("a daemon restart between two calls: items survive, the wrapper still updates its one item", arguments: Backend.available)
    func restartBetweenCalls(backend: Backend) throws {
        let subject = try Subject(backend)
        let id = uniqueID("restart")
        let store = try subject.store(id)
        defer { try? store.reset() }
        try store.setObject("before", forKey: .valueData)
        #expect(try store.object(forKey: .valueData) == "before")
        try subject.restart()
        #expect(try store.object(forKey: .valueData) == "before")
        try store.setObject("after", forKey: .valueData)
        #expect(try store.object(forKey: .valueData) == "after")
        #expect(try subject.keyring().search(["service": id]).count == 1)
    }

    @Test(
        "IdentifierResolver: one identifier across calls and a restart; a locked keyring never yields a new one",
        arguments: Backend.available)
    func resolver(backend: Backend) throws {
        let subject = try Subject(backend)
        let backup = FileManager.default.temporaryDirectory.appendingPathComponent("contract-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: backup) }
        let app = "contract.app.\(UUID().uuidString)"
        let resolver = try IdentifierResolver(scope: .app(app), keyring: subject.keyring(unlock: .never), backup: .directory(backup.path))
        let first = try resolver.identifier()
        // refresh(): identifier() serves its in-process copy after the first call.
        #expect(try resolver.refresh().value == first)
        try subject.restart()
        #expect(try resolver.refresh().value == first)
        let other = try IdentifierResolver(
            scope: .app(app + ".other"), keyring: subject.keyring(unlock: .never), backup: .none)
        if subject.canLock {
            try subject.lock()
            defer { try? subject.unlock() }
            #expect(throws: IdentityError.self) { try other.identifier() }
            #expect(try resolver.refresh().value == first, "the backup serves while locked")
        }
        try resolver.reset()
        try other.reset()
    }

    @Test(
        "migration: a legacy keyring item is adopted byte for byte and removed; a locked keyring hiding it mints nothing",
        arguments: [.memoryHiding] + Backend.available)
    func migrationFromKeyringItem(backend: Backend) throws {
        let subject = try Subject(backend)
        let keyring = subject.keyring(unlock: .never)
        let legacy = ["service": uniqueID("legacy"), "username": "udid"]
        let value = "  0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0\n"
        let app = "contract.migrate.\(UUID().uuidString)"
        let resolver = try IdentifierResolver(
            scope: .app(app), migrations: [.keyringItem(legacy, removeAfterMigration: true)], keyring: keyring, backup: .none)
        try keyring.store(Data(value.utf8), attributes: legacy, label: "legacy")
        defer { try? resolver.reset() }
        if subject.canLock {
            try subject.lock()
            #expect(throws: IdentityError.self, "a locked legacy item is never absent") { try resolver.identifier() }
            try subject.unlock()
        }
        #expect(try resolver.identifier() == "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0")
        #expect(try keyring.lookup(legacy) == nil, "removed after the verified migration")
    }

    @Test(
        "identifier twins: the one first made wins, whatever the order they were stored in, and the other is cleaned up",
        arguments: Backend.available)
    func identifierTwins(backend: Backend) throws {
        let subject = try Subject(backend)
        let keyring = subject.keyring()
        let app = "contract.twins.\(UUID().uuidString)"
        let scope = ["identity-scope": "app", "identity-name": app]
        let younger = "22222222-2222-4222-8222-222222222222"
        let older = "11111111-1111-4111-8111-111111111111"
        defer { _ = try? keyring.delete(scope) }
        try keyring.store(Data(younger.utf8), attributes: scope.merging(["identity-created": "2000000000.000"]) { $1 }, label: "young")
        try keyring.store(Data(older.utf8), attributes: scope.merging(["identity-created": "1000000000.000"]) { $1 }, label: "old")
        let resolver = try IdentifierResolver(scope: .app(app), keyring: keyring, backup: .none)
        #expect(try resolver.identifier() == older)
        #expect(try resolver.refresh().value == older)
        #expect(try keyring.readAll(scope).map { String(decoding: $0.secret, as: UTF8.self) } == [older], "the twin is removed")
    }
}
