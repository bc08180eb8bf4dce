import Foundation
import Keyring

/// An in-memory keyring for an app's unit tests, with a lock, an unlock prompt you answer in
/// advance, and faults you inject. Select it with ``Keyring/init(memory:timeout:unlock:)``; every
/// `Keyring`, `SecretStore` and `IdentifierResolver` call on that keyring then goes here.
///
/// It behaves as the ``Provider`` you name does, through this library, in what the library keeps
/// as facts about each real daemon and the memory keyring can show. With `.keePassXC` a locked collection hides its items, so
/// a read while locked is `.locked`, never absent; with `.kwallet` item paths are numbered anew at
/// each ``restart(locked:)``; with `.oo7` an update replaces the item. Everywhere: items and their
/// attributes, one item per `SecretStore`, twins (several items answering one query, "the" item
/// being the oldest), content types, and an unlock prompt that is answered, dismissed or left
/// unanswered.
///
/// ```swift
/// let memory = MemoryKeyring(provider: .keePassXC, locked: true)
/// let store = try SecretStore(identifier: "com.example.app", keyring: Keyring(memory: memory, unlock: .never))
/// #expect(throws: KeyringError.self) { try store.object(forKey: .valueData) }  // locked, never nil
/// memory.isLocked = false
/// memory.inject(.timedOut(seconds: 25), times: 1)                  // the next call times out
/// ```
///
/// Where it differs from a daemon: content types are kept on every provider (gnome-keyring reads
/// every secret back as `text/plain`); an unanswered prompt fails at once rather than at the call's
/// timeout; an injected fault fails at once too; nothing is shared with other processes;
/// `SecretStore` items carry no `xdg:schema` (so `SecretStore.items` names their writer as another
/// client); and, as on libsecret's file backend, an item is named by its attributes, so writing an
/// attribute key (`.account`, `.comment`) replaces the item: it gets a new `objectPath` and
/// `created` time, where gnome-keyring changes it in place. A `IdentifierResolver` on it keeps its
/// standard backup file and lock in a temporary directory of the keyring's, never in the user's
/// state directory.
///
/// Production keyrings never use it: only a keyring made with `init(memory:)` does, and this
/// module is a product of its own, for test targets.
public final class MemoryKeyring: Sendable {
    /// The real Secret Service daemon a memory keyring behaves as: the facts this library keeps
    /// about that daemon, the same ones its calls on the real daemon follow.
    public struct Provider: Sendable, Equatable, CustomStringConvertible {
        /// The daemon's name, as `idtool doctor` prints it.
        public let name: String
        package let quirks: Quirks
        /// gnome-keyring stamps `xdg:schema` on items stored without one when it loads them again.
        let stampsSchemaOnRestart: Bool

        /// A provider by its facts: what the tests of this package take from the real provider they run on.
        package init(name: String, quirks: Quirks) {
            self.init(name: name, quirks: quirks, stampsSchemaOnRestart: name == "gnome-keyring")
        }

        private init(name: String, quirks: Quirks, stampsSchemaOnRestart: Bool) {
            self.name = name
            self.quirks = quirks
            self.stampsSchemaOnRestart = stampsSchemaOnRestart
        }

        /// gnome-keyring: a locked collection's items are listed, marked locked; paths stay.
        public static let gnomeKeyring = Provider(name: "gnome-keyring", quirks: .gnomeKeyring, stampsSchemaOnRestart: true)
        /// KWallet (kwalletd5, kwalletd6): item paths are numbered anew at each start.
        public static let kwallet = Provider(name: "kwallet", quirks: .kwallet, stampsSchemaOnRestart: false)
        /// KeePassXC: a locked database hides its items, so a miss while locked is `.locked`.
        public static let keePassXC = Provider(name: "keepassxc", quirks: .keePassXC, stampsSchemaOnRestart: false)
        /// oo7-daemon: a locked collection hides its items, paths are numbered anew at each start,
        /// and an update replaces the item (a new path), as this library writes it there.
        public static let oo7 = Provider(name: "oo7-daemon", quirks: .oo7Daemon, stampsSchemaOnRestart: false)
        /// A daemon nobody knows: the strict facts (locked items hidden, paths numbered anew).
        public static let strict = Provider(name: "unknown", quirks: .strict, stampsSchemaOnRestart: false)

