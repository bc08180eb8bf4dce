internal import CLibSecret
import Dispatch
internal import KeyringShim
import Synchronization

/// Change notifications from the Secret Service's signals, which `ServiceSignals` hands over.
///
/// A signal names an object path only, so each one is turned into a change by reading that item's
/// properties (typed calls) and comparing them with what this watch saw last: the map of path →
/// item it keeps is also what names a deleted item, whose attributes can no longer be read. Lock
/// changes are the `Locked` property of the collections that hold a matching item and of the
/// default one, read again when one of them signals. A change of the service's owner is a stop and
/// a start; after a start the items are looked up again and compared with the map. None of these
/// calls has the bus start a daemon (`startsService: false`): the watch follows the one it watches.
///
/// The filter's thread only copies a signal into `pending` (at most `pendingLimit`; past that they
/// are dropped for one full look), and this watch's own serial queue does the calls. So nothing
/// queues without bound, and a slow consumer holds at most `KeyringChanges.bufferLimit` changes.
final class ServiceChangeWatch: @unchecked Sendable {
    // Sound as Sendable: `pending` and `listener` are `Guarded`; `items`, `hidden`, `collections` and `running`
    // are touched only on `queue` (and by `start` inside `queue.sync`, before any drain can run).
    private struct Pending {
        var signals: [ServiceSignals.Signal] = []
        var overflowed = false
        var scheduled = false
        var stopped = false
    }

    static let pendingLimit = 64

    private let scope: ChangeScope
    private let timeout: Duration
    private let continuation: AsyncStream<KeyringChange>.Continuation
    private let queue = DispatchQueue(label: "KeyringIdentity.changes")
    private let pending = Guarded(Pending())
    private let listener = Guarded<UInt64?>(nil)
    private var items: [String: KeyringItem] = [:]
    /// A digest of each seen item's secret (never the secret), where it could be read: KWallet signals
    /// ItemChanged for writes that change nothing (each step of another client's create), which
    /// are not reported.
    private var digests: [String: String] = [:]
    /// Watched collections and whether each is locked.
    private var collections: [String: Bool] = [:]
    private var running = true
    /// Paths whose deletion was reported, so that a late signal for one reports nothing more.
    private var reportedGone: Set<String> = []
    /// Known items missing from their locked collection (KeePassXC's, while it is locked).
    private var hidden: Set<String> = []

    private func noteGone(_ path: String) {
        if reportedGone.count >= 256 { reportedGone.removeAll() }
        reportedGone.insert(path)
    }

    /// How many watches are alive: what a leak test counts (`LeakCounts`), exactly, instead of memory.
    static let liveCount = Atomic<Int>(0)

    private init(_ scope: ChangeScope, timeout: Duration, _ continuation: AsyncStream<KeyringChange>.Continuation) {
        self.scope = scope
        self.timeout = timeout
        self.continuation = continuation
        Self.liveCount.add(1, ordering: .relaxed)
    }

    deinit { Self.liveCount.subtract(1, ordering: .relaxed) }

    /// Subscribes and takes the first look; returns what stops the watch.
    static func start(
        _ scope: ChangeScope, timeout: Duration, _ continuation: AsyncStream<KeyringChange>.Continuation
    ) throws(KeyringError) -> @Sendable () -> Void {
        let watch = ServiceChangeWatch(scope, timeout: timeout, continuation)
        // Listening before the first look, so that no change between the two is missed.
        let key = ServiceSignals.addListener { [watch] signal in watch.receive(signal) }
        watch.listener.withLock { $0 = key }
        let result: Result<Void, KeyringError> = watch.queue.sync {
            Result { () throws(KeyringError) in
                try ServiceCall.run(timeout: timeout) { call throws(KeyringError) in
                    _ = ServiceSignals.synchronize(call)
                    try watch.look(call, report: false)
                }
            }
        }
        if case .failure(let error) = result {
            watch.stop()
            throw error
        }
        return { watch.stop() }
    }

