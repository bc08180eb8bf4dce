#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The classic keychain item wrapper, on Linux: one Secret Service item per
/// `(identifier, accessGroup)`, or per `(identifier, account, accessGroup)`, read and written key by key.
///
/// ```swift
/// let store = try SecretStore(identifier: "com.example.app")
/// try store.setObject("s3cr3t", forKey: .valueData)
/// try store.setObject("alice", forKey: .account)
/// let token = try store.object(forKey: .valueData)   // "s3cr3t"
/// try itemStore.reset()
/// ```
///
/// The item carries the attributes `service` = identifier, `username` = the `.account` value
/// (empty when unset) and, when an access group is set, `access-group` = the group. So
/// `secret-tool lookup service ID username ACCOUNT` and python-keyring's
/// `get_password(ID, ACCOUNT)` find it, and items those tools write are read here.
///
/// With an `account`, the item is the one with `service` = identifier and `username` = account:
/// the very item python-keyring's `set_password(ID, ACCOUNT, …)` and `secret-tool store service ID
/// username ACCOUNT` address. Without one, the wrapper's item is the oldest item of the identifier,
/// as before, but it never changes another client's item for one account while items for other
/// accounts match too: that throws `KeyringError.ambiguousItem` (see <doc:SecretStoreItems>).
///
/// An access group is a namespace, not a wall: any process of the same user can read an
/// unlocked collection, and attributes travel and rest as plain text.
///
/// A locked keyring is unlocked on demand, through the desktop's unlock dialog, as `keyring`'s
/// `unlock` policy says: pass `keyring: Keyring(unlock: .never)` to fail with
/// `KeyringError.locked` instead.
public struct SecretStore: Sendable {
    /// The item's identifier, stored as the `service` attribute.
    public let identifier: String
    /// The account the item belongs to, stored as the `username` attribute; nil for a wrapper that
    /// names none (it then reads the identifier's oldest item).
    public let account: String?
    /// The namespace that keeps this item apart from others with the same identifier.
    public let accessGroup: String?
    /// The keyring the item lives in, with its timeout.
    public let keyring: Keyring

    /// The largest secret accepted, here and by `Keyring.store` and `insertIfAbsent` (16 MiB);
    /// D-Bus and the keyring daemon hold whole messages in memory.
    public static let maximumValueSize = 16 << 20

    /// Creates a wrapper. Nothing is read or written until the first call.
    /// - Parameters:
    ///   - identifier: the item's identifier (`service` attribute); must not be empty.
    ///   - account: the account (`username` attribute) whose item this is, or nil for the
    ///     identifier's oldest item; must not be empty when given. With an account, `.account` is
    ///     part of the item's key and cannot be set.
    ///   - accessGroup: a namespace for the item, or nil for none; must not be empty when given.
    ///   - keyring: the keyring to use, which sets the timeout and whether to prompt to unlock.
    /// - Throws: `KeyringError.invalidArgument` for an empty identifier, account or group, or a NUL byte.
    public init(identifier: String, account: String? = nil, accessGroup: String? = nil, keyring: Keyring = .default) throws(KeyringError) {
        if identifier.isEmpty { throw .invalidArgument("the identifier is empty") }
        try AttributeRules.validateText(identifier, what: "the identifier")
        if let account {
            if account.isEmpty { throw .invalidArgument("the account is empty; pass nil for no account") }
            try AttributeRules.validateText(account, what: "the account")
        }
        if let accessGroup {
            if accessGroup.isEmpty { throw .invalidArgument("the access group is empty; pass nil for no group") }
            try AttributeRules.validateText(accessGroup, what: "the access group")
        }
        self.identifier = identifier
        self.account = account
        self.accessGroup = accessGroup
        self.keyring = keyring
    }

    /// Reads one key of the item, straight from the keyring (never a cached copy).
    /// - Parameter key: which part of the item to read.
    /// - Returns: the value, or nil when there is no item (or the item lacks that attribute).
    /// - Throws: `KeyringError.locked` when the item exists but is locked (never nil),
    ///   `.valueIsNotText` when `.valueData` holds bytes that are not UTF-8, or another `KeyringError`.
    public func object(forKey key: Key) throws(KeyringError) -> String? {
        guard let data = try data(forKey: key) else { return nil }
        guard let text = String(validating: data, as: UTF8.self) else { throw .valueIsNotText }
        return text
    }

    /// Writes one key of the item, creating the item when absent and otherwise updating that same item.
    /// - Parameters:
    ///   - value: the new value.
    ///   - key: which part of the item to write.
    /// - Throws: `KeyringError.locked`, `.noDefaultCollection`, `.invalidArgument` (also for `.account`
    ///   on a wrapper with an account), `.ambiguousItem` (a wrapper without an account, when several
    ///   accounts' items match), or another `KeyringError`.
    public func setObject(_ value: String, forKey key: Key) throws(KeyringError) {
        try write(key == .valueData ? .secret(Data(value.utf8), Self.valueContentType) : .text(value), forKey: key)
    }

    /// Reads one key as bytes. For `.valueData` this is byte-exact (NUL bytes, invalid UTF-8).
    /// - Parameter key: which part of the item to read.
    /// - Returns: the bytes, or nil when there is no item (or the item lacks that attribute).
    /// - Throws: `KeyringError.locked` when the item exists but is locked, or another `KeyringError`.
    public func data(forKey key: Key) throws(KeyringError) -> Data? {
        try keyring.itemStore.data(forKey: key, of: self, keyring.options)
    }