        /// The name.
        public var description: String { name }

        /// Whether a locked collection hides its items from searches.
        public var hidesLockedItems: Bool { !quirks.listsLockedMatches }
    }

    /// A fault the next calls meet, as a real session would show it. New faults are new static
    /// members: a switch over them needs a `default`.
    public struct Fault: Sendable, Equatable, CustomStringConvertible {
        enum Kind: Sendable, Equatable {
            case noSessionBus, noSecretService, timeout
            case error(KeyringError, writesOnly: Bool)
        }

        let kind: Kind

        /// No session bus: calls throw `KeyringError.noSessionBus`, and the session reports none
        /// (so `IdentifierResolver` may treat the machine as headless).
        public static let noSessionBus = Fault(kind: .noSessionBus)
        /// A bus on which no Secret Service is owned or activatable: calls throw `.noSecretService`.
        public static let noSecretService = Fault(kind: .noSecretService)
        /// The service does not answer within the call's timeout: calls throw `.timedOut`
        /// (at once, with the call's whole timeout).
        public static let timeout = Fault(kind: .timeout)
        /// Writes and deletions fail with `.serviceFailure`; reads work.
        public static let writeFails = Fault.error(
            .serviceFailure(domain: "g-dbus-error-quark", code: 0, message: "MemoryKeyring: the write failed (injected)"), writesOnly: true)

        /// Calls throw `error`; with `writesOnly`, only writes and deletions do.
        /// - Parameters:
        ///   - error: the error, by value.
        ///   - writesOnly: whether reads still work.
        /// - Returns: the fault.
        public static func error(_ error: KeyringError, writesOnly: Bool = false) -> Fault {
            Fault(kind: .error(error, writesOnly: writesOnly))
        }

        /// What a call meets.
        public var description: String {
            switch kind {
            case .noSessionBus: "no session bus"
            case .noSecretService: "no Secret Service"
            case .timeout: "timeout"
            case .error(let error, let writesOnly): (writesOnly ? "writes fail: " : "") + String(describing: error)
            }
        }

        /// Whether calls then find no session bus.
        var hidesSessionBus: Bool {
            switch kind {
            case .noSessionBus: true
            case .error(.noSessionBus, false): true
            default: false
            }
        }
    }

    /// How the unlock prompt a locked keyring shows is answered, for calls whose policy is `.prompt`.
    public enum UnlockAnswer: Sendable, Equatable {
        /// The user types the password: the keyring unlocks and the call goes on.
        case unlock
        /// The user cancels the prompt: the call throws `.locked(…, unlock: .dismissed)`.
        case dismiss
        /// Nobody answers: the call throws `.locked(…, unlock: .unanswered)` (at once here).
        case ignore
    }

    struct Stored: Sendable {
        var item: KeyringItem
        var secret: Data
        var contentType: String
    }

    struct State {
        var items: [Stored] = []
        var nextNumber = 1
        var locked = false
        var answer = UnlockAnswer.dismiss
        var prompts = 0
        var fault: (fault: Fault, remaining: Int)?
        var restarts = 0
    }

    let state: Guarded<State>
    /// Serializes changes: an exclusive operation reads and writes the items as one step.
    let changes = NSLock()
    /// The creation lock (`Keyring.withCreationLock`); recursive, as Keyring calls inside take it again.
    let creation = NSRecursiveLock()

    /// The daemon this keyring behaves as.
    public let provider: Provider

    /// Whether a locked collection's items are hidden from searches, as KeePassXC hides a locked
    /// database's; gnome-keyring and KWallet list them, marked locked.
    public var hidesLockedItems: Bool { provider.hidesLockedItems }

    /// An empty keyring with one default collection, behaving as `provider` does.
    /// - Parameters:
    ///   - provider: the daemon it behaves as; gnome-keyring by default.
    ///   - locked: whether the collection starts locked (as a login keyring does after an automatic login).
    public init(provider: Provider = .gnomeKeyring, locked: Bool = false) {
        self.provider = provider
        var initial = State()
        initial.locked = locked
        state = Guarded(initial)
        var template = Array((FileManager.default.temporaryDirectory.path + "/memory-keyring.XXXXXX").utf8CString)
        privateStateDirectory = mkdtemp(&template).map { String(cString: $0) }
    }

