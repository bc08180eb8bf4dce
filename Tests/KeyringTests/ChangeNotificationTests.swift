import Foundation
import Keyring
import TestSupport
import Testing

/// Milliseconds, for the figures the tests print.
func milliseconds(_ duration: Duration) -> Int {
    Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
}

/// Another process changes, deletes and locks a wrapper's item; `SecretStore.changes()` reports each.
///
/// Runs on every provider (scripts/with-keyring, with-kwallet, with-keepassxc). What a provider
/// does not signal is asserted absent, with the reason, so a provider that starts to signal it shows.
@Suite("Change notifications from the Secret Service", .serialized)
struct ChangeNotificationTests {
    /// `secret-tool store` with the wrapper's attributes (another process, as python-keyring would).
    func storeWithSecretTool(_ id: String, _ secret: String) throws {
        try mustRun(secretTool, ["store", "--label", "watched", "service", id, "username", ""], input: Data(secret.utf8))
    }

    @Test(
        "another process's create, change and delete each arrive, within 10 s (about 1 s expected)",
        .enabled(if: !TestProvider.usesFileBackend, "the file backend's watch is tested in FileBackendTests"))
    func createChangeDelete() async throws {
        try requireTestKeyring()
        let id = uniqueID("watch")
        let store = try SecretStore(identifier: id, keyring: Keyring(timeout: .seconds(20), unlock: .never))
        defer { try? store.reset() }
        let log = ChangeLog(try await store.changes())
        defer { log.stop() }

        var since = ContinuousClock.now
        try storeWithSecretTool(id, "one")
        let created = try #require(await log.first(.created, from: 0, since: since), "no created change: \(log.kinds)")
        #expect(created.change.item?.attributes["service"] == id)

        // A change by Item.SetSecret (idtool item set, SecretStore's own update). gnome-keyring and
        // KWallet emit no signal for SetSecret itself; the library then sets the label the item
        // has, whose ItemChanged they do send (ServiceCall.announceSecretChange).
        var mark = log.count
        since = .now
        try mustRun(try requireIdtool(), ["item", "set", id, "--no-prompt"], input: Data("two".utf8))
        // oo7-daemon: the update replaces the item, reported as its deletion and a creation.
        let setSecret = await log.first(TestProvider.quirks.keepsItemChanges ? .changed : .created, from: mark, since: since)
        #expect(setSecret != nil, "no change for SecretStore's update: \(log.kinds)")

        // A change by a replacing CreateItem (secret-tool store over the item). Not on KeePassXC 2.7.10,
        // which leaves that call unanswered (10 s and more, with or without a watch).
        var changed = setSecret
        if TestProvider.quirks.answersReplacingCreate {
            mark = log.count
            since = .now
            try storeWithSecretTool(id, "three")
            changed = await log.first(.changed, from: mark, since: since)
            #expect(changed?.change.item?.objectPath == created.change.item?.objectPath, "no changed change: \(log.kinds)")
        }

        mark = log.count
        since = .now
        try mustRun(secretTool, ["clear", "service", id])
        let deleted = try #require(await log.first(.deleted, from: mark, since: since), "no deleted change: \(log.kinds)")
        // Read from the map of what was seen: a deleted item's attributes can no longer be asked for.
        #expect(deleted.change.item?.attributes["service"] == id)
        print(
            "change-latency \(TestProvider.name): created \(milliseconds(created.latency)) ms,",
            "changed \(changed.map { milliseconds($0.latency) } ?? -1) ms (SetSecret \(setSecret.map { milliseconds($0.latency) } ?? -1) ms),",
            "deleted \(milliseconds(deleted.latency)) ms (from the end of the other process's run)")
    }