    func stop() {
        pending.withLock {
            $0.stopped = true
            $0.signals.removeAll()
        }
        if let key = listener.withLock({ key in
            defer { key = nil }
            return key
        }) {
            ServiceSignals.removeListener(key)
        }
    }

    /// On GDBus's worker thread: copy, never call.
    private func receive(_ signal: ServiceSignals.Signal) {
        let schedule = pending.withLock { pending -> Bool in
            if pending.stopped || Self.repeatsPending(signal, pending.signals) { return false }
            if pending.signals.count >= Self.pendingLimit {
                // One full look replaces the dropped item signals; a change of owner is kept.
                pending.overflowed = true
                pending.signals.removeAll { $0.newOwner == nil }
                if pending.signals.count >= Self.pendingLimit { pending.signals.removeFirst() }
            }
            pending.signals.append(signal)
            if pending.scheduled { return false }
            pending.scheduled = true
            return true
        }
        if schedule { queue.async { self.drain() } }
    }

    /// Whether `signal` repeats the latest pending signal about the same object, with no change of
    /// owner since: handling reads the object as it is then, so the repeat adds nothing. KeePassXC
    /// sends each item signal from the collection's path and its alias's, three times over (about
    /// 60 signals for one create and delete), which overflowed `pendingLimit`; the full look that
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

    private func drain() {
        while true {
            let batch = pending.withLock { pending -> (signals: [ServiceSignals.Signal], overflowed: Bool)? in
                if pending.stopped || (pending.signals.isEmpty && !pending.overflowed) {
                    pending.scheduled = false
                    return nil
                }
                defer {
                    pending.signals.removeAll()
                    pending.overflowed = false
                }
                return (pending.signals, pending.overflowed)
            }
            guard let batch else { return }
            for signal in batch.signals where !isStopped {
                if let newOwner = signal.newOwner {
                    ownerChanged(to: newOwner)
                } else if running {
                    TestPause.at("watch-handles-signal")
                    // A signal whose object cannot be read now (the daemon going or gone) is left to the next look.
                    try? ServiceCall.run(timeout: timeout, startsService: false) { call throws(KeyringError) in try handle(signal, call) }
                }
            }
            if batch.overflowed && running {
                try? ServiceCall.run(timeout: timeout, startsService: false) { call throws(KeyringError) in try look(call, report: true) }
            }
        }
    }

    private var isStopped: Bool { pending.withLock { $0.stopped } }

    private func emit(_ change: KeyringChange) {
        guard !isStopped else { return }
        continuation.yield(change)
    }

    private func ownerChanged(to newOwner: String) {
        ServiceSignals.followOwner()
        if running { emit(KeyringChange(.serviceStopped)) }
        running = !newOwner.isEmpty
        guard running else { return }
        emit(KeyringChange(.serviceStarted))
        owner += 1
        // A new daemon: its items may differ from those the old one had.
        try? ServiceCall.run(timeout: timeout, startsService: false) { call throws(KeyringError) in
            _ = ServiceSignals.synchronize(call)
            try look(call, report: true)
        }
        lookAgain(afterStartOf: owner, delays: Self.lookDelaysAfterStart)
    }

    /// Looks again this long after a daemon takes the name. gnome-keyring started with `--unlock`
    /// owns the name before it unlocks its keyring and sends no signal for that unlock, so a look
    /// made at once may see it locked and miss the change; a look that failed (the daemon still
    /// loading) is tried again too. Each look reports only what differs from what this watch saw.
    /// On a loaded machine the unlock came more than 3 s after the name (CI, under the sanitizers),
    /// so the looks go on, further apart, for half a minute.
    static let lookDelaysAfterStart: [Double] = [0.25, 1, 3, 6, 12, 24]

    /// Counts daemons this watch has seen take the name, so a later look is skipped once another took it.
    private var owner = 0

