// The memory keyring's injected faults and content types. The real counterparts (no bus, no
// Secret Service, a hung or restarted daemon, a refused write) are FaultTests' against real
// daemons; these check that the memory keyring reports each one with the same typed error.
import DeviceIdentity
import Foundation
import Keyring
import KeyringTesting
import TestSupport
import Testing

@Suite("The memory keyring's faults and content types")
struct MemoryFaultTests {
    @Test("each injected fault is the typed error a real session gives, and clears")
    func faultsAreTyped() throws {
        let memory = MemoryKeyring()
        let store = try SecretStore(identifier: uniqueID("fault"), keyring: Keyring(memory: memory, timeout: .seconds(7)))
        try store.setObject("kept", forKey: .valueData)
        memory.inject(.noSessionBus)
        let noBus = #expect(throws: KeyringError.self) { try store.object(forKey: .valueData) }
        guard case .noSessionBus = noBus else {
            Issue.record("not noSessionBus: \(String(describing: noBus))")
            return
        }
        memory.inject(.noSecretService)
        #expect(throws: KeyringError.noSecretService) { try store.object(forKey: .valueData) }
        #expect(Keyring(memory: memory).status().isReachable == false)
        memory.inject(.timeout)
        #expect(throws: KeyringError.timedOut(seconds: 7)) { try store.object(forKey: .valueData) }
        memory.inject(.writeFails)
        #expect(try store.object(forKey: .valueData) == "kept", "reads work while writes fail")
        let failedWrite = #expect(throws: KeyringError.self) { try store.setObject("new", forKey: .valueData) }
        guard case .serviceFailure = failedWrite else {
            Issue.record("not serviceFailure: \(String(describing: failedWrite))")
            return
        }
        #expect(try store.object(forKey: .valueData) == "kept", "a failed write changes nothing")
        memory.inject(nil)
        try store.setObject("new", forKey: .valueData)
        #expect(try store.object(forKey: .valueData) == "new")
    }

    @Test("any KeyringError is injected by value, for a number of calls, or for writes only")
    func anyErrorByValue() throws {
        let memory = MemoryKeyring()
        let store = try SecretStore(identifier: uniqueID("error"), keyring: Keyring(memory: memory))
        try store.setObject("kept", forKey: .valueData)
        memory.inject(KeyringError.locked(itemExists: true, unlock: .dismissed), times: 1)
        #expect(throws: KeyringError.locked(itemExists: true, unlock: .dismissed)) { try store.object(forKey: .valueData) }
        #expect(try store.object(forKey: .valueData) == "kept", "one call only")
        memory.inject(.error(.invalidArgument("refused by the test"), writesOnly: true))
        #expect(try store.object(forKey: .valueData) == "kept", "reads work")
        #expect(throws: KeyringError.invalidArgument("refused by the test")) { try store.setObject("new", forKey: .valueData) }
        memory.inject(nil)
        try store.setObject("new", forKey: .valueData)
        #expect(try store.object(forKey: .valueData) == "new")
        memory.inject(.noSecretService)
        #expect(memory.fault == .noSecretService, "a name both types have is the Fault")
        memory.inject(nil)
    }

    @Test("as oo7-daemon, a restart that comes back locked hides and renumbers the items: at the unlock they are the same items")
    func renumberedWhileHidden() async throws {
        let memory = MemoryKeyring(provider: .oo7)
        let keyring = Keyring(memory: memory)
        let id = uniqueID("renumber")
        for n in 0..<3 { try await keyring.store(Data("\(n)".utf8), attributes: ["service": id, "n": "\(n)"], label: "n\(n)") }
        // n1 moves from path 2 to path 1, n2 from path 3 to path 2, which n1 held.
        _ = try await keyring.delete(["service": id, "n": "0"])
        let log = ChangeLog(try await keyring.changes(identifier: id))
        defer { log.stop() }
        let start = ContinuousClock.now
        memory.restart(locked: true)
        #expect(await log.first(.locked, from: 0, since: start) != nil, "\(log.kinds)")
        memory.isLocked = false
        #expect(await log.first(.unlocked, from: 0, since: start) != nil, "\(log.kinds)")
        try await keyring.store(Data("after".utf8), attributes: ["service": id, "n": "after"], label: "after")
        #expect(await log.first(.created, from: 0, since: start) != nil, "\(log.kinds)")
        #expect(log.kinds == [.locked, .unlocked, .created], "hidden, then the same items at new paths: \(log.kinds)")
    }