    /// An empty keyring that behaves as gnome-keyring, or as KeePassXC where it hides locked items.
    /// - Parameters:
    ///   - locked: whether the collection starts locked.
    ///   - hidesLockedItems: true for `.keePassXC`, false for `.gnomeKeyring`.
    @available(*, deprecated, message: "name the provider: init(provider: .keePassXC, locked:)")
    public convenience init(locked: Bool = false, hidesLockedItems: Bool) {
        self.init(provider: hidesLockedItems ? .keePassXC : .gnomeKeyring, locked: locked)
    }

    deinit {
        if let privateStateDirectory { try? FileManager.default.removeItem(atPath: privateStateDirectory) }
    }

    /// A resolver on this keyring with the standard backup keeps its backup file and first-run
    /// lock here (a temporary directory removed with the keyring), never in the user's state
    /// directory, where a real run of the app would read them. Nil only if it could not be made;
    /// the resolver then uses the standard directories.
    package let privateStateDirectory: String?

    /// Whether the collection is locked. Setting it locks or unlocks without a prompt.
    public var isLocked: Bool {
        get { state.withLock { $0.locked } }
        set {
            state.withLock { $0.locked = newValue }
            announceChange()
        }
    }

    /// How the next unlock prompts are answered; `.dismiss` until set (a headless session shows none).
    public var unlockAnswer: UnlockAnswer {
        get { state.withLock { $0.answer } }
        set { state.withLock { $0.answer = newValue } }
    }

    /// How many unlock prompts calls have shown.
    public var promptCount: Int { state.withLock { $0.prompts } }

    /// Makes the next `times` calls meet `fault` (every later call, by default); `nil` clears it.
    /// - Parameters:
    ///   - fault: the fault, or nil for none.
    ///   - times: how many calls meet it.
    public func inject(_ fault: Fault?, times: Int = .max) {
        state.withLock { $0.fault = fault.map { ($0, max(times, 0)) } }
    }

    /// Makes the next `times` calls throw `error` (every later call, by default), whatever it is.
    /// A name both types have (`.noSecretService`) is the `Fault`.
    /// - Parameters:
    ///   - error: the error, by value.
    ///   - times: how many calls meet it.
    @_disfavoredOverload
    public func inject(_ error: KeyringError, times: Int = .max) {
        inject(.error(error), times: times)
    }

    /// The fault calls meet now, if any.
    public var fault: Fault? { state.withLock { $0.fault?.fault } }

    /// The daemon restarts between two calls: the items survive, and what a process knew about the
    /// old daemon is void. As the provider does: gnome-keyring then reports items stored without a
    /// schema as `xdg:schema=org.freedesktop.Secret.Generic`; KWallet and oo7-daemon number the
    /// items' paths anew, so a path from before may name another item.
    /// - Parameter locked: whether it comes back locked (a desktop's daemon does; one started with `--unlock` does not).
    public func restart(locked: Bool = false) {
        changes.withLock {
            state.withLock { state in
                state.restarts += 1
                state.locked = locked
                for index in state.items.indices {
                    var item = state.items[index].item
                    if provider.stampsSchemaOnRestart && item.attributes["xdg:schema"] == nil {
                        item = Self.item(item, attributes: item.attributes.merging(["xdg:schema": "org.freedesktop.Secret.Generic"]) { $1 })
                    }
                    if provider.quirks.renumbersItems {
                        // 1 to n in creation order, as KWallet numbers its file: after a deletion, an
                        // old path names the next item.
                        item = Self.item(item, objectPath: Self.path(number: index + 1))
                    }
                    state.items[index].item = item
                }
                if provider.quirks.renumbersItems { state.nextNumber = state.items.count + 1 }
            }
        }
        announceChange()
    }

    /// Every item, oldest first in creation order, as they are now (locked or not).
    public var items: [KeyringItem] {
        state.withLock { state in state.items.map { Self.item($0.item, locked: state.locked) } }
    }

    /// The secret and content type of an item, whatever the lock; nil when it is gone, or when
    /// its path names another item now (after a restart that numbered paths anew).
    /// - Parameter item: an item of this keyring.
    /// - Returns: the bytes and their MIME type.
    public func secret(of item: KeyringItem) -> (secret: Data, contentType: String)? {
        state.withLock { state in
            state.items.first { $0.item.objectPath == item.objectPath && $0.item.attributes == item.attributes }
                .map { ($0.secret, $0.contentType) }
        }
    }

