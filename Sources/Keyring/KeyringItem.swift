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
    /// The item's lookup attributes. For a locked item whose keyring was loaded from disk, empty or
    /// only gnome-keyring's hashed forms (`gkr:compat:hashed:service`, …).
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
    /// True for a locked item whose attributes cannot be read (`ProviderAttributes.areUnreadable`):
    /// it may be anyone's, and what it shows is not what it holds.
    var hidesAttributes: Bool { isLocked && ProviderAttributes.areUnreadable(attributes) }

    /// The order every read uses to pick one of several matches: `ItemOrder.standard`. The oldest
    /// comes first, so a twin that appears later never displaces a value already handed out.
    /// - Parameters:
    ///   - lhs: an item.
    ///   - rhs: another item.
    /// - Returns: true when `lhs` comes first.
    public static func isOlder(_ lhs: KeyringItem, _ rhs: KeyringItem) -> Bool {
        ItemOrder.standard.precedes(lhs, rhs)
    }
}

/// The one rule for which of several items answering one query is "the" item. Every reader,
/// writer, read-back and twin cleanup, in `Keyring` and in `DeviceIdentity`, sorts with it, so
/// every process converges on the same winner whatever path it took.
///
/// The oldest wins, by the whole second its value was first made: `firstMadeAttribute` when the
/// item carries it (a copy restored from a backup keeps the time of the value it holds), else the
/// service's `Created`. Within one second a foreign item cannot be ordered against one that
/// carries the attribute, and only those can have been handed out: they come first. Then the
/// service's `Created`, then the object path, so the order is total and the same everywhere.
package struct ItemOrder: Sendable, Equatable {
    /// An attribute holding when the value was first made, in Unix seconds; nil for none.
    package var firstMadeAttribute: String?

    package init(firstMadeAttribute: String?) {
        self.firstMadeAttribute = firstMadeAttribute
    }

    /// `time` as a "first made" attribute: Unix seconds with three decimals, rounded down (the
    /// format DeviceIdentity's backup file writes too).
    package static func stamp(_ time: Date) -> String {
        let ms = Int64((time.timeIntervalSince1970 * 1000).rounded(.down))
        let fraction = String(ms % 1000)
        return "\(ms / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    /// For items that carry no "first made" attribute: `Created`, then the object path.
    package static let standard = ItemOrder(firstMadeAttribute: nil)

    /// When the item's value was first made: its `firstMadeAttribute`, else the `Created` it had
    /// before an update replaced it (`ProviderAttributes.firstCreated`), else the service's `Created`.
    package func firstMade(_ item: KeyringItem) -> Date? {
        for name in [firstMadeAttribute, ProviderAttributes.firstCreated] {
            if let name, let text = item.attributes[name], let seconds = Double(text), seconds.isFinite {
                return Date(timeIntervalSince1970: seconds)
            }
        }
        return item.created
    }

    /// True when `lhs` is "the" item rather than `rhs`. A strict total order on distinct paths.
    package func precedes(_ lhs: KeyringItem, _ rhs: KeyringItem) -> Bool {
        let left = (firstMade(lhs)?.timeIntervalSince1970 ?? -.greatestFiniteMagnitude).rounded(.down)
        let right = (firstMade(rhs)?.timeIntervalSince1970 ?? -.greatestFiniteMagnitude).rounded(.down)
        if left != right { return left < right }
        if let firstMadeAttribute {
            let leftCarries = lhs.attributes[firstMadeAttribute] != nil
            let rightCarries = rhs.attributes[firstMadeAttribute] != nil
            if leftCarries != rightCarries { return leftCarries }
        }
        let leftCreated = lhs.created ?? .distantPast
        let rightCreated = rhs.created ?? .distantPast
        if leftCreated != rightCreated { return leftCreated < rightCreated }
        return Self.pathOrder(lhs.objectPath, rhs.objectPath)
    }

    /// `items`, "the" item first.
    package func sorted(_ items: [KeyringItem]) -> [KeyringItem] { items.sorted(by: precedes) }

    /// Compares two object paths element by element. All-digit elements compare as numbers
    /// (gnome-keyring numbers a collection's items in creation order) and come before any other
    /// element; equal numbers spelled differently ("01", "1") and other elements compare as text.
    package static func pathOrder(_ lhs: String, _ rhs: String) -> Bool {
        let left = lhs.split(separator: "/", omittingEmptySubsequences: false)
        let right = rhs.split(separator: "/", omittingEmptySubsequences: false)
        for (a, b) in zip(left, right) where a != b {
            switch (Self.number(a), Self.number(b)) {
            case (let x?, let y?): return x != y ? x < y : a < b
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return a < b
            }
        }
        return left.count < right.count
    }

    /// The element's value when it is all ASCII digits (no sign), however long.
    private static func number(_ element: Substring) -> UInt64? {
        guard !element.isEmpty, element.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return UInt64(element) ?? UInt64.max
    }
}

/// One collection (keyring, database or wallet) of the Secret Service, as `Keyring.status()` lists it.
public struct CollectionStatus: Sendable, Equatable {
    /// Its label, e.g. "Login" or "Default keyring".
    public var label: String
    /// True when it is locked: its secrets cannot be read until it is unlocked.
    public var isLocked: Bool
    /// True when the default alias names it: new items land there.
    public var isDefault: Bool

    /// Creates a collection status, e.g. to test code that reports one.
    /// - Parameters:
    ///   - label: its label.
    ///   - isLocked: whether it is locked.
    ///   - isDefault: whether the default alias names it.
    public init(label: String, isLocked: Bool, isDefault: Bool) {
        self.label = label
        self.isLocked = isLocked
        self.isDefault = isDefault
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
    /// Every collection of the service, the default first: a lived-in keyring has several (login,
    /// the in-memory session, an old one left locked). Empty when the service was not reached, and
    /// on the file backend and the memory keyring, which have one collection only.
    public var collections: [CollectionStatus] = []

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
