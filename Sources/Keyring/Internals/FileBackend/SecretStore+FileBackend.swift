#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `SecretStore` on libsecret's file backend: the same item (attributes `service`, `username`,
/// the group), found and updated the same way. The file has no locked state. An item is named by
/// its attributes here, so changing the account gives it a new `objectPath`.
extension SecretStore {
    func fileStoredItem() throws(KeyringError) -> (item: KeyringItem, value: Data)? {
        try FileKeyring.run(timeout: keyring.timeout, exclusive: false) { file throws(KeyringError) in
            try file.matching(searchAttributes).first { owns($0.keyringItem) }.map { ($0.keyringItem, $0.secret) }
        }
    }

    func fileData(forKey key: Key) throws(KeyringError) -> Data? {
        guard let (item, value) = try fileStoredItem() else { return nil }
        switch key {
        case .valueData: return value
        case .label: return Data(item.label.utf8)
        default: return item.attributes[key.attributeName].map { Data($0.utf8) }
        }
    }

    /// Under the file lock, so the first write of two processes creates one item.
    func fileWrite(_ payload: Payload, forKey key: Key) throws(KeyringError) {
        try FileKeyring.run(timeout: keyring.timeout, exclusive: true) { file throws(KeyringError) in
            let owned = try file.matching(searchAttributes).filter { owns($0.keyringItem) }
            if let item = owned.first {
                try refuseAmbiguous(owned.map(\.keyringItem), settingAccount: key == .account ? payload.text : nil)
                switch (key, payload) {
                case (_, .secret(let bytes, _)): try file.store(item.attributes, label: item.label, secret: bytes)
                case (.label, .text(let text)): try file.store(item.attributes, label: text, secret: item.secret)
                case (_, .text(let text)):
                    var attributes = item.attributes
                    attributes[key.attributeName] = text
                    guard attributes != item.attributes else { return }
                    // The file backend names an item by its attributes: a changed attribute is a new
                    // item, so the old one goes first (its creation time restarts).
                    try file.remove(exactly: item.attributes)
                    try file.store(attributes, label: item.label, secret: item.secret)
                }
                return
            }
            // No `xdg:schema` here: the file backend replaces only an item with exactly the same
            // attributes, so `secret-tool store service I username A` then updates this same item.
            var attributes = searchAttributes
            attributes["username"] = account ?? ""
            var label = identifier
            var secret = Data()
            switch (key, payload) {
            case (_, .secret(let bytes, _)): secret = bytes
            case (.label, .text(let text)): label = text
            case (_, .text(let text)): attributes[key.attributeName] = text
            }
            try file.store(attributes, label: label, secret: secret)
        }
    }

    func fileReset() throws(KeyringError) {
        try FileKeyring.run(timeout: keyring.timeout, exclusive: true) { file throws(KeyringError) in
            let items = try file.matching(searchAttributes).filter { owns($0.keyringItem) }
            guard let target = items.first else { return }
            try refuseAmbiguous(items.map(\.keyringItem))
            let same = Self.comparable(target.attributes)
            for item in items where Self.comparable(item.attributes) == same { try file.remove(exactly: item.attributes) }
        }
    }
}
