#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One item in the Secret Service, as a search sees it: attributes and metadata, no secret.
///
/// Attributes are stored and sent as plain text; only the secret is encrypted.
public struct KeyringItem: Sendable, Hashable {
    /// The D-Bus object path, which names the item within the service. On libsecret's file
    /// backend, which has no paths, `file:` and a hash of the attributes.
    public let objectPath: String
    /// The item's lookup attributes. Empty for a locked item whose keyring was loaded from disk.
    public let attributes: [String: String]
    /// The item's display label.
    public let label: String
    /// True when the item's collection is locked, so its secret cannot be read.
    public let isLocked: Bool
    /// When the item was created, if the service says.
    public let created: Date?
    /// When the item was last modified, if the service says.
    public let modified: Date?

    /// Creates an item value, e.g. to test code that decides between items.
    /// - Parameters:
    ///   - objectPath: the D-Bus object path.
    ///   - attributes: the lookup attributes.
    ///   - label: the display label.
    ///   - isLocked: whether its collection is locked.
    ///   - created: when it was created.
    ///   - modified: when it was last modified.
    public init(
        objectPath: String, attributes: [String: String], label: String, isLocked: Bool, created: Date?, modified: Date?
    ) {
        self.objectPath = objectPath
        self.attributes = attributes
        self.label = label
        self.isLocked = isLocked
        self.created = created
        self.modified = modified
    }
}

/// What `Keyring.insertIfAbsent` did.
public enum InsertOutcome: Sendable, Equatable {
    /// No matching item existed; the new one was created.
    case inserted
    /// A matching item already existed and was left as it is: the oldest one, with its secret.
    case existing(item: KeyringItem, secret: Data)
}

extension KeyringItem {
    /// The order every read uses to pick one of several matches: the oldest first, so a twin that
    /// appears later never displaces a value already handed out. Items created in the same second
    /// are ordered by object path, comparing numeric parts as numbers (gnome-keyring numbers the
    /// items of a collection in creation order), so every process picks the same one.
    /// - Parameters:
    ///   - lhs: an item.
    ///   - rhs: another item.
    /// - Returns: true when `lhs` comes first.
    public static func isOlder(_ lhs: KeyringItem, _ rhs: KeyringItem) -> Bool {
        let left = lhs.created ?? .distantPast
        let right = rhs.created ?? .distantPast
        if left != right { return left < right }
        return pathOrder(lhs.objectPath, rhs.objectPath)
    }

    /// Compares two object paths element by element; all-digit elements compare as numbers.
    static func pathOrder(_ lhs: String, _ rhs: String) -> Bool {
        let left = lhs.split(separator: "/", omittingEmptySubsequences: false)
        let right = rhs.split(separator: "/", omittingEmptySubsequences: false)
        for (a, b) in zip(left, right) where a != b {
            if let x = UInt64(a), let y = UInt64(b) { return x < y }
            return a < b
        }
        return left.count < right.count
    }
}

/// What `Keyring.status()` found: whether the Secret Service answers, who provides it, and
/// the state of the default collection.
public struct ServiceStatus: Sendable, Equatable {
    /// True when a Secret Service answered on the session bus.
    public var isReachable: Bool
    /// The providing process, e.g. `gnome-keyring-daemon`, `kwalletd6` or `keepassxc`.
    public var provider: String?
    /// True when the default collection exists.
    public var hasDefaultCollection: Bool
    /// True when the default collection exists and is locked.
    public var isLocked: Bool
    /// The default collection's label, e.g. "Login".
    public var defaultCollectionLabel: String?
    /// Why the service or its default collection is not usable; nil when all is well.
    public var problem: KeyringError?

    /// Creates a status value, e.g. to test code that reports one.
    /// - Parameters:
    ///   - isReachable: whether a Secret Service answered.
    ///   - provider: the providing process's name.
    ///   - hasDefaultCollection: whether the default collection exists.
    ///   - isLocked: whether it is locked.
    ///   - defaultCollectionLabel: its label.
    ///   - problem: why the service is not usable, if it is not.
    public init(
        isReachable: Bool, provider: String? = nil, hasDefaultCollection: Bool = false, isLocked: Bool = false,
        defaultCollectionLabel: String? = nil, problem: KeyringError? = nil
    ) {
        self.isReachable = isReachable
        self.provider = provider
        self.hasDefaultCollection = hasDefaultCollection
        self.isLocked = isLocked
        self.defaultCollectionLabel = defaultCollectionLabel
        self.problem = problem
    }
}