    @Test(
        "another wrapper's and another identifier's items are not this wrapper's changes",
        .enabled(if: !TestProvider.usesFileBackend, "the file backend's watch is tested in FileBackendTests"))
    func otherItemsAreNotReported() async throws {
        try requireTestKeyring()
        let id = uniqueID("watch-scope")
        let keyring = Keyring(timeout: .seconds(20), unlock: .never)
        let store = try SecretStore(identifier: id, keyring: keyring)
        let grouped = try SecretStore(identifier: id, accessGroup: "g", keyring: keyring)
        defer {
            try? store.reset()
            try? grouped.reset()
            _ = try? keyring.delete(["service": id + ".other"])
        }
        let mine = ChangeLog(try await store.changes())
        let everything = ChangeLog(try await keyring.changes(identifier: id))
        defer {
            mine.stop()
            everything.stop()
        }
        let since = ContinuousClock.now
        // Mine first: secret-tool's store replaces any item whose attributes include its own, a grouped one too.
        try storeWithSecretTool(id, "mine")
        try await grouped.setObject("grouped", forKey: .valueData)
        try storeWithSecretTool(id + ".other", "other")
        _ = try #require(await everything.first(.created, from: 1, since: since), "the identifier watch sees both: \(everything.kinds)")
        // Changes arrive in order: once this wrapper's own deletion is reported, the others' would have been.
        try mustRun(secretTool, ["clear", "service", id, "username", ""])
        _ = try #require(await mine.first(.deleted, from: 0, since: since), "no deleted: \(mine.kinds)")
        // The scope, on every provider: this wrapper's item only.
        #expect(mine.kinds.filter { $0 != .changed } == [.created, .deleted], "only this wrapper's item: \(mine.kinds)")
        // Once an intermittent known issue on KeePassXC (and on kwalletd6 in CI): see `createdAndDeletedOnly`.
        #expect(mine.kinds == [.created, .deleted], "nothing else: \(mine.entries.withLock { $0.map(\.change) })")
        #expect(everything.kinds.prefix(2) == [.created, .created])
    }

    /// A secret the watch cannot read is not a change. Two causes once made a `changed` of an item
    /// nobody changed: an item deleted between the watch's property read and its secret read,
    /// which GetSecrets leaves out with no error (gnome-keyring, KeePassXC; scripts/providers/watch-reads.py
    /// measures it), and a session key kwalletd does not share (SessionKeyTests). On KeePassXC
    /// about 1 round in 8 met the first, so 20 rounds fail without the fix with 93% chance.
    @Test(
        "another process's item created and deleted 20 times is reported created and deleted, never changed",
        .enabled(if: !TestProvider.usesFileBackend, "the file backend's watch is tested in FileBackendTests"))
    func createdAndDeletedOnly() async throws {
        try requireTestKeyring()
        let id = uniqueID("watch-rounds")
        let store = try SecretStore(identifier: id, keyring: Keyring(timeout: .seconds(20), unlock: .never))
        defer { try? store.reset() }
        let log = ChangeLog(try await store.changes())
        defer { log.stop() }
        for round in 0..<20 {
            let mark = log.count
            let since = ContinuousClock.now
            try storeWithSecretTool(id, "round \(round)")
            _ = try #require(await log.first(.created, from: mark, since: since), "round \(round): no created: \(log.kinds)")
            try mustRun(secretTool, ["clear", "service", id, "username", ""])
            _ = try #require(await log.first(.deleted, from: mark, since: since), "round \(round): no deleted: \(log.kinds)")
        }
        #expect(log.kinds == Array(repeating: [KeyringChange.Kind.created, .deleted], count: 20).flatMap { $0 }, "\(log.kinds)")
    }

    @Test(
        "the collection locked and unlocked by another process arrive as locked and unlocked",
        .enabled(if: !TestProvider.usesFileBackend, "the file backend has no lock state"))
    func lockAndUnlock() async throws {
        try requireTestKeyring()
        let id = uniqueID("watch-lock")
        let store = try SecretStore(identifier: id, keyring: Keyring(timeout: .seconds(20), unlock: .never))
        try storeWithSecretTool(id, "locked soon")
        defer { try? store.reset() }
        let log = ChangeLog(try await store.changes())
        defer { log.stop() }
        var since = ContinuousClock.now
        try lockKeyring()
        let locked = await log.first(.locked, from: 0, since: since)
        #expect(locked != nil, "no locked change: \(log.kinds)")
        let mark = log.count
        since = .now
        // gnome-keyring unlocks by a restart here: the watch sees the service stop and start, then the
        // lock state, which that daemon signals nothing for: the watch's looks after a start see it,
        // the last 24 s after the start.
        try keyringCtl("unlock")
        let unlocked = await log.first(.unlocked, from: mark, since: since, within: .seconds(40))
        #expect(unlocked != nil, "no unlocked change: \(log.kinds)")
        // Nobody wrote: gnome-keyring's locked view of an item (its attributes hashed) is not a change.
        let lockKinds: Set<KeyringChange.Kind> = [.locked, .unlocked, .serviceStopped, .serviceStarted]
        #expect(log.kinds.allSatisfy(lockKinds.contains), "a lock changes no item: \(log.kinds)")
        print(
            "lock-latency \(TestProvider.name): locked \(locked.map { milliseconds($0.latency) } ?? -1) ms,",
            "unlocked \(unlocked.map { milliseconds($0.latency) } ?? -1) ms; kinds \(log.kinds.map(\.rawValue))")
    }

