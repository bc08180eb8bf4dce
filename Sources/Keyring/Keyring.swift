#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Attribute-level access to the user's Secret Service keyring (gnome-keyring, KWallet, KeePassXC),
/// or, in a sandbox, to libsecret's file backend (see ``KeyringBackend``).
///
/// Every call reads through to the service; nothing is cached between calls, so other processes'
/// changes are always seen. Reads match attributes only, never the libsecret schema name, so
/// items written by `secret-tool`, python-keyring and others are found.
///
/// Calls block the calling thread for at most `timeout`. Use the `async` variants from Swift
/// concurrency; they run the blocking work on their own thread.
///
/// A read, write or delete that meets a locked item asks the Secret Service to unlock the
/// collection that holds it (on KeePassXC, whose locked databases hide their items, every locked
/// database; for a new item, the default collection), which shows the desktop's unlock dialog,
/// as libsecret does (`unlock: .prompt`). The user's answer is awaited within `timeout`. `Keyring(unlock: .never)` fails with
/// `KeyringError.locked` instead. `search(_:)` and `status()` never prompt.
public struct Keyring: Sendable {
    /// A keyring with the default 25-second timeout (the D-Bus default) that prompts to unlock.
    public static let `default` = Keyring()

    /// The most time one operation may take before it fails with `KeyringError.timedOut`, which
    /// reports this timeout. Every wait of the operation counts against it: for other threads'
    /// calls in this process, for the creation lock, for each reply of the service, and for the
    /// unlock dialog. A timeout beyond a century waits a century.
    public var timeout: Duration

    /// Where the items live: the Secret Service, or libsecret's file backend (sandboxed apps).
    /// `.automatic` chooses as libsecret does, from the environment, at each call.
    public var backend: KeyringBackend = .automatic

    /// Whether a call that meets a locked keyring asks the user to unlock it.
    public var unlock: UnlockPolicy

    /// The in-memory keyring a test chose (KeyringTesting); nil in every production keyring.
    package var memory: (any LocalKeyring)?

    /// Creates a handle on the session's Secret Service. Nothing is contacted until the first call.
    /// - Parameters:
    ///   - timeout: the most time one operation may take, a wait for the unlock dialog included.
    ///   - unlock: `.prompt` (the default) to ask the user to unlock a locked keyring, `.never` to fail with `.locked`.
    public init(timeout: Duration = .seconds(25), unlock: UnlockPolicy = .prompt) {
        self.timeout = timeout
        self.unlock = unlock
    }

    /// Creates a handle on the given backend. Nothing is read until the first call.
    /// - Parameters:
    ///   - backend: `.automatic` (as libsecret chooses), `.secretService` or `.file`.
    ///   - timeout: the most time one operation may take, a wait for the unlock dialog included.
    ///   - unlock: whether to ask the user to unlock a locked Secret Service keyring (the file
    ///     backend has no locked state).
    public init(backend: KeyringBackend, timeout: Duration = .seconds(25), unlock: UnlockPolicy = .prompt) {
        self.timeout = timeout
        self.backend = backend
        self.unlock = unlock
    }

    /// Every item whose attributes include `attributes`, locked ones too, oldest first.
    /// - Parameter attributes: the attributes to match; an empty dictionary matches every item.
    /// - Returns: the matching items' metadata, without secrets.
    /// - Throws: `KeyringError.locked(itemExists: false)` when nothing matches and a locked
    ///   collection may hide matches (a locked KeePassXC database), never an empty result then;
    ///   or another `KeyringError` when the service cannot answer or an attribute is invalid.
    public func search(_ attributes: [String: String]) throws(KeyringError) -> [KeyringItem] {
        try AttributeRules.validate(attributes)
        return try itemStore.search(attributes, options)
    }

    /// The secret of the oldest item matching `attributes`.
    /// - Parameter attributes: the attributes to match; at least one is required.
    /// - Returns: the secret bytes, or nil when no item matches.
    /// - Throws: `KeyringError.locked` when any matching item is locked (even when another match
    ///   could be read: a locked original never loses to a readable twin), or when nothing
    ///   matches and a locked collection may hide matches (KeePassXC; gnome-keyring and KWallet
    ///   list locked matches, so there nothing found is nil).
    public func lookup(_ attributes: [String: String]) throws(KeyringError) -> Data? {
        try AttributeRules.validate(attributes, requireOne: true)
        return try itemStore.lookup(attributes, options)
    }

    /// The oldest item matching `attributes` (in `KeyringItem.isOlder` order), with its secret, in one call.
    /// - Parameter attributes: the attributes to match; at least one is required.
    /// - Returns: the item and its secret bytes, or nil when no item matches.
    /// - Throws: `KeyringError.locked` as `lookup(_:)` does, or another `KeyringError`.
    public func firstItem(_ attributes: [String: String]) throws(KeyringError) -> (item: KeyringItem, secret: Data)? {
        try AttributeRules.validate(attributes, requireOne: true)
        return try itemStore.firstItem(attributes, options)
    }