    private func lookAgain(afterStartOf started: Int, delays: [Double]) {
        guard let delay = delays.first else { return }
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, !self.isStopped, self.running, self.owner == started else { return }
            try? ServiceCall.run(timeout: self.timeout, startsService: false) { call throws(KeyringError) in
                try self.look(call, report: true)
            }
            self.lookAgain(afterStartOf: started, delays: Array(delays.dropFirst()))
        }
    }

    private static let collectionInterface = "org.freedesktop.Secret.Collection"
    private static let serviceInterface = "org.freedesktop.Secret.Service"

    private func handle(_ signal: ServiceSignals.Signal, _ call: borrowing ServiceCall) throws(KeyringError) {
        switch (signal.interface, signal.member) {
        case (Self.collectionInterface, "ItemCreated"), (Self.collectionInterface, "ItemChanged"):
            if let path = signal.object { try itemSeen(path, call) }
        case (Self.collectionInterface, "ItemDeleted"):
            if let path = signal.object { try itemDeleted(path, call) }
        case (Self.serviceInterface, "CollectionCreated"), (Self.serviceInterface, "CollectionDeleted"):
            try look(call, report: true)
        case (Self.serviceInterface, "CollectionChanged"):
            if let path = signal.object { try lockSeen(path, call) }
        case ("org.freedesktop.DBus.Properties", _):
            if collections[signal.path] != nil {
                try lockSeen(signal.path, call)
            } else if items[signal.path] != nil {
                try itemSeen(signal.path, call)
            }
        default: break
        }
    }

    private func itemSeen(_ path: String, _ call: borrowing ServiceCall) throws(KeyringError) {
        guard let item = try call.properties(at: path, isLocked: false) else { return try vanished(path, call) }
        try seen(item, call)
    }

    /// What the keyring shows of an item now, compared with what this watch saw of it.
    private func seen(_ item: KeyringItem, _ call: borrowing ServiceCall) throws(KeyringError) {
        let path = item.objectPath
        let before = items[path]
        hidden.remove(path)
        // A locked item may show no attributes, or hashed ones (gnome-keyring, loaded from disk): it stays what it was.
        if item.hidesAttributes {
            if let before { items[path] = Self.item(before, locked: true) }
            return
        }
        guard scope.matches(item) else {
            if let before {
                items[path] = nil
                emit(KeyringChange(.deleted, item: before))
            }
            return
        }
        let digestBefore = digests[path]
        // Every call before any state changes: `run` may retry this on a new session (a session
        // key kwalletd does not share), and the retry must compare with what this try did.
        let digestNow = try digest(of: item, call)
        if before == nil { try watchCollection(of: path, call) }
        items[path] = item
        reportedGone.remove(path)
        // An unreadable secret (locked) keeps the digest seen before, so an unlock compares with it.
        digests[path] = digestNow ?? digestBefore
        guard let before else { return emit(KeyringChange(.created, item: item)) }
        // ItemChanged for a lock of its collection is a lock change, reported as one. At an unlock the
        // item is compared with what it was before it locked: the first ItemChanged after a restart
        // into a locked keyring may carry another client's update too (KWallet, KeePassXC).
        // Only two known secrets can differ. Unreadable is not a change: an item deleted between its
        // properties and its secret is left out of GetSecrets with no error (gnome-keyring, KeePassXC:
        // scripts/providers/watch-reads.py), and its deletion follows; a session kwalletd keyed
        // wrongly is replaced and read again (`secretIfReadable`).
        let changed = ChangeRule.isChanged(
            ChangeSnapshot.Entry(item: before, secretDigest: digestBefore), ChangeSnapshot.Entry(item: item, secretDigest: digestNow))
        // Newly locked: the lock is the change, reported for the collection.
        if changed && !(item.isLocked && !before.isLocked) { emit(KeyringChange(.changed, item: item)) }
    }

    /// The digest of an unlocked item's secret; nil when it cannot be read (locked, gone).
    private func digest(of item: KeyringItem, _ call: borrowing ServiceCall) throws(KeyringError) -> String? {
        guard !item.isLocked, let secret = try call.secretIfReadable(at: item.objectPath) else { return nil }
        return Digest.sha256Hex(Array(secret.bytes))
    }

    private func itemDeleted(_ path: String, _ call: borrowing ServiceCall) throws(KeyringError) {
        try knownItemMissing(path, call)
    }

    /// An item gone before its signal could be read. One this process created (and so knows)
    /// came and went: both are reported. Another process's is not known, and is not reported.
    private func vanished(_ path: String, _ call: borrowing ServiceCall) throws(KeyringError) {
        if items[path] != nil { return try knownItemMissing(path, call) }
        if !reportedGone.contains(path), let made = ServiceSignals.createdHere(path), scope.matches(made) {
            // Once: a provider may send several signals for that path (KeePassXC's ItemChanged).
            noteGone(path)
            emit(KeyringChange(.created, item: made))
            return emit(KeyringChange(.deleted, item: made))
        }
    }

    /// A known item that a signal says is gone, or that cannot be read. KeePassXC takes every item of
    /// a database off the bus when it locks, with ItemDeleted, and puts them back when it unlocks,
    /// with no signal per item; a signal may be handled after either. So the keyring is asked now:
    /// an item it still finds is seen as it is; one missing from a locked collection is hidden until
    /// that collection unlocks; only one missing from an unlocked collection is deleted.
    private func knownItemMissing(_ path: String, _ call: borrowing ServiceCall) throws(KeyringError) {
        guard let before = items[path] else { return }
        let collection = Self.collection(of: path)
        let (found, locks) = try searchHoldingLocks([collection], call) { () throws(KeyringError) in
            try call.searchItems(scope.attributes)
        }
        for (list, isLocked) in [(found.unlocked, false), (found.locked, true)] where list.contains(path) {
            if let item = try call.properties(at: path, isLocked: isLocked) { return try seen(item, call) }
        }
        // Locked, or gone from the bus (a database closed, a daemon still loading): hidden, not deleted.
        if locks[collection] != false {
            items[path] = Self.item(before, locked: true)
            hidden.insert(path)
            return
        }
        itemGone(path)
    }

    private func itemGone(_ path: String) {
        digests[path] = nil
        hidden.remove(path)
        guard let before = items.removeValue(forKey: path) else { return }
        noteGone(path)
        emit(KeyringChange(.deleted, item: before))
    }

    private func lockSeen(_ collection: String, _ call: borrowing ServiceCall) throws(KeyringError) {
        guard let before = collections[collection] else { return }
        guard let locked = try call.collectionLocked(at: collection) else { return try look(call, report: true) }
        collections[collection] = locked
        guard locked != before else { return }
        emit(KeyringChange(locked ? .locked : .unlocked, collection: collection))
        // Unlocked: each item hidden meanwhile is back, or was deleted while the collection was locked.
        if !locked {
            for path in hidden.sorted() where Self.collection(of: path) == collection { try knownItemMissing(path, call) }
        }
    }

    private func watchCollection(of item: String, _ call: borrowing ServiceCall) throws(KeyringError) {
        let collection = Self.collection(of: item)
        guard collections[collection] == nil, let locked = try call.collectionLocked(at: collection) else { return }
        collections[collection] = locked
    }

    /// Looks up the matching items and the watched collections' lock state; with `report`, emits
    /// what differs from what was seen before.
    private func look(_ call: borrowing ServiceCall, report: Bool) throws(KeyringError) {
        let watched = Set(items.keys.map(Self.collection(of:))).union([try call.defaultCollectionPath()].compactMap { $0 })
        let (found, heldLocks) = try searchHoldingLocks(watched, call) { () throws(KeyringError) in try call.search(scope.attributes) }
        var now: [String: KeyringItem] = [:]
        for item in found.filter(scope.owns) {
            let seen = items[item.objectPath].map { Self.item($0, locked: true) }
            now[item.objectPath] = item.hidesAttributes ? seen ?? item : item
        }
        var locks = heldLocks
        for collection in Set(now.keys.map(Self.collection(of:))).subtracting(watched) {
            if let locked = try call.collectionLocked(at: collection) { locks[collection] = locked }
        }
        // A known item at a new path is the same item moved: KWallet renumbers its items' paths on
        // every start, so the look after a restart would report each as deleted and created.
        // State changes only at the end: `run` may retry this look on a new session.
        var previous = items
        var previousDigests = digests
        for (path, item) in now.sorted(by: { $0.key < $1.key }) where previous[path] == nil {
            guard let (old, _) = previous.first(where: { now[$0.key] == nil && Self.sameItem($0.value, item) }) else { continue }
            previous[path] = previous.removeValue(forKey: old).map { Self.item($0, at: path) }
            previousDigests[path] = previousDigests.removeValue(forKey: old)
        }
        // As in `knownItemMissing`: a known item missing from a collection that is locked or gone
        // from the bus (KeePassXC right after a start, before its database is open) is hidden, not deleted.
        var hiddenNow: Set<String> = []
        for (path, before) in previous where now[path] == nil && locks[Self.collection(of: path)] != false {
            now[path] = Self.item(before, locked: true)
            hiddenNow.insert(path)
        }
        // Read before anything is reported, so that a retry on a new session reports nothing twice.
        var sums: [String: String] = [:]
        for (path, item) in now { sums[path] = try digest(of: item, call) }
        if report {
            // Digests too: a secret changed while no signal said so (a restart, dropped signals) is a change.
            let old = ChangeSnapshot(
                items: Dictionary(
                    uniqueKeysWithValues: previous.map {
                        ($0.key, ChangeSnapshot.Entry(item: $0.value, secretDigest: previousDigests[$0.key]))
                    }),
                collections: collections)
            let new = ChangeSnapshot(
                items: Dictionary(
                    uniqueKeysWithValues: now.map { ($0.key, ChangeSnapshot.Entry(item: $0.value, secretDigest: sums[$0.key])) }),
                collections: locks)
            ChangeRule.changes(from: old, to: new).forEach(emit)
        }
        items = now
        hidden = hiddenNow
        digests = sums.merging(previousDigests.filter { now[$0.key] != nil }) { new, _ in new }
        collections = locks
    }

    /// Runs `search` between two reads of `collections`' lock state (nil: gone from the bus), and again
    /// while one of them changed meanwhile, so that an item missing from the search is judged by the
    /// lock its collection had during it. KeePassXC hides a locked database's items and may unlock
    /// between two calls: a search made while locked, with the lock read after the unlock, reported
    /// a kept item as deleted after a restart (seen under load: the look's SearchItems answered
    /// empty, then Locked answered false). After three tries a collection still changing counts as
    /// locked, so its missing items are hidden, and its next signal or look settles them.
    private func searchHoldingLocks<Found>(
        _ collections: Set<String>, _ call: borrowing ServiceCall, _ search: () throws(KeyringError) -> Found
    ) throws(KeyringError) -> (found: Found, locks: [String: Bool]) {
        func locks() throws(KeyringError) -> [String: Bool] {
            var locks: [String: Bool] = [:]
            for collection in collections { locks[collection] = try call.collectionLocked(at: collection) }
            return locks
        }
        var attempt = 1
        while true {
            let before = try locks()
            let found = try search()
            TestPause.at("watch-searched")
            let after = try locks()
            if before == after { return (found, after) }
            if attempt == 3 { return (found, after.merging(before) { after, before in after == false && before == false ? false : true }) }
            attempt += 1
        }
    }

    /// Whether two items at different paths are one item: the same attributes (as compared for a
    /// change) and label, with attributes to compare (a locked item may show none).
    static func sameItem(_ before: KeyringItem, _ after: KeyringItem) -> Bool {
        let attributes = SecretStore.comparable(before.attributes)
        return !attributes.isEmpty && attributes == SecretStore.comparable(after.attributes) && before.label == after.label
    }

    /// An item's collection: its path without the last element.
    static func collection(of item: String) -> String {
        item.lastIndex(of: "/").map { String(item[..<$0]) } ?? item
    }

    /// `item` at another path (moved) or with another lock state.
    static func item(_ item: KeyringItem, at path: String? = nil, locked: Bool? = nil) -> KeyringItem {
        KeyringItem(
            objectPath: path ?? item.objectPath, attributes: item.attributes, label: item.label, isLocked: locked ?? item.isLocked,
            created: item.created,
            modified: item.modified)
    }
}