    /// A lock's signals handled after the daemon quit (the watch's queue behind, as under load):
    /// each read once went through a call that had the bus start gnome-keyring again from its
    /// service file, locked, and the watch then reported that daemon's view (a deletion, a change)
    /// and never the unlock. Paused here, it fails that way every time without the fix.
    @Test(
        "a signal handled after the daemon quit never has the bus start another: nothing but the lock, stop and start",
        .needs(.secretService))
    func signalHandledAfterTheDaemonQuit() async throws {
        try requireTestKeyring()
        let id = uniqueID("watch-quit")
        let store = try SecretStore(identifier: id, keyring: Keyring(timeout: .seconds(20), unlock: .never))
        try storeWithSecretTool(id, "kept")
        defer { try? store.reset() }
        let log = ChangeLog(try await store.changes())
        defer { log.stop() }
        let pause = try TestPausePoint("watch-handles-signal")
        defer { pause.end() }
        let since = ContinuousClock.now
        try keyringCtl("lock")
        let reached = await pause.reached()
        try keyringCtl("stop")
        pause.go()
        try #require(reached, "the watch never handled the lock's signals: \(log.kinds)")
        // The stop's NameOwnerChanged follows the lock's signals: once it is reported, they were handled.
        try #require(await log.first(.serviceStopped, from: 0, since: since, within: .seconds(40)) != nil, "no stop: \(log.kinds)")
        #expect(BusProbe.hasOwner(BusProbe.secretServiceName) == false, "the watch had the bus start the daemon: \(log.kinds)")
        let mark = log.count
        // A daemon that crashed at start-up and was started again (KeePassXC's, now and then) shows
        // as a start and a stop more: the harness says so, and only those are allowed.
        let retries = try keyringCtl("start").split(separator: "\n").filter { $0 == "started again after a crash" }.count
        #expect(await log.first(.serviceStarted, from: mark, since: since, within: .seconds(40)) != nil, "no start: \(log.kinds)")
        try await store.setObject("after", forKey: .valueData)
        let reported = try #require(TestProvider.updateReport.last)
        #expect(await log.first(reported, from: mark, since: since, within: .seconds(40)) != nil, "no change after the start: \(log.kinds)")
        // One update, never another deletion or creation, though the lived-in keyring's Work opens
        // after the name is taken: its locked view of the item (hashed attributes) is not a change.
        let items = log.kinds.filter { ![.locked, .unlocked, .serviceStopped, .serviceStarted].contains($0) }
        #expect(items == TestProvider.updateReport, "one update after the start: \(log.kinds)")
        let service = log.kinds.dropFirst(mark)
        let starts = service.filter { $0 == .serviceStarted }.count
        let stops = service.filter { $0 == .serviceStopped }.count
        #expect(starts - stops == 1 && starts <= 1 + retries, "one daemon started (\(retries) started again): \(log.kinds)")
    }

    @Test(
        "the service going away and coming back arrive as service-stopped and service-started, and the watch goes on",
        .enabled(if: !TestProvider.usesFileBackend, "the file backend has no service"))
    func serviceRestart() async throws {
        try await restartReportsOnlyTheRestart(itemBefore: false)
    }

    @Test(
        "an item kept across a daemon restart is reported neither deleted nor created, and its update after it as changed",
        .enabled(if: !TestProvider.usesFileBackend, "the file backend has no daemon"))
    func untouchedAcrossRestart() async throws {
        try await restartReportsOnlyTheRestart(itemBefore: true)
    }

    @Test(
        "a kept item a search missed while its collection was locked is not deleted when the collection unlocks before the watch reads the lock",
        .needs(.locking, .hidesLockedItems))
    func unlockBetweenSearchAndLockRead() async throws {
        try requireTestKeyring()
        let id = uniqueID("watch-unlock-between")
        let store = try SecretStore(identifier: id, keyring: Keyring(timeout: .seconds(20), unlock: .never))
        defer { try? store.reset() }
        try await store.setObject("kept", forKey: .valueData)
        let log = ChangeLog(try await store.changes())
        defer { log.stop() }
        // The lock takes the item off the bus (ItemDeleted); the watch searches for it, misses it,
        // and stops there until the collection is unlocked again: what a restart under load did.
        let pause = try TestPausePoint("watch-searched")
        defer { pause.end() }
        try keyringCtl("lock")
        let reached = await pause.reached()
        try keyringCtl("unlock")
        pause.go()
        try #require(reached, "the watch never searched after the lock: \(log.kinds)")
        try mustRun(try requireIdtool(), ["item", "set", id, "--no-prompt"], input: Data("updated".utf8))
        let reported = try #require(TestProvider.updateReport.last)
        #expect(await log.first(reported, from: 0, since: .now) != nil, "no update after the unlock: \(log.kinds)")
        let items = log.kinds.filter { ![.locked, .unlocked].contains($0) }
        #expect(TestProvider.areUpdates(items), "only the update: \(log.kinds)")
    }

