#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One item in the Secret Service, as a search sees it: attributes and metadata, no secret.
///
/// Attributes are stored and sent as plain text; only the secret is encrypted.
public struct KeyringItem: Sendable, Hashable {
    /// The D-Bus object path, which names the item within the service.
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
