#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The Secret Service on the session bus (gnome-keyring, KWallet, KeePassXC, oo7-daemon) as a
/// `KeyringStore`: each call is one `ServiceCall.run`, whose unlock-on-demand, deadline and
/// provider quirks are shared by all.
struct SecretServiceStore: KeyringStore {
    func search(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> [KeyringItem] {
        try ServiceCall.run(timeout: options.timeout) { call throws(KeyringError) in
            let found = try call.search(attributes)
            // Nothing found while a locked KeePassXC database may hide matches is not "no items".
            if found.isEmpty, try call.missCouldBeHidden() { throw .locked(itemExists: false) }
            return found
        }
    }

    func searchProvingMiss(
        _ attributes: [String: String], keeping keep: (KeyringItem) -> Bool, _ options: CallOptions
    ) throws(KeyringError) -> [KeyringItem] {
        try ServiceCall.run(timeout: options.timeout) { call throws(KeyringError) -> [KeyringItem] in
            let kept = try call.search(attributes).filter(keep)
            if kept.isEmpty || kept.contains(where: \.isLocked) { try call.throwIfLockedMiss(kept) }
            return kept
        }
    }

    func list(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> [KeyringItem] {
        try ServiceCall.run(timeout: options.timeout, unlock: options.unlock) { call throws(KeyringError) -> [KeyringItem] in
            let items = try call.search(attributes)
            // A locked item whose attributes cannot be read cannot say whose it is: not listable.
            if items.contains(where: \.hidesAttributes) { throw .locked(itemExists: true) }
            if items.isEmpty { try call.throwIfLockedMiss(items) }
            return items
        }
    }

    func lookup(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> Data? {
        try ServiceCall.run(timeout: options.timeout, unlock: options.unlock) { call throws(KeyringError) in
            try call.lookup(attributes)
        }
    }

    func firstItem(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> (item: KeyringItem, secret: Data)? {
        try ServiceCall.run(timeout: options.timeout, unlock: options.unlock) { call throws(KeyringError) in
            try call.readFirst(try call.search(attributes)).map { ($0.item, $0.bytes) }
        }
    }

    func readAll(
        _ attributes: [String: String], lostAsEmpty: Bool, _ options: CallOptions
    ) throws(KeyringError) -> [(item: KeyringItem, secret: Data)] {
        try ServiceCall.run(timeout: options.timeout, unlock: options.unlock) {
            call throws(KeyringError) -> [(item: KeyringItem, secret: Data)] in
            let items = try call.search(attributes)
            try call.throwIfAnyLocked(items)
            var result: [(item: KeyringItem, secret: Data)] = []
            for item in items {
                do throws(KeyringError) {
                    // Deleted between the search and this read: not there any more.
                    if let (bytes, _) = try call.secretOfExistingItem(at: item.objectPath) { result.append((item, bytes)) }
                } catch .valueLost where lostAsEmpty {
                    result.append((item, Data()))
                }
            }
            if result.isEmpty { try call.throwIfLockedMiss([]) }
            return result
        }
    }

    /// When matches exist, none is locked and every value is non-empty, they are read without
    /// encryption (a `plain` session) in two round trips; otherwise as `readAll`.
    func readAllNonSecret(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> [(
        item: KeyringItem, secret: Data
    )] {
        try plainFirst(attributes, withProperties: true, options) { found in
            found.map { (item: $0.item!, secret: $0.secret) }
        } otherwise: { rest throws(KeyringError) in
            try readAll(attributes, lostAsEmpty: true, rest)
        }
    }

    /// One SearchItems and one GetSecrets call, through a `plain` session when it reads plainly.
    func soleSecret(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> Data? {
        try plainFirst(attributes, withProperties: false, options) { found in
            found.count == 1 ? found[0].secret : nil
        } otherwise: { rest throws(KeyringError) in
            try ServiceCall.run(timeout: rest.timeout) { call throws(KeyringError) -> Data? in
                let paths = try call.searchItems(attributes)
                guard paths.unlocked.count == 1, paths.locked.isEmpty else { return nil }
                return try call.secret(at: paths.unlocked[0])?.bytes
            }
        }
    }

    /// Tries `PlainRead`; when it declines, runs `fullPath` with the time that is left. A timeout
    /// anywhere reports the whole timeout.
    private func plainFirst<T>(
        _ attributes: [String: String], withProperties: Bool, _ options: CallOptions, _ found: ([PlainRead.Match]) -> T,
        otherwise fullPath: (CallOptions) throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        let deadline = CallDeadline(timeout: options.timeout)
        if let matches = try PlainRead.read(attributes, withProperties: withProperties, until: deadline) {
            return found(matches)
        }
        var rest = options
        rest.timeout = deadline.remaining
        if deadline.hasPassed { throw deadline.timedOut }
        do throws(KeyringError) {
            return try fullPath(rest)
        } catch .timedOut {
            throw deadline.timedOut
        }
    }

    func store(
        _ secret: Data, attributes: [String: String], label: String, contentType: String, _ options: CallOptions
    ) throws(KeyringError) {
        let deadline = CallDeadline(timeout: options.timeout)
        try ProcessCreationLock.with(deadline) { () throws(KeyringError) in
            try ServiceCall.run(deadline: deadline, unlock: options.unlock) { call throws(KeyringError) in
                call.notes.mayCreate = true
                if try call.updateExactly(attributes, secret: secret, contentType: contentType, label: label) { return }
                try CreationLock.with(call, for: attributes) { () throws(KeyringError) in
                    if try call.updateExactly(attributes, secret: secret, contentType: contentType, label: label) { return }
                    try call.createItem(attributes: attributes, label: label, secret: secret, contentType: contentType)
                }
            }
        }
    }

    func withCreationLock<T>(
        for attributes: [String: String], _ options: CallOptions, _ body: () throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        let deadline = CallDeadline(timeout: options.timeout)
        return try ProcessCreationLock.with(deadline, cancellation: nil) { () throws(KeyringError) -> T in
            let name = CreationLock.lockName(for: attributes)
            let acquisition = try ServiceCall.run(deadline: deadline) { call throws(KeyringError) in
                try CreationLock.acquire(name, in: call)
            }
            switch acquisition {
            case .acquired(let owned):
                // Straight on the owning connection: waiting for the service gate, which another
                // thread may hold on a hung daemon, could drop the release and keep the name till exit.
                defer { owned.release() }
                return try body()
            case .alreadyOwned:
                return try body()
            case .refused:
                return try CreationFallbackLock.with(deadline, isCancelled: { Deadline.isCancelled(nil) }, body)
            }
        }
    }

    func insertIfAbsent(
        _ secret: Data, attributes: () -> [String: String], matching: [String: String], label: String, contentType: String,
        order: ItemOrder, _ options: CallOptions
    ) throws(KeyringError) -> InsertOutcome {
        let deadline = CallDeadline(timeout: options.timeout)
        return try ProcessCreationLock.with(deadline, cancellation: nil) { () throws(KeyringError) -> InsertOutcome in
            try ServiceCall.run(deadline: deadline, unlock: options.unlock) { call throws(KeyringError) -> InsertOutcome in
                call.notes.mayCreate = true
                return try CreationLock.with(call, for: matching) { (exclusive: Bool) throws(KeyringError) -> InsertOutcome in
                    if let found = try call.readFirst(try call.search(matching), order: order) {
                        return .existing(item: found.item, secret: found.bytes)
                    }
                    TestPause.at("before-create")
                    let path = try call.createItem(attributes: attributes(), label: label, secret: secret, contentType: contentType)
                    // Always search again: a creator the lock did not exclude (the bus refused the
                    // name, a client that takes no lock) may have stored one too. Converge on
                    // "the" item, as every reader does.
                    var winner = try call.readFirst(try call.search(matching), order: order)
                    if !exclusive, winner?.item.objectPath == path {
                        // Only the flock stood in: a twin stamped before this one may still be on
                        // its way. Let it appear (within the deadline) before this one is handed out.
                        TestPause.at("after-create")
                        deadline.sleep(upTo: min(Self.settleDelay, deadline.remaining / 2))
                        winner = try call.readFirst(try call.search(matching), order: order)
                    }
                    if let winner, winner.item.objectPath != path {
                        // Nobody was handed the item this call made: remove it, so an existing
                        // item leaves the keyring as it was. If that fails, the next read's twin
                        // cleanup removes it.
                        do throws(KeyringError) {
                            try call.deleteItem(at: path)
                        } catch let error where ServiceCall.isSaveAgainFailure(error) {
                            throw error
                        } catch {}
                        return .existing(item: winner.item, secret: winner.bytes)
                    }
                    return .inserted
                }
            }
        }
    }

    /// How long a creator the bus lock did not exclude waits for a twin before handing its value out.
    static let settleDelay: Duration = .seconds(1)

    func delete(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> Int {
        try ServiceCall.run(timeout: options.timeout, unlock: options.unlock) { call throws(KeyringError) in
            let items = try call.search(attributes)
            try call.throwIfAnyLocked(items)
            // A miss while a collection is locked may be a hidden item (KeePassXC): not "nothing to delete".
            if items.isEmpty { try call.throwIfLockedMiss(items) }
            try call.deleteItems(items)
            return items.count
        }
    }

    func secret(of item: KeyringItem, _ options: CallOptions) throws(KeyringError) -> Data? {
        try BusCall.requireObjectPath(item.objectPath, naming: "the item's path")
        return try ServiceCall.run(timeout: options.timeout, unlock: options.unlock) { call throws(KeyringError) -> Data? in
            // KWallet renumbers its items on a restart: the path may name another item now, and the
            // item found locked may be at another path, so it is found first, then its lock asked.
            guard let path = try call.currentPath(of: item) else {
                // Gone, or hidden by a locked collection (KeePassXC hides a locked database's items).
                if try call.itemCouldBeHidden(at: item.objectPath) {
                    throw item.isLocked ? call.lockedError(at: [item.objectPath]) : .locked(itemExists: false)
                }
                return nil
            }
            // The item was locked when searched; it may have been unlocked since (by a prompt too).
            if item.isLocked, try call.properties(at: path, isLocked: false)?.isLocked != false {
                throw call.lockedError(at: [path])
            }
            if let secret = try call.secretOfExistingItem(at: path) { return secret.bytes }
            if try call.itemCouldBeHidden(at: path) { throw .locked(itemExists: false) }
            return nil
        }
    }

    func delete(item: KeyringItem, _ options: CallOptions) throws(KeyringError) {
        try BusCall.requireObjectPath(item.objectPath, naming: "the item's path")
        return try ServiceCall.run(timeout: options.timeout, unlock: options.unlock) { call throws(KeyringError) in
            // KWallet renumbers its items on a restart: never delete another item at its old path.
            guard let path = try call.currentPath(of: item) else { return }
            do throws(KeyringError) {
                try call.deleteItem(at: path)
            } catch let error where ServiceCall.isSaveAgainFailure(error) {
                throw error
            } catch {
                // Only an item that is really gone makes a failed delete a success; one a locked
                // collection may hide (KeePassXC) is not known to be gone.
                if try call.properties(at: path, isLocked: false) != nil { throw error }
                if try call.itemCouldBeHidden(at: path) { throw .locked(itemExists: false) }
            }
        }
    }

    func status(_ options: CallOptions) -> ServiceStatus {
        var status = ServiceStatus(
            isReachable: false, provider: nil, hasDefaultCollection: false, isLocked: false,
            defaultCollectionLabel: nil, problem: nil)
        do {
            try ServiceCall.run(timeout: options.timeout) { call throws(KeyringError) in
                // Reachable only once the daemon has answered a call (a stopped daemon has not).
                let collection = try call.defaultCollectionState()
                status.isReachable = true
                status.provider = Provider.processName(in: call)
                status.defaultCollectionLabel = collection?.label
                status.hasDefaultCollection = collection != nil
                status.isLocked = collection?.locked ?? false
                // For display only: a collection that cannot be read leaves the list empty, and the
                // status (what calls depend on) stands.
                status.collections = (try? call.collectionStatuses()) ?? []
            }
            if !status.hasDefaultCollection {
                status.problem = .noDefaultCollection
            } else if status.isLocked {
                status.problem = .locked(itemExists: false)
            }
        } catch {
            status.problem = error
        }
        return status
    }

    var isSessionBusConfigured: Bool { Keyring.isSessionBusConfigured }

    func startWatch(
        _ scope: ChangeScope, _ options: CallOptions, _ continuation: AsyncStream<KeyringChange>.Continuation
    ) throws(KeyringError) -> @Sendable () -> Void {
        try ChangeWatch.start(ServiceChangeSource(scope, timeout: options.timeout), continuation)
    }
}

// MARK: - Lock state
// The D-Bus calls and the prompt wait live in ServiceCall+Prompt.swift, the one home of lock
// changes, which the unlock-on-demand of every other call uses too.

extension SecretServiceStore {
    func isLocked(_ options: CallOptions) throws(KeyringError) -> Bool {
        try ServiceCall.run(timeout: options.timeout) { call throws(KeyringError) in
            try call.defaultCollectionLocked().locked
        }
    }

    func lockCollection(_ options: CallOptions) throws(KeyringError) {
        try ServiceCall.run(timeout: options.timeout) { call throws(KeyringError) in
            let (path, locked) = try call.defaultCollectionLocked()
            if locked { return }
            switch try call.changeLock(.lock, of: path) {
            case .completed: break
            case .dismissed:
                // KeePassXC 2.7.4 does this while one of its dialogs is open (an unlock dialog a
                // client left unanswered): it then locks nothing until that dialog closes.
                throw .serviceFailure(domain: "KeyringIdentity", code: -1, message: Keyring.lockRefused)
            case .unanswered: throw call.callDeadline.timedOut
            }
            if try call.collectionLocked(at: path) != true {
                throw .serviceFailure(domain: "KeyringIdentity", code: -1, message: "the service did not lock the default collection")
            }
        }
    }

    func unlockCollection(_ options: CallOptions) throws(KeyringError) {
        // A locked collection throws `.locked`, which `ServiceCall.run` under `.prompt` answers with
        // the unlock prompt and one more run: the unlock path every call takes, nothing of its own.
        try ServiceCall.run(timeout: options.timeout, unlock: options.unlock) { call throws(KeyringError) in
            // Named, so that the unlock opens the default collection, as documented, and nothing else.
            let collection = try call.defaultCollectionLocked()
            if collection.locked { throw call.lockedError(at: [collection.path], itemExists: false) }
        }
    }
}

// MARK: - SecretStore's item

extension SecretServiceStore {
    func data(forKey key: SecretStore.Key, of wrapper: SecretStore, _ options: CallOptions) throws(KeyringError) -> Data? {
        try ServiceCall.run(timeout: options.timeout, unlock: options.unlock) { call throws(KeyringError) in
            if key == .valueData { return try wrapper.readValue(call) }
            let items = try call.search(wrapper.searchAttributes).filter(wrapper.owns)
            try call.throwIfAnyLocked(items)
            guard let item = items.first else {
                try call.throwIfLockedMiss(items)
                return nil
            }
            switch key {
            case .label: return Data(item.label.utf8)
            default: return item.attributes[key.attributeName].map { Data($0.utf8) }
            }
        }
    }

    func reset(_ wrapper: SecretStore, _ options: CallOptions) throws(KeyringError) {
        try ServiceCall.run(timeout: options.timeout, unlock: options.unlock) { call throws(KeyringError) in
            let items = try call.search(wrapper.searchAttributes).filter(wrapper.owns)
            try call.throwIfAnyLocked(items)
            // A miss while a collection is locked may be a hidden item (KeePassXC): not "done".
            guard let target = items.first else { return try call.throwIfLockedMiss(items) }
            try wrapper.refuseAmbiguous(items)
            // The item reads use, and copies of it that differ at most in the schema stamp.
            let same = SecretStore.comparable(target.attributes)
            try call.deleteItems(items.filter { $0.objectPath == target.objectPath || SecretStore.comparable($0.attributes) == same })
        }
    }

    func storedItem(of wrapper: SecretStore, _ options: CallOptions) throws(KeyringError) -> (item: KeyringItem, value: Data)? {
        try ServiceCall.run(timeout: options.timeout, unlock: options.unlock) {
            call throws(KeyringError) -> (item: KeyringItem, value: Data)? in
            try call.readFirst(try call.search(wrapper.searchAttributes).filter(wrapper.owns)).map { ($0.item, $0.bytes) }
        }
    }

    func isLocked(of wrapper: SecretStore, _ options: CallOptions) throws(KeyringError) -> Bool {
        try ServiceCall.run(timeout: options.timeout) { call throws(KeyringError) in
            let items = try call.search(wrapper.searchAttributes).filter(wrapper.owns)
            if !items.isEmpty { return items.contains(where: \.isLocked) }
            return try call.defaultCollectionLocked().locked
        }
    }

    func write(
        _ payload: SecretStore.Payload, forKey key: SecretStore.Key, of wrapper: SecretStore, _ options: CallOptions
    ) throws(KeyringError) {
        let deadline = CallDeadline(timeout: options.timeout)
        try ProcessCreationLock.with(deadline) { () throws(KeyringError) in
            try ServiceCall.run(deadline: deadline, unlock: options.unlock) { call throws(KeyringError) in
                call.notes.mayCreate = true
                if try wrapper.update(call, payload, forKey: key) { return }
                // First write: the creation lock (shared by every client of the keyring) means two
                // processes never create two items.
                try CreationLock.with(call, for: wrapper.searchAttributes) { () throws(KeyringError) in
                    if try wrapper.update(call, payload, forKey: key) { return }
                    try wrapper.create(call, payload, forKey: key)
                }
            }
        }
    }
}