    /// Restarts the daemon under a watch, then has another process create the item (none before)
    /// or update it (one before) and waits for that report: every report the restart causes comes
    /// before it, so the reports after the restart must be exactly that one.
    func restartReportsOnlyTheRestart(itemBefore: Bool) async throws {
        try requireTestKeyring()
        let id = uniqueID("watch-restart")
        let store = try SecretStore(identifier: id, keyring: Keyring(timeout: .seconds(20), unlock: .never))
        defer { try? store.reset() }
        if itemBefore { try await store.setObject("before the restart", forKey: .valueData) }
        let log = ChangeLog(try await store.changes())
        defer { log.stop() }
        let since = ContinuousClock.now
        try keyringCtl("restart")
        #expect(await log.first(.serviceStopped, from: 0, since: since) != nil, "no service-stopped: \(log.kinds)")
        #expect(await log.first(.serviceStarted, from: 0, since: since) != nil, "no service-started: \(log.kinds)")
        // The new daemon's signals reach the same watch (its match rules follow the new owner).
        // An update of the item, not a deletion: a deletion reported wrongly after the restart
        // would stand in for the real one, where the update then arrives as created.
        let expected: KeyringChange.Kind = itemBefore ? TestProvider.updateReport.last ?? .changed : .created
        if itemBefore {
            try mustRun(try requireIdtool(), ["item", "set", id, "--no-prompt"], input: Data("after the restart".utf8))
        } else {
            try storeWithSecretTool(id, "after the restart")
        }
        #expect(await log.first(expected, from: 0, since: .now) != nil, "no \(expected) after the restart: \(log.kinds)")
        // KWallet and KeePassXC start locked, and the harness unlocks them: those are real changes.
        let items = log.kinds.filter { ![.serviceStopped, .serviceStarted, .locked, .unlocked].contains($0) }
        if itemBefore {
            // idtool's update is two writes (SetSecret, then the label that announces it), which may be
            // reported as one change or two (seen twice on the lived-in gnome-keyring); never as a
            // deletion or a creation (KWallet's renumbered paths, KeePassXC's database not yet open).
            #expect(TestProvider.areUpdates(items), "only the update: \(log.kinds)")
        } else {
            #expect(items == [expected], "only the \(expected) another process made: \(log.kinds)")
        }
    }

    @Test(
        "a watch sees its own process's writes, started first or after a read (the path cache subscribed first)",
        .enabled(if: !TestProvider.usesFileBackend, "the file backend's watch is tested in FileBackendTests"),
        arguments: [false, true])
    func ownWrites(readFirst: Bool) async throws {
        try requireTestKeyring()
        let store = try SecretStore(identifier: uniqueID("watch-own"))
        defer { try? store.reset() }
        if readFirst { _ = try await store.object(forKey: .valueData) }
        let log = ChangeLog(try await store.changes())
        defer { log.stop() }
        let since = ContinuousClock.now
        try await store.setObject("token", forKey: .valueData)
        try await store.reset()
        let deleted = await log.first(.deleted, from: 0, since: since)
        // The watch reads a created item after the writer's next call (one in-process gate), so a
        // reset right after the write may have removed it already: this process's own creations
        // are known to the watch (ServiceSignals.createdHere), so the pair is still reported.
        // Once an intermittent known issue on KeePassXC: see `ownWritesRounds`.
        #expect(deleted != nil, "no deleted: \(log.kinds)")
        #expect(log.kinds.filter { $0 == .created }.count == 1, "one created: \(log.kinds)")
    }