    /// Adds an item as another client would (secret-tool, another process), never replacing one:
    /// call it twice with the same attributes for twins.
    /// - Parameters:
    ///   - secret: the item's secret.
    ///   - attributes: its attributes.
    ///   - label: its label.
    ///   - contentType: the secret's MIME type.
    ///   - created: when it was created; now by default (whole seconds, as the Secret Service says).
    /// - Returns: the new item.
    @discardableResult
    public func add(
        _ secret: Data, attributes: [String: String], label: String = "", contentType: String = "text/plain", created: Date? = nil
    ) -> KeyringItem {
        let item = changes.withLock {
            state.withLock { state in
                let item = Self.makeItem(number: state.nextNumber, attributes: attributes, label: label, created: created)
                state.nextNumber += 1
                state.items.append(Stored(item: item, secret: secret, contentType: contentType))
                return item
            }
        }
        announceChange()
        return item
    }

    /// Called after each change a call makes to the items, once it is committed: a point a kill
    /// could not undo. The event-order tests stop the world there.
    package let afterChange = Guarded<(@Sendable () -> Void)?>(nil)

    /// Who `announceChange` calls: the change watches on this keyring (`observeChanges`).
    private let observers = Guarded((next: UInt64(0), all: [UInt64: @Sendable () -> Void]()))

    /// Tells every change watch that the items or the lock changed; called with no lock held.
    private func announceChange() {
        for observer in observers.withLock({ Array($0.all.values) }) { observer() }
    }

    package func observeChanges(_ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? {
        let key = observers.withLock { observers in
            defer { observers.next += 1 }
            observers.all[observers.next] = onChange
            return observers.next
        }
        return { [weak self] in _ = self?.observers.withLock { $0.all.removeValue(forKey: key) } }
    }

    /// The items as they are now, to be put back with `restore(_:)`.
    package struct Snapshot: Sendable {
        let items: [Stored]
        let nextNumber: Int
    }

    /// The items and the next object number, exactly (times and object paths included).
    package func snapshot() -> Snapshot {
        state.withLock { Snapshot(items: $0.items, nextNumber: $0.nextNumber) }
    }

    /// Puts back the items of `snapshot`; the lock, the answer and the faults stay.
    package func restore(_ snapshot: Snapshot) {
        changes.withLock {
            state.withLock { state in
                state.items = snapshot.items
                state.nextNumber = snapshot.nextNumber
            }
        }
        announceChange()
    }

    /// Removes every item (the lock, the answer and the faults stay).
    public func removeAll() {
        changes.withLock { state.withLock { $0.items.removeAll() } }
        announceChange()
    }
}

extension Keyring {
    /// A keyring whose items live in `memory`, for an app's unit tests; nothing reaches a Secret
    /// Service. Its `backend` reads `.secretService`, the backend the memory keyring stands in for.
    /// - Parameters:
    ///   - memory: the in-memory keyring.
    ///   - timeout: what an injected `.timeout` reports.
    ///   - unlock: whether a locked `memory` shows its unlock prompt (`MemoryKeyring.unlockAnswer`).
    public init(memory: MemoryKeyring, timeout: Duration = .seconds(25), unlock: UnlockPolicy = .prompt) {
        self.init(backend: .secretService, timeout: timeout, unlock: unlock)
        self.memory = memory
    }
}

// MARK: - The local collection

extension MemoryKeyring: LocalKeyring {
    package func run<T>(
        timeout: Duration, exclusive: Bool, prompt: UnlockPolicy?, _ body: (MemoryItems) throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        let seconds = timeout / .seconds(1)
        var changed = false
        // Announced once the exclusive lock is released too: watches are told with no lock held.
        defer { if changed { announceChange() } }
        if exclusive { changes.lock() }
        defer { if exclusive { changes.unlock() } }
        return try operate(seconds: seconds, prompt: prompt, changed: &changed, body)
    }

