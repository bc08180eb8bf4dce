import Dispatch
import Synchronization

/// The Secret Service as a change source: its signals (`ServiceSignals`) are the triggers, and a
/// look reads what a signal names, with typed calls.
///
/// A signal names an object path only, so each one is answered by reading that item's properties,
/// or that collection's lock state, into a copy of the last snapshot: the last snapshot is also
/// what names a deleted item, whose attributes can no longer be read. A change of the service's
/// owner is a stop and a start; after a start, and after a collection appears or goes, the items
/// are looked up again in full. None of these calls has the bus start a daemon
/// (`startsService: false`): the watch follows the one it watches.
final class ServiceChangeSource: ChangeSource, @unchecked Sendable {
    // Sound as Sendable: `fire` is `Guarded`; `owner` and `reportedGone` are touched only in
    // `firstLook` and `look`, which the watch runs on its own serial queue.

    /// A signal, or a look the source scheduled itself.
    enum Trigger: ChangeTrigger {
        case signal(ServiceSignals.Signal)
        /// A look a while after a daemon took the name (`lookDelaysAfterStart`): the next of `delays` is still to come.
        case lookAfterStart(owner: Int, delays: [Double])
        case fullLook

        var mayDrop: Bool {
            switch self {
            case .signal(let signal): signal.newOwner == nil
            case .lookAfterStart: false
            case .fullLook: true
            }
        }

        func repeats(in waiting: [Trigger]) -> Bool {
            guard case .signal(let signal) = self else { return false }
            return ServiceChangeSource.repeatsPending(
                signal,
                waiting.compactMap {
                    if case .signal(let signal) = $0 { signal } else { nil }
                })
        }
    }

    private let scope: ChangeScope
    private let timeout: Duration
    private let fire = Guarded<(@Sendable (Trigger) -> Void)?>(nil)
    /// Counts daemons this watch has seen take the name, so a later look is skipped once another took it.
    private var owner = 0
    /// Paths whose deletion was reported, so that a late signal for one reports nothing more.
    private var reportedGone: Set<String> = []

    /// How many Secret Service watches are alive: what a leak test counts (`LeakCounts`), exactly, instead of memory.
    static let liveCount = Atomic<Int>(0)

    init(_ scope: ChangeScope, timeout: Duration) {
        self.scope = scope
        self.timeout = timeout
        Self.liveCount.add(1, ordering: .relaxed)
    }

    deinit { Self.liveCount.subtract(1, ordering: .relaxed) }

    func subscribe(_ fire: @escaping @Sendable (Trigger) -> Void) throws(KeyringError) -> @Sendable () -> Void {
        self.fire.withLock { $0 = fire }
        let key = ServiceSignals.addListener { fire(.signal($0)) }
        return { [self] in
            ServiceSignals.removeListener(key)
            self.fire.withLock { $0 = nil }
        }
    }

    func firstLook() throws(KeyringError) -> ChangeSnapshot {
        try ServiceCall.run(timeout: timeout) { call throws(KeyringError) in
            _ = ServiceSignals.synchronize(call)
            return try fullLook(call, from: ChangeSnapshot())
        }
    }

    /// What a look found, and which paths it found gone (for `reportedGone`). Applied once the
    /// calls are done: `ServiceCall.run` may retry a look on a new session (a session key kwalletd
    /// does not share).
    private struct Outcome {
        var snapshots: [ChangeSnapshot] = []
        var gone: [String] = []
    }

    func look(after trigger: Trigger, from last: ChangeSnapshot) throws(KeyringError) -> [ChangeSnapshot] {
        switch trigger {
        case .signal(let signal):
            if let newOwner = signal.newOwner { return ownerChanged(to: newOwner, from: last) }
            guard last.isRunning else { return [] }
            TestPause.at("watch-handles-signal")
            let outcome = try ServiceCall.run(timeout: timeout, startsService: false) { call throws(KeyringError) in
                try handle(signal, last, call)
            }
            // A path in a snapshot was seen since it went; then the paths gone now.
            for snapshot in outcome.snapshots { reportedGone.subtract(snapshot.items.keys) }
            for path in outcome.gone { noteGone(path) }
            return outcome.snapshots
        case .fullLook:
            guard last.isRunning else { return [] }
            return [
                try ServiceCall.run(timeout: timeout, startsService: false) { call throws(KeyringError) in try fullLook(call, from: last) }
            ]
        case .lookAfterStart(let started, let delays):
            guard last.isRunning, owner == started else { return [] }
            // The next look comes whether or not this one is answered (the daemon still loading).
            defer { scheduleLook(afterStartOf: started, delays: Array(delays.dropFirst())) }
            return [
                try ServiceCall.run(timeout: timeout, startsService: false) { call throws(KeyringError) in try fullLook(call, from: last) }
            ]
        }
    }

