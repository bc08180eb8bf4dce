#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `Keyring`'s operations on libsecret's file backend, with the Secret Service path's guarantees:
/// one item per exact attribute set, byte-exact secrets, typed errors. The file has no locked state.
extension Keyring {
    /// True when this keyring's operations go to the file backend.
    var usesFileBackend: Bool { backend.resolved == .file }

    func fileSearch(_ attributes: [String: String]) throws(KeyringError) -> [KeyringItem] {
        try FileKeyring.run(timeout: timeout, exclusive: false) { file throws(KeyringError) in
            try file.matching(attributes).map(\.keyringItem)
        }
    }

    func fileReadAll(_ attributes: [String: String]) throws(KeyringError) -> [(
        item: KeyringItem, secret: Data
    )] {
        try FileKeyring.run(timeout: timeout, exclusive: false) { file throws(KeyringError) in
            try file.matching(attributes).map { ($0.keyringItem, $0.secret) }
        }
    }

    func fileStore(_ secret: Data, attributes: [String: String], label: String) throws(KeyringError) {
        try FileKeyring.run(timeout: timeout, exclusive: true) { file throws(KeyringError) in
            try file.store(attributes, label: label, secret: secret)
        }
    }

    func fileInsertIfAbsent(
        _ secret: Data, attributes: () -> [String: String], matching: [String: String], label: String, order: ItemOrder
    ) throws(KeyringError) -> InsertOutcome {
        try FileKeyring.run(timeout: timeout, exclusive: true) { file throws(KeyringError) -> InsertOutcome in
            if let found = try file.matching(matching).min(by: { order.precedes($0.keyringItem, $1.keyringItem) }) {
                return .existing(item: found.keyringItem, secret: found.secret)
            }
            // Built under the file's lock, so a "first made" stamp is never older than the check.
            try file.store(attributes(), label: label, secret: secret)
            return .inserted
        }
    }

    func fileWithCreationLock<T>(_ body: () throws(KeyringError) -> T) throws(KeyringError) -> T {
        try FileKeyringLock.with(
            keyringPath: FileKeyring.path, until: CallDeadline(timeout: timeout), isCancelled: { Deadline.isCancelled(nil) }, body)
    }

    func fileDelete(_ attributes: [String: String]) throws(KeyringError) -> Int {
        try FileKeyring.run(timeout: timeout, exclusive: true) { file throws(KeyringError) in
            try file.removeAll(attributes)
        }
    }

    func fileSecret(of item: KeyringItem) throws(KeyringError) -> Data? {
        try FileKeyring.run(timeout: timeout, exclusive: false) { file throws(KeyringError) in
            try file.items().first { $0.name == item.objectPath }?.secret
        }
    }

    func fileDelete(item: KeyringItem) throws(KeyringError) {
        try FileKeyring.run(timeout: timeout, exclusive: true) { file throws(KeyringError) in
            guard let found = try file.items().first(where: { $0.name == item.objectPath }) else { return }
            try file.remove(exactly: found.attributes)
        }
    }

    /// Reachable when the file opens with its key (every item's MAC checked); never locked.
    func fileStatus() -> ServiceStatus {
        do {
            try FileKeyring.run(timeout: timeout, exclusive: false) { _ throws(KeyringError) in }
            return ServiceStatus(
                isReachable: true, provider: "libsecret file backend", hasDefaultCollection: true, isLocked: false,
                defaultCollectionLabel: FileKeyring.path, problem: nil)
        } catch {
            return ServiceStatus(isReachable: false, provider: "libsecret file backend", problem: error)
        }
    }
}