    /// Writes one key from bytes. For `.valueData` the bytes are stored exactly, as
    /// `application/octet-stream` (see `valueContentType`). Other keys must be UTF-8.
    /// - Parameters:
    ///   - data: the bytes to store.
    ///   - key: which part of the item to write.
    /// - Throws: `KeyringError.invalidArgument` for non-text metadata, `.ambiguousItem` as
    ///   `setObject(_:forKey:)` says, or another `KeyringError`.
    public func setData(_ data: Data, forKey key: Key) throws(KeyringError) {
        try write(try Self.payload(data, forKey: key), forKey: key)
    }

    /// Removes the item this wrapper reads and writes (and exact copies of it), and nothing else.
    /// Removing an absent item succeeds.
    ///
    /// Other clients' items that share the identifier but differ in another attribute, such as
    /// `secret-tool`'s `service S username bob` beside this wrapper's `username alice`, are left
    /// alone; a later read may then return one of those.
    /// - Throws: `KeyringError.locked` when a matching item is locked, or when none matches and a locked
    ///   collection may hide matches (KeePassXC); `.ambiguousItem` for a wrapper without an
    ///   account when several accounts' items match. Nothing is removed then. Or another `KeyringError`.
    public func reset() throws(KeyringError) {
        try keyring.itemStore.reset(self, keyring.options)
    }

    /// The item this wrapper reads and writes, with its value: the oldest item that carries this
    /// identifier (and account, and group). One call, so the item and the value belong together.
    /// - Returns: the item and its secret bytes, or nil when there is none.
    /// - Throws: `KeyringError.locked` when a matching item is locked, or another `KeyringError`.
    public func storedItem() throws(KeyringError) -> (item: KeyringItem, value: Data)? {
        try keyring.itemStore.storedItem(of: self, keyring.options)
    }

    /// Decodes a JSON-encoded `Decodable` value stored in `.valueData`.
    /// - Parameter type: the type to decode.
    /// - Returns: the value, or nil when there is no item.
    /// - Throws: `KeyringError`, or the decoder's error when the stored bytes are not that type.
    public func value<T: Decodable>(_ type: T.Type) throws -> T? {
        guard let data = try data(forKey: .valueData) else { return nil }
        return try JSONDecoder().decode(T.self, from: data)
    }

    /// Stores an `Encodable` value in `.valueData` as JSON.
    /// - Parameter value: the value to store.
    /// - Throws: `KeyringError` (`.ambiguousItem` as `setObject(_:forKey:)` says), or the encoder's error.
    public func setValue<T: Encodable>(_ value: T) throws {
        let data = try JSONEncoder().encode(value)
        try write(.secret(data, "application/json"), forKey: .valueData)
    }
}

// MARK: - Implementation

extension SecretStore {
    /// The content type of every value `setObject` and `setData` write, text included.
    ///
    /// Providers change `text/plain` secrets: KeePassXC puts them in the entry's password field,
    /// which resolves placeholders such as `{TITLE}` on read and drops NUL bytes on save; KWallet
    /// cuts `text/*` at a NUL. Other types both keep byte for byte (KeePassXC as an attachment).
    /// Other clients still read them: `secret-tool lookup` prints the bytes, and libsecret's
    /// password lookup and python-keyring accept `application/octet-stream` that is UTF-8.
    public static let valueContentType = "application/octet-stream"

    /// The libsecret schema name written into `xdg:schema`; reads never require it.
    static let schemaName = "io.keyringidentity.SecretStore"
    static let groupAttribute = "access-group"

    package enum Payload {
        case secret(Data, String)
        case text(String)

        /// The text of a metadata write; nil for a secret.
        var text: String? { if case .text(let text) = self { text } else { nil } }
    }

    static func payload(_ data: Data, forKey key: Key) throws(KeyringError) -> Payload {
        if key == .valueData { return .secret(data, valueContentType) }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw .invalidArgument("the \(key.rawValue) value is not UTF-8 text; only the value itself may be binary")
        }
        return .text(text)
    }

    /// What a search must match; group filtering happens on the results.
    var searchAttributes: [String: String] {
        var attributes = ["service": identifier]
        if let account { attributes[Key.account.attributeName] = account }
        if let accessGroup { attributes[Self.groupAttribute] = accessGroup }
        return attributes
    }

    /// Without a group, items that carry one belong to another wrapper. A locked item whose
    /// attributes cannot be read might be ours, so it counts.
    func owns(_ item: KeyringItem) -> Bool {
        if item.hidesAttributes { return true }
        return accessGroup != nil || item.attributes[Self.groupAttribute] == nil
    }

    /// Attributes without libsecret's schema stamp, which gnome-keyring rewrites on its own, and
    /// without those a provider adds (KeePassXC's Title, Uuid, Path and others).
    static func comparable(_ attributes: [String: String]) -> [String: String] {
        ProviderAttributes.withoutAdded(attributes).filter { $0.key != "xdg:schema" }
    }

    /// Names this wrapper's item in the path cache; NUL cannot occur in any part.
    var cacheKey: String {
        identifier + "\u{0}" + (accessGroup.map { "g:" + $0 } ?? "-") + (account.map { "\u{0}a:" + $0 } ?? "")
    }

    func write(_ payload: Payload, forKey key: Key) throws(KeyringError) {
        switch payload {
        case .secret(let bytes, _): try AttributeRules.validateSecret(bytes, what: "the value")
        case .text(let text): try AttributeRules.validateText(text, what: "the \(key.rawValue) value")
        }
        if account != nil, key == .account {
            throw .invalidArgument("this wrapper's account is part of its item's key: make a SecretStore with the other account instead")
        }
        try keyring.itemStore.write(payload, forKey: key, of: self, keyring.options)
    }
}