    /// KeePassXC 2.7.4 sends about 54 signals for one create and delete (each from the collection's
    /// path and its alias's, three times, and 21 ItemChanged), which overflowed the watch's buffer:
    /// the full look that replaced them could not see an item already gone, so the pair was lost
    /// (2 of 3 runs of these 30 rounds before repeats were folded; `ServiceChangeSource.repeatsPending`).
    @Test(
        "this process's own create-then-delete, 30 rounds on one watch: each reported created and deleted",
        .enabled(if: !TestProvider.usesFileBackend, "the file backend's watch is tested in FileBackendTests"))
    func ownWritesRounds() async throws {
        try requireTestKeyring()
        let store = try SecretStore(identifier: uniqueID("watch-own-rounds"))
        defer { try? store.reset() }
        let log = ChangeLog(try await store.changes())
        defer { log.stop() }
        for round in 0..<30 {
            let mark = log.count
            let since = ContinuousClock.now
            try await store.setObject("token \(round)", forKey: .valueData)
            try await store.reset()
            _ = try #require(await log.first(.deleted, from: mark, since: since), "round \(round): no deleted: \(log.kinds)")
        }
        #expect(log.kinds == Array(repeating: [KeyringChange.Kind.created, .deleted], count: 30).flatMap { $0 }, "\(log.kinds)")
    }

    @Test("a watch of neither an identifier nor a group, or of an empty one, is refused")
    func badScopes() async throws {
        #expect(
            await keyringError { try await Keyring.default.changes(identifier: nil) }
                == .invalidArgument("watch an identifier, an access group or both"))
        #expect(await keyringError { try await Keyring.default.changes(identifier: "") } == .invalidArgument("the identifier is empty"))
    }

    @Test(
        "10,000 subscribe/cancel cycles leave no watch, listener, descriptor or thread behind (the RSS figure is printed)",
        .enabled(if: !TestProvider.usesFileBackend, "the file backend's cycles are in FileBackendTests"))
    func subscribeCancelCycles() async throws {
        try requireTestKeyring()
        let store = try SecretStore(identifier: uniqueID("watch-cycles"), keyring: Keyring(timeout: .seconds(20), unlock: .never))
        func cycle() async throws {
            let changes = try await store.changes()
            let consumer = Task { for await _ in changes {} }
            consumer.cancel()
            await consumer.value
        }
        for _ in 0..<500 { try await cycle() }  // warm: libsecret's session, the subscription, allocator pools
        // Counts, not memory: comparing RSS growth with a reference workload's flipped with the
        // allocator's page reuse (5.7 MB against 0.4 MB once on kwalletd6, and 5.1 against 1.9 MB on a
        // lived-in kwalletd5; alone it passed). A watch that leaks is a watch object or a listener
        // that outlives its cycle, and that count is exact. Bytes leaked otherwise are
        // LeakSanitizer's to find (scripts/sanitize).
        let before = (
            watches: await Self.settledWatchCount(), listeners: LeakCounts.signalListeners,
            rss: try MemoryTests.residentKiB(), fds: Self.openDescriptors(), threads: Self.threads()
        )
        let start = ContinuousClock.now
        for _ in 0..<10_000 { try await cycle() }
        let after = (
            watches: await Self.settledWatchCount(target: before.watches), listeners: LeakCounts.signalListeners,
            rss: try MemoryTests.residentKiB(), fds: Self.openDescriptors(), threads: Self.threads()
        )
        print(
            "watch-cycles \(TestProvider.name): 10000 cycles in \(milliseconds(ContinuousClock.now - start)) ms,",
            "watches \(before.watches) -> \(after.watches), listeners \(before.listeners) -> \(after.listeners),",
            "RSS \(before.rss) -> \(after.rss) KiB, fds \(before.fds) -> \(after.fds), threads \(before.threads) -> \(after.threads)")
        #expect(after.watches == before.watches, "every cancelled watch was freed")
        #expect(after.listeners == before.listeners, "every cancelled watch removed its listener")
        #expect(after.fds <= before.fds + 2)
        #expect(after.threads <= before.threads + 4)
    }

    /// The live watch count once the cancelled ones have been freed: a stop finishes on the watch's
    /// own queue, so the count is read until it reaches `target` (none live: every watch this test
    /// and earlier ones made is cancelled), at most 60 s. A count that is merely still for a moment
    /// can be a warm-up watch not yet freed under load. Only the count is asserted, never the time.
    static func settledWatchCount(target: Int = 0) async -> Int {
        let end = ContinuousClock.now + .seconds(60)
        var count = LeakCounts.serviceWatches
        while count != target, ContinuousClock.now < end {
            try? await Task.sleep(for: .milliseconds(50))
            count = LeakCounts.serviceWatches
        }
        return count
    }

    static func openDescriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1 }

    static func threads() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        return status.split(separator: "\n").first { $0.hasPrefix("Threads:") }.flatMap { Int($0.split(separator: "\t").last ?? "") } ?? -1
    }
}