    private func noteGone(_ path: String) {
        if reportedGone.count >= 256 { reportedGone.removeAll() }
        reportedGone.insert(path)
    }

    /// A new owner of the service's name: the old daemon stopped (if it ran), and a new one, if
    /// any, started; its items may differ from those the old one had, so they are looked up in full.
    private func ownerChanged(to newOwner: String, from last: ChangeSnapshot) -> [ChangeSnapshot] {
        ServiceSignals.followOwner()
        var snapshots: [ChangeSnapshot] = []
        var current = last
        if last.isRunning {
            current.isRunning = false
            snapshots.append(current)
        }
        guard !newOwner.isEmpty else { return snapshots }
        owner += 1
        current.isRunning = true
        // A look that fails (the daemon still loading) is made again after `lookDelaysAfterStart`.
        if let looked = try? ServiceCall.run(
            timeout: timeout, startsService: false,
            { call throws(KeyringError) in
                _ = ServiceSignals.synchronize(call)
                return try fullLook(call, from: current)
            })
        {
            current = looked
        }
        snapshots.append(current)
        scheduleLook(afterStartOf: owner, delays: Self.lookDelaysAfterStart)
        return snapshots
    }

    /// Looks again this long after a daemon takes the name. gnome-keyring started with `--unlock`
    /// owns the name before it unlocks its keyring and sends no signal for that unlock, so a look
    /// made at once may see it locked and miss the change; a look that failed (the daemon still
    /// loading) is tried again too. Each look reports only what differs from what this watch saw.
    /// On a loaded machine the unlock came more than 3 s after the name (CI, under the sanitizers),
    /// so the looks go on, further apart, for half a minute.
    static let lookDelaysAfterStart: [Double] = [0.25, 1, 3, 6, 12, 24]

