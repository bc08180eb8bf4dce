#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Listing what an app stored: the items of one identifier, or of one access group, with their
/// metadata and never their secrets.
extension SecretStore {
    /// One listed item: its account, label, times, lock state and who wrote it. No secret.
    public struct Listing: Sendable, Hashable {
        /// The `service` attribute; nil when the item has none (another client's item in the group).
        public let identifier: String?
        /// The `username` attribute; nil when it is absent or empty (an item without an account).
        public let account: String?
        /// The `access-group` attribute; nil for an item outside any group.
        public let accessGroup: String?
        /// The item's label, as keyring managers show it.
        public let label: String
        /// When the item was created, if the provider says.
        public let created: Date?
        /// When the item was last modified, if the provider says.
        public let modified: Date?
        /// True when its collection is locked: its secret cannot be read until it is unlocked.
        public let isLocked: Bool
        /// Who wrote the item, as its `xdg:schema` attribute tells.
        public let writer: Writer
        /// The item itself (all its attributes and its object path), e.g. for `Keyring.delete(item:)`.
        public let item: KeyringItem

        /// Describes `item`.
        /// - Parameter item: an item found by a search.
        package init(_ item: KeyringItem) {
            let attributes = item.attributes
            identifier = attributes["service"]
            account = attributes[Key.account.attributeName].flatMap { $0.isEmpty ? nil : $0 }
            accessGroup = attributes[SecretStore.groupAttribute]
            label = item.label
            created = item.created
            modified = item.modified
            isLocked = item.isLocked
            writer = Writer(schema: attributes["xdg:schema"])
            self.item = item
        }
    }

    /// Who wrote a listed item, from its `xdg:schema` attribute.
    ///
    /// secret-tool and python-keyring set no schema; gnome-keyring reports such items as
    /// `org.freedesktop.Secret.Generic` after a restart. On libsecret's file backend `SecretStore`
    /// writes no schema either (there a schema would keep `secret-tool store` from updating the
    /// item), so its items there list as `.otherClient(schema: nil)`.
    public enum Writer: Sendable, Hashable {
        /// This library: `xdg:schema` is `io.keyringidentity.SecretStore`.
        case secretStore
        /// Another client: its schema, or nil when the item carries none.
        case otherClient(schema: String?)

        /// The writer an `xdg:schema` value names.
        /// - Parameter schema: the item's `xdg:schema` attribute, nil when it has none.
        package init(schema: String?) {
            self = schema == SecretStore.schemaName ? .secretStore : .otherClient(schema: schema)
        }
    }

    /// Lists the items of an identifier (every account and group), or of an access group (every
    /// identifier in it), or of both, oldest first (`KeyringItem.isOlder`). Secrets are never read.
    ///
    /// Locked items that the provider lists (gnome-keyring, KWallet) are listed, marked `isLocked`.
    /// A locked keyring is never "no items" by mistake: when nothing matches and a locked
    /// collection may hide matches (KeePassXC hides a locked database's items), or a locked match's attributes cannot be read
    /// (gnome-keyring before the first unlock), this throws `.locked`, after asking the user to
    /// unlock it as `keyring.unlock` says. With several KeePassXC databases of which one is locked,
    /// the list holds the open ones' items only: KeePassXC hides the locked one's.
    /// - Parameters:
    ///   - identifier: the identifier (`service` attribute) to list, or nil for any.
    ///   - accessGroup: the access group to list, or nil for any; at least one of the two is required.
    ///   - keyring: the keyring to list, which sets the timeout and whether to prompt to unlock.
    /// - Returns: the matching items' metadata; empty only when none exists.
    /// - Throws: `KeyringError.invalidArgument` for neither, an empty one or a NUL byte; `.locked`
    ///   as said above; or another `KeyringError`.
    public static func items(
        identifier: String? = nil, accessGroup: String? = nil, keyring: Keyring = .default
    ) throws(KeyringError) -> [Listing] {
        var attributes: [String: String] = [:]
        for (value, name, what) in [(identifier, "service", "the identifier"), (accessGroup, groupAttribute, "the access group")] {
            guard let value else { continue }
            if value.isEmpty { throw .invalidArgument("\(what) is empty; pass nil to list any") }
            try AttributeRules.validateText(value, what: what)
            attributes[name] = value
        }
        if attributes.isEmpty { throw .invalidArgument("give an identifier, an access group or both to list") }
        return try keyring.itemStore.list(attributes, keyring.options).map(Listing.init)
    }
}