    /// What a watch sees, straight from the state: no prompt, and no injected fault met or counted down.
    package func watchLook(matching attributes: [String: String], timeout: Duration) throws(KeyringError) -> LocalWatchLook {
        // Only a restart that numbered the paths anew makes a new generation.
        let (view, restarts) = state.withLock { state in
            (
                MemoryItems(keyring: self, items: state.items, locked: state.locked, mayList: true, outcome: .notAsked),
                provider.quirks.renumbersItems ? state.restarts : 0
            )
        }
        return LocalWatchLook(
            isLocked: view.isLocked, hidesLockedItems: hidesLockedItems, items: try view.listed(matching: attributes), generation: restarts)
    }

    private func operate<T>(
        seconds: Double, prompt: UnlockPolicy?, changed: inout Bool, _ body: (MemoryItems) throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        var unlocked = false
        let view = try state.withLock { state throws(KeyringError) -> MemoryItems in
            try Self.meetFault(&state, seconds: seconds, writing: false)
            var outcome = UnlockOutcome.notAsked
            if state.locked, prompt == .prompt {
                state.prompts += 1
                switch state.answer {
                case .unlock:
                    state.locked = false
                    unlocked = true
                case .dismiss: outcome = .dismissed
                case .ignore: outcome = .unanswered
                }
            }
            return MemoryItems(keyring: self, items: state.items, locked: state.locked, mayList: prompt == nil, outcome: outcome)
        }
        changed = unlocked
        let result = try body(view)
        if view.edited {
            state.withLock { $0.items = view.items }
            afterChange.withLock { $0 }?()
            changed = true
        }
        return result
    }

    package func lock(timeout: Duration) throws(KeyringError) {
        try state.withLock { state throws(KeyringError) in
            try Self.meetFault(&state, seconds: timeout / .seconds(1), writing: false)
            state.locked = true
        }
        announceChange()
    }

    package func withCreationLock<T>(timeout: Duration, _ body: () throws(KeyringError) -> T) throws(KeyringError) -> T {
        let seconds = timeout / .seconds(1)
        try state.withLock { state throws(KeyringError) in try Self.meetFault(&state, seconds: seconds, writing: false) }
        guard creation.lock(before: Date(timeIntervalSinceNow: min(seconds, 3e9))) else { throw .timedOut(seconds: seconds) }
        defer { creation.unlock() }
        return try body()
    }

    package func status(timeout: Duration) -> ServiceStatus {
        do {
            let locked = try state.withLock { state throws(KeyringError) -> Bool in
                try Self.meetFault(&state, seconds: timeout / .seconds(1), writing: false)
                return state.locked
            }
            return ServiceStatus(
                isReachable: true, provider: "MemoryKeyring", hasDefaultCollection: true, isLocked: locked,
                defaultCollectionLabel: "Memory", problem: locked ? .locked(itemExists: false) : nil)
        } catch {
            return ServiceStatus(isReachable: false, provider: nil, problem: error)
        }
    }

    package var isSessionBusConfigured: Bool { fault?.hidesSessionBus != true }

    /// Throws the injected fault this call meets (a write fault only for a write), counting it down.
    static func meetFault(_ state: inout State, seconds: Double, writing: Bool) throws(KeyringError) {
        guard let (fault, remaining) = state.fault, remaining > 0 else { return }
        if case .error(_, writesOnly: true) = fault.kind, !writing { return }
        state.fault = remaining == 1 ? nil : (fault, remaining == .max ? .max : remaining - 1)
        switch fault.kind {
        case .noSessionBus:
            throw .noSessionBus(detail: "DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist")
        case .noSecretService: throw .noSecretService
        case .timeout: throw .timedOut(seconds: seconds)
        case .error(let error, _): throw error
        }
    }

    static func item(_ item: KeyringItem, objectPath: String? = nil, attributes: [String: String]? = nil, locked: Bool? = nil)
        -> KeyringItem
    {
        KeyringItem(
            objectPath: objectPath ?? item.objectPath, attributes: attributes ?? item.attributes, label: item.label,
            isLocked: locked ?? item.isLocked, created: item.created, modified: item.modified)
    }

    /// The number of the next item made.
    func takeNumber() -> Int {
        state.withLock { state in
            defer { state.nextNumber += 1 }
            return state.nextNumber
        }
    }

    static func path(number: Int) -> String { "/org/freedesktop/secrets/collection/memory/\(number)" }