    private func scheduleLook(afterStartOf started: Int, delays: [Double]) {
        guard let delay = delays.first else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
            self?.fire.withLock { $0 }?(.lookAfterStart(owner: started, delays: delays))
        }
    }

    /// Whether `signal` repeats the latest pending signal about the same object, with no change of
    /// owner since: handling reads the object as it is then, so the repeat adds nothing. KeePassXC
    /// sends each item signal from the collection's path and its alias's, three times over (about
    /// 60 signals for one create and delete), which overflowed the watch's limit; the full look that
    /// replaces dropped signals cannot see an item that came and went, so this process's own
    /// create-then-delete was lost.
    static func repeatsPending(_ signal: ServiceSignals.Signal, _ pending: [ServiceSignals.Signal]) -> Bool {
        guard signal.newOwner == nil else { return false }
        let target = signal.object ?? signal.path
        for earlier in pending.reversed() {
            if earlier.newOwner != nil { return false }
            if (earlier.object ?? earlier.path) == target {
                return earlier.interface == signal.interface && earlier.member == signal.member
            }
        }
        return false
    }

    private static let collectionInterface = "org.freedesktop.Secret.Collection"
    private static let serviceInterface = "org.freedesktop.Secret.Service"

    private func handle(_ signal: ServiceSignals.Signal, _ last: ChangeSnapshot, _ call: borrowing ServiceCall) throws(KeyringError)
        -> Outcome
    {
        switch (signal.interface, signal.member) {
        case (Self.collectionInterface, "ItemCreated"), (Self.collectionInterface, "ItemChanged"):
            if let path = signal.object { return try itemSeen(path, last, call) }
        case (Self.collectionInterface, "ItemDeleted"):
            if let path = signal.object { return try knownItemMissing(path, last, call) }
        case (Self.serviceInterface, "CollectionCreated"), (Self.serviceInterface, "CollectionDeleted"):
            return Outcome(snapshots: [try fullLook(call, from: last)])
        case (Self.serviceInterface, "CollectionChanged"):
            if let path = signal.object { return try lockSeen(path, last, call) }
        case ("org.freedesktop.DBus.Properties", _):
            if last.collections[signal.path] != nil {
                return try lockSeen(signal.path, last, call)
            } else if last.items[signal.path] != nil {
                return try itemSeen(signal.path, last, call)
            }
        default: break
        }
        return Outcome()
    }

    private func itemSeen(_ path: String, _ last: ChangeSnapshot, _ call: borrowing ServiceCall) throws(KeyringError) -> Outcome {
        guard let item = try call.properties(at: path, isLocked: false) else { return try vanished(path, last, call) }
        return Outcome(snapshots: [try seen(item, last, call)])
    }

    /// The last snapshot with `item` as the keyring shows it now.
    private func seen(_ item: KeyringItem, _ last: ChangeSnapshot, _ call: borrowing ServiceCall) throws(KeyringError) -> ChangeSnapshot {
        let path = item.objectPath
        var new = last
        let before = last.items[path]
        // A locked item may show no attributes, or hashed ones (gnome-keyring, loaded from disk): it
        // stays what it was, no longer hidden.
        if item.hidesAttributes {
            if let before {
                new.items[path] = ChangeSnapshot.Entry(
                    item: before.item.with(locked: true), secretDigest: before.secretDigest, collection: before.collection)
            }
            return new
        }
        guard scope.matches(item) else {
            new.items[path] = nil
            return new
        }
        let collection = Self.collection(of: path)
        if before == nil, new.collections[collection] == nil, let locked = try call.collectionLocked(at: collection) {
            new.collections[collection] = ChangeSnapshot.state(locked: locked)
        }
        new.items[path] = ChangeSnapshot.Entry(item: item, secretDigest: try digest(of: item, call), collection: collection)
        return new
    }

    /// The digest of an unlocked item's secret; nil when it cannot be read (locked, gone). An item
    /// deleted between its properties and its secret is left out of GetSecrets with no error
    /// (gnome-keyring, KeePassXC: scripts/providers/watch-reads.py), and its deletion follows; a
    /// session kwalletd keyed wrongly is replaced and read again (`secretIfReadable`).
    private func digest(of item: KeyringItem, _ call: borrowing ServiceCall) throws(KeyringError) -> String? {
        guard !item.isLocked, let secret = try call.secretIfReadable(at: item.objectPath) else { return nil }
        return Digest.sha256Hex(Array(secret.bytes))
    }

    /// An item gone before its signal could be read. One this process created (and so knows)
    /// came and went: both are reported. Another process's is not known, and is not reported.
    private func vanished(_ path: String, _ last: ChangeSnapshot, _ call: borrowing ServiceCall) throws(KeyringError) -> Outcome {
        if last.items[path] != nil { return try knownItemMissing(path, last, call) }
        // Once: a provider may send several signals for that path (KeePassXC's ItemChanged).
        guard !reportedGone.contains(path), let made = ServiceSignals.createdHere(path), scope.matches(made) else { return Outcome() }
        var with = last
        with.items[path] = ChangeSnapshot.Entry(item: made, secretDigest: nil)
        return Outcome(snapshots: [with, last], gone: [path])
    }

    /// A known item that a signal says is gone, or that cannot be read. KeePassXC takes every item of
    /// a database off the bus when it locks, with ItemDeleted, and puts them back when it unlocks,
    /// with no signal per item; a signal may be handled after either. So the keyring is asked now:
    /// an item it still finds is seen as it is; one missing is left out of the snapshot, with its
    /// collection's lock state as read around the search (`ChangeRule` keeps it hidden while that
    /// collection is locked or gone).
    private func knownItemMissing(_ path: String, _ last: ChangeSnapshot, _ call: borrowing ServiceCall) throws(KeyringError) -> Outcome {
        guard last.items[path] != nil else { return Outcome() }
        let collection = Self.collection(of: path)
        let (found, locks) = try searchHoldingLocks([collection], call) { () throws(KeyringError) in
            try call.searchItems(scope.attributes)
        }
        for (list, isLocked) in [(found.unlocked, false), (found.locked, true)] where list.contains(path) {
            if let item = try call.properties(at: path, isLocked: isLocked) { return Outcome(snapshots: [try seen(item, last, call)]) }
        }
        var new = last
        new.collections[collection] = locks[collection]
        new.items[path] = nil
        return Outcome(snapshots: [new], gone: locks[collection] == .unlocked ? [path] : [])
    }

    /// A collection that signalled: its lock state now. At an unlock, each item hidden meanwhile is
    /// back, or was deleted while the collection was locked.
    private func lockSeen(_ collection: String, _ last: ChangeSnapshot, _ call: borrowing ServiceCall) throws(KeyringError) -> Outcome {
        guard let before = last.collections[collection] else { return Outcome() }
        guard let locked = try call.collectionLocked(at: collection) else { return Outcome(snapshots: [try fullLook(call, from: last)]) }
        var new = last
        new.collections[collection] = ChangeSnapshot.state(locked: locked)
        guard new.collections[collection] != before else { return Outcome() }
        var outcome = Outcome(snapshots: [new])
        if !locked {
            for (path, entry) in last.items.sorted(by: { $0.key < $1.key }) where entry.isHidden && Self.collection(of: path) == collection
            {
                let next = try knownItemMissing(path, outcome.snapshots.last ?? new, call)
                outcome.snapshots += next.snapshots
                outcome.gone += next.gone
            }
        }
        return outcome
    }

    /// Looks up the matching items and the watched collections' lock state: those of the items seen
    /// last and the default collection's.
    private func fullLook(_ call: borrowing ServiceCall, from last: ChangeSnapshot) throws(KeyringError) -> ChangeSnapshot {
        let watched = Set(last.items.keys.map(Self.collection(of:))).union([try call.defaultCollectionPath()].compactMap { $0 })
        let (found, heldLocks) = try searchHoldingLocks(watched, call) { () throws(KeyringError) in try call.search(scope.attributes) }
        var new = ChangeSnapshot(isRunning: last.isRunning, mayRenumber: true)
        for item in found.filter(scope.owns) {
            new.items[item.objectPath] = ChangeSnapshot.Entry(
                item: item, secretDigest: nil, collection: Self.collection(of: item.objectPath))
        }
        new.collections = heldLocks
        for collection in Set(new.items.keys.map(Self.collection(of:))).subtracting(watched) {
            if let locked = try call.collectionLocked(at: collection) { new.collections[collection] = ChangeSnapshot.state(locked: locked) }
        }
        // Digests too: a secret changed while no signal said so (a restart, dropped signals) is a change.
        for (path, entry) in new.items { new.items[path]?.secretDigest = try digest(of: entry.item, call) }
        return new
    }

    /// Runs `search` between two reads of `collections`' lock state, and again while one of them
    /// changed meanwhile, so that an item missing from the search is judged by the lock its
    /// collection had during it. KeePassXC hides a locked database's items and may unlock between
    /// two calls: a search made while locked, with the lock read after the unlock, reported a kept
    /// item as deleted after a restart (seen under load: the look's SearchItems answered empty,
    /// then Locked answered false). After three tries a collection still changing counts as
    /// locked, so its missing items are hidden, and its next signal or look settles them.
    private func searchHoldingLocks<Found>(
        _ collections: Set<String>, _ call: borrowing ServiceCall, _ search: () throws(KeyringError) -> Found
    ) throws(KeyringError) -> (found: Found, locks: [String: ChangeSnapshot.CollectionState]) {
        func locks() throws(KeyringError) -> [String: ChangeSnapshot.CollectionState] {
            var locks: [String: ChangeSnapshot.CollectionState] = [:]
            for collection in collections { locks[collection] = ChangeSnapshot.state(locked: try call.collectionLocked(at: collection)) }
            return locks
        }
        var attempt = 1
        while true {
            let before = try locks()
            let found = try search()
            TestPause.at("watch-searched")
            let after = try locks()
            if before == after { return (found, after) }
            if attempt == 3 {
                return (found, after.merging(before) { after, before in after == .unlocked && before == .unlocked ? .unlocked : .locked })
            }
            attempt += 1
        }
    }

    /// An item's collection: its path without the last element.
    static func collection(of item: String) -> String {
        item.lastIndex(of: "/").map { String(item[..<$0]) } ?? item
    }
}
