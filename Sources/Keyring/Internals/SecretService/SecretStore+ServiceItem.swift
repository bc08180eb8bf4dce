#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `SecretStore`'s item on the Secret Service (`SecretServiceStore`'s SecretStore calls): read
/// through the path cache, updated in place, created under the creation lock.
extension SecretStore {
    /// The secret, in one GetSecrets call when this process already knows the item's path and
    /// no Secret Service signal has arrived since; else by a full search.
    func readValue(_ call: borrowing ServiceCall) throws(KeyringError) -> Data? {
        let signalCount = ItemPathCache.synchronize(call)
        if let path = ItemPathCache.path(for: cacheKey, call) {
            if let (bytes, _) = try call.secretIfReadable(at: path), ItemPathCache.isQuiet(since: signalCount) {
                return bytes
            }
            ItemPathCache.forget(cacheKey)
        }
        let items = try call.search(searchAttributes).filter(owns)
        guard let found = try call.readFirst(items) else { return nil }
        ItemPathCache.remember(found.item.objectPath, for: cacheKey, ifNoSignalsSince: signalCount)
        return found.bytes
    }

    /// Updates the existing item; false when there is none. A locked one throws. Searched again
    /// when another client's update replaced the item meanwhile (`ServiceCall.replacedMeanwhile`).
    func update(_ call: borrowing ServiceCall, _ payload: Payload, forKey key: Key) throws(KeyringError) -> Bool {
        var attempts = 0
        while true {
            do throws(KeyringError) {
                return try updateOnce(call, payload, forKey: key)
            } catch let error where error == ServiceCall.replacedMeanwhile && attempts < ServiceCall.replaceAttempts {
                attempts += 1
            }
        }
    }

    private func updateOnce(_ call: borrowing ServiceCall, _ payload: Payload, forKey key: Key) throws(KeyringError) -> Bool {
        let items = try call.search(searchAttributes).filter(owns)
        try call.throwIfAnyLocked(items)
        if let item = items.first {
            try refuseAmbiguous(items, settingAccount: key == .account ? payload.text : nil)
            switch (key, payload) {
            case (_, .secret(let bytes, let type)):
                try call.updateItem(at: item.objectPath, secret: (bytes, type))
                try call.announceSecretChange(at: item.objectPath, label: item.label)
            case (.label, .text(let text)): try call.updateItem(at: item.objectPath, label: text)
            case (_, .text(let text)):
                // Only the attributes clients set: KeePassXC refuses an update that names its
                // read-only Uuid or Path, and keeps the attributes it adds on its own.
                var attributes = ProviderAttributes.withoutAdded(item.attributes)
                attributes[key.attributeName] = text
                try call.updateItem(at: item.objectPath, attributes: attributes)
            }
            return true
        }
        return false
    }

    /// Creates the wrapper's item with the one key `payload` sets.
    func create(_ call: borrowing ServiceCall, _ payload: Payload, forKey key: Key) throws(KeyringError) {
        var attributes = searchAttributes
        attributes["username"] = account ?? ""
        attributes["xdg:schema"] = Self.schemaName
        var label = identifier
        var secret = (Data(), Self.valueContentType)
        switch (key, payload) {
        case (_, .secret(let bytes, let type)): secret = (bytes, type)
        case (.label, .text(let text)): label = text
        case (_, .text(let text)): attributes[key.attributeName] = text
        }
        // createItem never replaces (that would swallow a grouped item when creating the ungrouped
        // one); the create lock prevents twins.
        try call.createItem(attributes: attributes, label: label, secret: secret.0, contentType: secret.1)
    }
}
