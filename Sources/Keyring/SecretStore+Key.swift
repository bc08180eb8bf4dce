extension SecretStore {
    /// The parts of an item, named after the keychain item wrapper's keys.
    ///
    /// `.valueData` is the encrypted secret. The others are plain-text metadata: `.label` is the
    /// item's label, and the rest are attributes, visible to any process of the user.
    public enum Key: String, Sendable, CaseIterable {
        /// The secret itself (encrypted by the Secret Service).
        case valueData
        /// The account name, stored as the `username` attribute.
        case account
        /// The item's label, as keyring managers show it.
        case label
        /// A description, stored as the `description` attribute.
        case description
        /// A comment, stored as the `comment` attribute.
        case comment
        /// Free-form app data, stored as the `generic` attribute.
        case generic

        /// The Secret Service attribute that holds this key (`.valueData` and `.label` have none).
        public var attributeName: String {
            switch self {
            case .account: return "username"
            default: return rawValue
            }
        }
    }
}