    @Test("as oo7-daemon an update replaces the item (a new path, its place in the order kept); as gnome-keyring it stays")
    func updateReplacesPerProvider() throws {
        for (provider, replaces) in [(MemoryKeyring.Provider.oo7, true), (.gnomeKeyring, false)] {
            let keyring = Keyring(memory: MemoryKeyring(provider: provider))
            let attributes = ["service": uniqueID("update")]
            try keyring.store(Data("a".utf8), attributes: attributes, label: "L")
            let before = try keyring.search(attributes)
            try keyring.store(Data("b".utf8), attributes: attributes, label: "L")
            let after = try keyring.search(attributes)
            try #require(before.count == 1 && after.count == 1, "\(provider)")
            #expect((after[0].objectPath != before[0].objectPath) == replaces, "\(provider)")
            #expect(after[0].created == before[0].created, "\(provider)")
            #expect(try keyring.lookup(attributes) == Data("b".utf8), "\(provider)")
            // Its place among the others: still the older of two, oldest first.
            let service = ["service": uniqueID("order")]
            try keyring.store(Data("old".utf8), attributes: service.merging(["k": "old"]) { $1 }, label: "old")
            try keyring.store(Data("new".utf8), attributes: service.merging(["k": "new"]) { $1 }, label: "new")
            try keyring.store(Data("old, updated".utf8), attributes: service.merging(["k": "old"]) { $1 }, label: "old")
            #expect(try keyring.search(service).map(\.label) == ["old", "new"], "\(provider)")
        }
    }