    /// Every item matching `attributes`, each with its secret, oldest first (`KeyringItem.isOlder`).
    /// For callers that must see twins: several items that answer the same query.
    /// - Parameter attributes: the attributes to match; at least one is required.
    /// - Returns: the items and their secret bytes; empty when nothing matches.
    /// - Throws: `KeyringError.locked` when any match is locked, or when nothing matches and a
    ///   locked collection may hide matches (KeePassXC); or another `KeyringError`.
    public func readAll(_ attributes: [String: String]) throws(KeyringError) -> [(item: KeyringItem, secret: Data)] {
        try readAll(attributes, lostAsEmpty: false)
    }

    /// `readAll(_:)`; with `lostAsEmpty`, an item whose value the provider lost (`.valueLost`) is
    /// listed with an empty value instead of failing the read.
    private func readAll(_ attributes: [String: String], lostAsEmpty: Bool) throws(KeyringError) -> [(item: KeyringItem, secret: Data)] {
        try AttributeRules.validate(attributes, requireOne: true)
        return try itemStore.readAll(attributes, lostAsEmpty: lostAsEmpty, options)
    }

    /// `readAll(_:)` for values that are not secrets, such as identifiers: when matches exist,
    /// none is locked and every value is non-empty, they are read without encryption (a `plain`
    /// session) in two round trips; otherwise, as `readAll(_:)`. Secrets must use `readAll(_:)`.
    /// - Parameter attributes: the attributes to match; at least one is required.
    /// An item whose value the provider lost is listed with an empty value, which breaks the
    /// identifier rules: the resolver then writes the value back from its backup.
    /// - Returns: every match with its value, oldest first.
    /// - Throws: what `readAll(_:)` throws, but `.valueLost`.
    package func readAllNonSecret(_ attributes: [String: String]) throws(KeyringError) -> [(item: KeyringItem, secret: Data)] {
        try AttributeRules.validate(attributes, requireOne: true)
        return try itemStore.readAllNonSecret(attributes, options)
    }

    /// Stores `secret` under exactly `attributes` in the default collection. An item whose
    /// attributes are exactly these gets the new secret and label; any other item is left alone.
    /// (libsecret's own replace flag would also overwrite items that merely include these
    /// attributes, such as another tool's item with one more attribute.)
    /// - Parameters:
    ///   - secret: the bytes to store; any content, at most `SecretStore.maximumValueSize` bytes.
    ///   - attributes: the item's attributes; at least one is required.
    ///   - label: the label shown in keyring managers.
    ///   - contentType: the secret's MIME type; nil (the default) is `text/plain` for UTF-8 text
    ///     without NUL bytes (what other clients expect) and `application/octet-stream` for other bytes.
    /// - Throws: `KeyringError.invalidArgument` for a larger secret, bad attributes or a `text/*`
    ///   type for bytes that are not UTF-8 text, `.locked`, `.noDefaultCollection`, or another `KeyringError`.
    public func store(
        _ secret: Data, attributes: [String: String], label: String, contentType: String? = nil
    ) throws(KeyringError) {
        try AttributeRules.validate(attributes, requireOne: true)
        try AttributeRules.validateText(label, what: "the label")
        let contentType = try AttributeRules.contentType(contentType, for: secret)
        try AttributeRules.validateSecret(secret, what: "the secret")
        try itemStore.store(secret, attributes: attributes, label: label, contentType: contentType, options)
    }

    /// Runs `body` while holding the lock every creation of an item matching `attributes` takes
    /// (`store`, `insertIfAbsent`, a first `SecretStore` write), in this process and in every other
    /// client of the keyring. Use it to make a check and a change atomic, such as "delete these
    /// items and record why" against a concurrent "restore the item". Keyring calls in `body` may
    /// take the same lock again.
    /// - Parameters:
    ///   - attributes: the attributes that name the lock; at least one.
    ///   - body: the work to do under the lock.
    /// - Returns: what `body` returns.
    /// - Throws: `KeyringError.timedOut` when the lock is not free within the timeout, or what `body` throws.
    public func withCreationLock<T>(for attributes: [String: String], _ body: () throws(KeyringError) -> T) throws(KeyringError) -> T {
        try AttributeRules.validate(attributes, requireOne: true)
        return try itemStore.withCreationLock(for: attributes, options, body)
    }