    static func makeItem(number: Int, attributes: [String: String], label: String, created: Date?) -> KeyringItem {
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        return KeyringItem(
            objectPath: path(number: number), attributes: attributes, label: label, isLocked: false, created: created ?? now,
            modified: created ?? now)
    }
}

/// The collection during one operation: a copy of the items, written back when the operation ends.
package final class MemoryItems: LocalItems {
    let keyring: MemoryKeyring
    var items: [MemoryKeyring.Stored]
    let locked: Bool
    /// A search lists a locked collection's items (marked locked); other calls may not.
    let mayList: Bool
    let outcome: UnlockOutcome
    var edited = false

    init(keyring: MemoryKeyring, items: [MemoryKeyring.Stored], locked: Bool, mayList: Bool, outcome: UnlockOutcome) {
        self.keyring = keyring
        self.items = items
        self.locked = locked
        self.mayList = mayList
        self.outcome = outcome
    }

    package var isLocked: Bool { locked }
    package var unlockOutcome: UnlockOutcome { outcome }
    package var hidesLockedItems: Bool { keyring.hidesLockedItems }
    package var renumbersItems: Bool { keyring.provider.quirks.renumbersItems }

    package func listed() throws(KeyringError) -> [LocalItem] {
        try checked(items)
    }

    package func listed(matching attributes: [String: String]) throws(KeyringError) -> [LocalItem] {
        try checked(items.filter { stored in attributes.allSatisfy { stored.item.attributes[$0.key] == $0.value } })
    }

    private func checked(_ found: [MemoryKeyring.Stored]) throws(KeyringError) -> [LocalItem] {
        let visible = locked && keyring.hidesLockedItems ? [] : found
        // Where locked items are listed, no match at all proves absence, as on gnome-keyring.
        if locked && !mayList && !(found.isEmpty && !keyring.hidesLockedItems) {
            throw .locked(itemExists: !visible.isEmpty, unlock: outcome)
        }
        return visible.map { LocalItem(item: MemoryKeyring.item($0.item, locked: locked), secret: locked ? Data() : $0.secret) }
    }

    private func change() throws(KeyringError) {
        if locked { throw .locked(itemExists: false, unlock: outcome) }
        try keyring.state.withLock { state throws(KeyringError) in try MemoryKeyring.meetFault(&state, seconds: 0, writing: true) }
        edited = true
    }

    /// As the Secret Service path's exact update: a schema stamp the caller did not name is not compared.
    package func store(_ attributes: [String: String], label: String, secret: Data, contentType: String) throws(KeyringError) {
        try change()
        let comparable: ([String: String]) -> [String: String] = { own in
            attributes["xdg:schema"] == nil ? own.filter { $0.key != "xdg:schema" } : own
        }
        if let index = items.firstIndex(where: { comparable($0.item.attributes) == attributes }) {
            let old = items[index].item
            if !keyring.provider.quirks.keepsItemChanges {
                // As this library updates an item there (oo7-daemon): a replacing create, a new path
                // that keeps the item's place in the order (and in the list, oldest first).
                let item = MemoryKeyring.makeItem(
                    number: keyring.takeNumber(), attributes: old.attributes, label: label, created: old.created)
                items[index] = MemoryKeyring.Stored(item: item, secret: secret, contentType: contentType)
                return
            }
            items[index].item = KeyringItem(
                objectPath: old.objectPath, attributes: old.attributes, label: label, isLocked: false, created: old.created,
                modified: Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)))
            items[index].secret = secret
            items[index].contentType = contentType
            return
        }
        let item = MemoryKeyring.makeItem(number: keyring.takeNumber(), attributes: attributes, label: label, created: nil)
        items.append(MemoryKeyring.Stored(item: item, secret: secret, contentType: contentType))
    }

    package func remove(exactly attributes: [String: String]) throws(KeyringError) {
        try change()
        items.removeAll { $0.item.attributes == attributes }
    }

    package func remove(objectPath: String) throws(KeyringError) {
        try change()
        items.removeAll { $0.item.objectPath == objectPath }
    }

    package func removeAll(_ attributes: [String: String]) throws(KeyringError) -> Int {
        try change()
        let before = items.count
        items.removeAll { stored in attributes.allSatisfy { stored.item.attributes[$0.key] == $0.value } }
        return before - items.count
    }
}