    @Test("lock state: isLocked, lockCollection and unlockCollection through the memory keyring's prompt, as on gnome-keyring")
    func lockState() throws {
        let memory = MemoryKeyring()
        let keyring = Keyring(memory: memory)
        let store = try SecretStore(identifier: uniqueID("lock"), keyring: keyring)
        try store.setObject("kept", forKey: .valueData)
        #expect(try keyring.isLocked() == false)
        try keyring.lockCollection()
        #expect(memory.isLocked)
        #expect(try keyring.isLocked())
        #expect(try store.isLocked())
        #expect(memory.promptCount == 0, "asking and locking never prompt")
        #expect(throws: KeyringError.locked(itemExists: false, unlock: .notAsked)) {
            try Keyring(memory: memory, unlock: .never).unlockCollection()
        }
        #expect(memory.promptCount == 0, ".never shows no prompt")
        memory.unlockAnswer = .dismiss
        #expect(throws: KeyringError.locked(itemExists: false, unlock: .dismissed)) { try keyring.unlockCollection() }
        memory.unlockAnswer = .ignore
        #expect(throws: KeyringError.locked(itemExists: false, unlock: .unanswered)) { try keyring.unlockCollection() }
        memory.unlockAnswer = .unlock
        try keyring.unlockCollection()
        #expect(!memory.isLocked && memory.promptCount == 3)
        try keyring.unlockCollection()
        #expect(memory.promptCount == 3, "an unlocked collection is not prompted for")
        #expect(try store.object(forKey: .valueData) == "kept")
        memory.inject(.noSecretService, times: 1)
        #expect(throws: KeyringError.noSecretService) { try keyring.lockCollection() }
    }

    @Test("a resolver on the memory keyring with the standard backup never writes the user's state directory")
    func standardBackupStaysPrivate() throws {
        let memory = MemoryKeyring()
        let appID = uniqueID("com.example.private-backup")
        let environment = ProcessInfo.processInfo.environment
        let stateHome = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory() + "/.local/state"
        let userBackup = stateHome + "/keyring-identity/app/" + appID
        let id = try IdentifierResolver(scope: .app(appID), keyring: Keyring(memory: memory)).identifier()
        #expect(!FileManager.default.fileExists(atPath: userBackup), "the test wrote \(userBackup)")
        // The backup exists all the same, in the keyring's own directory: it serves while the keyring is away.
        memory.inject(.noSecretService)
        #expect(try IdentifierResolver(scope: .app(appID), keyring: Keyring(memory: memory)).identifier() == id)
        #expect(!FileManager.default.fileExists(atPath: userBackup))
    }

    @Test("a fault injected for one call hits that call only")
    func oneShotFault() throws {
        let memory = MemoryKeyring()
        let keyring = Keyring(memory: memory)
        memory.inject(.timeout, times: 1)
        #expect(throws: KeyringError.timedOut(seconds: 25)) { try keyring.lookup(["service": "x"]) }
        #expect(try keyring.lookup(["service": "x"]) == nil)
    }

    @Test("a timed-out keyring never yields a new identifier; with no Secret Service the backup serves the one there is")
    func resolverFaults() throws {
        let memory = MemoryKeyring()
        let backup = FileManager.default.temporaryDirectory.appendingPathComponent("memory-fault-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: backup) }
        let resolver = try IdentifierResolver(
            scope: .app("memory.fault.\(UUID().uuidString)"), keyring: Keyring(memory: memory), backup: .directory(backup.path))
        memory.inject(.timeout)
        #expect(throws: IdentityError.self, "a timed-out keyring never yields a new identifier") { try resolver.identifier() }
        memory.inject(nil)
        let id = try resolver.identifier()
        memory.inject(.noSecretService)
        #expect(try resolver.refresh().value == id, "the backup serves while the keyring is unreachable")
        memory.inject(nil)
        #expect(try resolver.refresh().value == id)
    }

    @Test("content types: SecretStore writes application/octet-stream, Keyring.store text/plain unless told")
    func contentTypes() throws {
        let memory = MemoryKeyring()
        let keyring = Keyring(memory: memory)
        let id = uniqueID("types")
        try SecretStore(identifier: id, keyring: keyring).setObject("v", forKey: .valueData)
        try keyring.store(Data("t".utf8), attributes: ["service": id + ".t"], label: "t")
        try keyring.store(Data("{}".utf8), attributes: ["service": id + ".j"], label: "j", contentType: "application/json")
        let types = memory.items.map { memory.secret(of: $0)?.contentType }
        #expect(types == ["application/octet-stream", "text/plain", "application/json"])
    }

    @Test("twins added by another client: the oldest wins, a locked collection hides neither")
    func foreignTwins() throws {
        let memory = MemoryKeyring()
        let id = uniqueID("foreign")
        memory.add(Data("young".utf8), attributes: ["service": id, "username": ""], created: Date(timeIntervalSince1970: 2000))
        memory.add(Data("old".utf8), attributes: ["service": id, "username": ""], created: Date(timeIntervalSince1970: 1000))
        let store = try SecretStore(identifier: id, keyring: Keyring(memory: memory, unlock: .never))
        #expect(try store.object(forKey: .valueData) == "old")
        memory.isLocked = true
        #expect(throws: KeyringError.locked(itemExists: true)) { try store.object(forKey: .valueData) }
        #expect(memory.promptCount == 0, ".never shows no prompt")
    }

    /// The memory keyring's "no bus" stands for this process's session, whatever the real environment
    /// (under scripts/with-keyring there is a bus; the resolver must still see none).
    @Test(
        "no bus, never served: headless, the backup holds a new identifier and the keyring gets it back; once served, no bus mints nothing")
    func headlessThenServed() throws {
        let memory = MemoryKeyring()
        let keyring = Keyring(memory: memory)
        let backup = FileManager.default.temporaryDirectory.appendingPathComponent("memory-headless-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: backup) }
        let app = "memory.headless.\(UUID().uuidString)"
        let resolver = try IdentifierResolver(scope: .app(app), keyring: keyring, backup: .directory(backup.path))
        memory.inject(.noSessionBus)
        let headless = try resolver.identifier()
        #expect(memory.items.isEmpty)
        memory.inject(nil)
        #expect(try resolver.refresh().value == headless)
        #expect(memory.items.compactMap { memory.secret(of: $0) }.map { String(decoding: $0.secret, as: UTF8.self) } == [headless])

        let other = try IdentifierResolver(scope: .app(app + ".other"), keyring: keyring, backup: .directory(backup.path))
        memory.inject(.noSessionBus)
        #expect(throws: IdentityError.self, "a keyring served this user: no bus is unreachable, not headless") { try other.identifier() }
    }
}