    /// Creates an item only when none matching `matching` exists; otherwise returns the existing
    /// one and changes nothing (an item it made meanwhile, beside one another client stored
    /// without sharing its lock, is removed again). Safe between processes that share nothing but the keyring: the
    /// check and the creation run under a lock on the session bus that every client shares.
    ///
    /// Use it for values that must never be overwritten once handed out, such as identifiers.
    /// - Parameters:
    ///   - secret: the bytes to store when absent.
    ///   - attributes: the new item's attributes; at least one is required.
    ///   - matching: the attributes that make an item count as present; nil means `attributes`.
    ///   - label: the label shown in keyring managers.
    ///   - contentType: the secret's MIME type; nil (the default) chooses as `store` does.
    /// - Returns: `.inserted`, or `.existing` with the oldest matching item and its secret.
    /// - Throws: `KeyringError.locked` when a matching item is locked (nothing is created),
    ///   `.invalidArgument` for a secret over `SecretStore.maximumValueSize` bytes or a `text/*`
    ///   type for bytes that are not UTF-8 text, `.noDefaultCollection`, or another `KeyringError`.
    public func insertIfAbsent(
        _ secret: Data, attributes: [String: String], matching: [String: String]? = nil, label: String,
        contentType: String? = nil
    ) throws(KeyringError) -> InsertOutcome {
        try insertIfAbsent(secret, attributes: attributes, matching: matching, label: label, contentType: contentType, order: .standard)
    }

    /// `insertIfAbsent`, with "the" existing item chosen by `order` (DeviceIdentity passes the
    /// attribute that records when an identifier was first made). With `stampsFirstMade`, the new
    /// item's `order.firstMadeAttribute` is set to the current time (`ItemOrder.stamp`) inside the
    /// creation lock, right before the write: a value stamped before a wait could rank before an
    /// item stored and handed out while it waited. A restored copy keeps its own time: pass false.
    package func insertIfAbsent(
        _ secret: Data, attributes: [String: String], matching: [String: String]? = nil, label: String,
        contentType: String? = nil, order: ItemOrder, stampsFirstMade: Bool = false
    ) throws(KeyringError) -> InsertOutcome {
        let matching = matching ?? attributes
        try AttributeRules.validate(attributes, requireOne: true)
        try AttributeRules.validate(matching, requireOne: true)
        try AttributeRules.validateText(label, what: "the label")
        let contentType = try AttributeRules.contentType(contentType, for: secret)
        try AttributeRules.validateSecret(secret, what: "the secret")
        let stamped = { () -> [String: String] in
            guard stampsFirstMade, let name = order.firstMadeAttribute else { return attributes }
            return attributes.merging([name: ItemOrder.stamp(Date())]) { _, now in now }
        }
        return try itemStore.insertIfAbsent(
            secret, attributes: stamped, matching: matching, label: label, contentType: contentType, order: order, options)
    }

    /// The value when exactly one item matches and it can be read: one SearchItems and one
    /// GetSecrets call, through a `plain` session when it reads plainly (so only for values that
    /// are not secrets). Nil for no match, several matches or a locked match (read those with
    /// `search(_:)`). For DeviceIdentity's common path; package API, not public.
    package func soleSecret(_ attributes: [String: String]) throws(KeyringError) -> Data? {
        try AttributeRules.validate(attributes, requireOne: true)
        return try itemStore.soleSecret(attributes, options)
    }

    /// Deletes every unlocked item whose attributes include `attributes`.
    /// - Parameter attributes: the attributes to match; at least one is required.
    /// - Returns: how many items were deleted.
    /// - Throws: `KeyringError.locked` when a matching item is locked, or when nothing matches and
    ///   a locked collection may hide matches (KeePassXC); nothing is deleted then.
    @discardableResult
    public func delete(_ attributes: [String: String]) throws(KeyringError) -> Int {
        try AttributeRules.validate(attributes, requireOne: true)
        return try itemStore.delete(attributes, options)
    }

    /// The secret of one item from `search(_:)`.
    /// - Parameter item: an item returned by `search(_:)`.
    /// - Returns: the secret bytes, or nil when the item no longer exists.
    /// - Throws: `KeyringError.locked(itemExists: true)` when its collection is locked;
    ///   `.invalidArgument` for an item whose path is no D-Bus object path (another backend's), with
    ///   no call sent; or another `KeyringError`.
    public func secret(of item: KeyringItem) throws(KeyringError) -> Data? {
        try itemStore.secret(of: item, options)
    }

    /// Deletes exactly one item from `search(_:)`, and nothing else. Deleting a vanished item succeeds.
    /// - Parameter item: an item returned by `search(_:)`.
    /// - Throws: `KeyringError.locked` when its collection is locked; `.invalidArgument` for an
    ///   item whose path is no D-Bus object path (another backend's), with no call sent; or another
    ///   `KeyringError`.
    public func delete(item: KeyringItem) throws(KeyringError) {
        try itemStore.delete(item: item, options)
    }

    /// True when the environment names a session bus: `DBUS_SESSION_BUS_ADDRESS` is set, or
    /// `$XDG_RUNTIME_DIR/bus` exists. When it is false there is no keyring to reach at all (a
    /// headless session); when it is true but the bus fails, the bus is broken or stale.
    public static var isSessionBusConfigured: Bool { BusEnvironment.problem() == nil }

    /// Reports whether the Secret Service answers, which program provides it, and whether the
    /// default collection exists and is locked. Never throws: problems are in `problem`.
    /// - Returns: the status of the service and its default collection.
    public func status() -> ServiceStatus {
        itemStore.status(options)
    }
}
