#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `SecretStore` on a local collection (`LocalKeyring`: libsecret's file backend, or KeyringTesting's
/// in-memory keyring): the same item (attributes `service`, `username`, the group), found and
/// updated the same way. On the file backend an item is named by its attributes, so changing the
/// account gives it a new `objectPath`.
extension LocalKeyring {
    /// The oldest item the wrapper owns; a locked match, or a miss in a locked collection, is `.locked`.
    package func storedItem(of store: SecretStore, _ options: CallOptions) throws(KeyringError) -> (item: KeyringItem, value: Data)? {
        try run(timeout: options.timeout, exclusive: false, prompt: options.unlock) { items throws(KeyringError) in
            try items.owned(by: store).first.map { ($0.item, $0.secret) }
        }
    }

    /// One key of the wrapper's item, from `storedItem`.
    package func data(forKey key: SecretStore.Key, of store: SecretStore, _ options: CallOptions) throws(KeyringError) -> Data? {
        guard let (item, value) = try storedItem(of: store, options) else { return nil }
        switch key {
        case .valueData: return value
        case .label: return Data(item.label.utf8)
        default: return item.attributes[key.attributeName].map { Data($0.utf8) }
        }
    }

    /// The collection's lock state: a local collection locks as a whole.
    package func isLocked(of store: SecretStore, _ options: CallOptions) throws(KeyringError) -> Bool {
        try isLocked(options)
    }

    /// Under the collection's lock, so the first write of two processes creates one item.
    package func write(
        _ payload: SecretStore.Payload, forKey key: SecretStore.Key, of store: SecretStore, _ options: CallOptions
    ) throws(KeyringError) {
        try run(timeout: options.timeout, exclusive: true, prompt: options.unlock) { file throws(KeyringError) in
            let owned = try file.owned(by: store)
            if let item = owned.first {
                try store.refuseAmbiguous(owned.map(\.item), settingAccount: key == .account ? payload.text : nil)
                let attributes = item.item.attributes
                switch (key, payload) {
                case (_, .secret(let bytes, let type)):
                    try file.store(attributes, label: item.item.label, secret: bytes, contentType: type)
                case (.label, .text(let text)):
                    try file.store(attributes, label: text, secret: item.secret, contentType: SecretStore.valueContentType)
                case (_, .text(let text)):
                    var changed = attributes
                    changed[key.attributeName] = text
                    guard changed != attributes else { return }
                    // The file backend names an item by its attributes: a changed attribute is a new
                    // item, so the old one goes first (its creation time restarts).
                    try file.remove(exactly: attributes)
                    try file.store(changed, label: item.item.label, secret: item.secret, contentType: SecretStore.valueContentType)
                }
                return
            }
            // No `xdg:schema` here: the file backend replaces only an item with exactly the same
            // attributes, so `secret-tool store service I username A` then updates this same item.
            var attributes = store.searchAttributes
            attributes["username"] = store.account ?? ""
            var label = store.identifier
            var secret = (Data(), SecretStore.valueContentType)
            switch (key, payload) {
            case (_, .secret(let bytes, let type)): secret = (bytes, type)
            case (.label, .text(let text)): label = text
            case (_, .text(let text)): attributes[key.attributeName] = text
            }
            try file.store(attributes, label: label, secret: secret.0, contentType: secret.1)
        }
    }

    package func reset(_ store: SecretStore, _ options: CallOptions) throws(KeyringError) {
        try run(timeout: options.timeout, exclusive: true, prompt: options.unlock) { file throws(KeyringError) in
            let items = try file.owned(by: store)
            guard let target = items.first else { return }
            try store.refuseAmbiguous(items.map(\.item))
            let same = SecretStore.comparable(target.item.attributes)
            for item in items where SecretStore.comparable(item.item.attributes) == same {
                try file.remove(exactly: item.item.attributes)
            }
        }
    }
}

extension LocalItems {
    /// The items `store` owns, "the" item first; a locked one, or a miss a locked collection may hide, is `.locked`.
    func owned(by store: SecretStore) throws(KeyringError) -> [LocalItem] {
        let found = try listed(matching: store.searchAttributes).filter { store.owns($0.item) }
        if found.contains(where: \.item.isLocked) { throw .locked(itemExists: true) }
        if found.isEmpty && missCouldBeHidden { throw .locked(itemExists: false) }
        return found.sorted { ItemOrder.standard.precedes($0.item, $1.item) }
    }
}
