#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// libsecret's file backend as a `LocalKeyring`: no locked state, no prompt.
struct FileLocalKeyring: LocalKeyring {
    func run<T>(
        timeout: Duration, exclusive: Bool, prompt: UnlockPolicy?, _ body: (borrowing FileKeyring) throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        try FileKeyring.run(timeout: timeout, exclusive: exclusive, body)
    }

    func withCreationLock<T>(timeout: Duration, _ body: () throws(KeyringError) -> T) throws(KeyringError) -> T {
        try FileKeyringLock.with(
            keyringPath: FileKeyring.path, until: CallDeadline(timeout: timeout), isCancelled: { Deadline.isCancelled(nil) }, body)
    }

    /// Reachable when the file opens with its key (every item's MAC checked); never locked.
    func status(timeout: Duration) -> ServiceStatus {
        do {
            try FileKeyring.run(timeout: timeout, exclusive: false) { _ throws(KeyringError) in }
            return ServiceStatus(
                isReachable: true, provider: "libsecret file backend", hasDefaultCollection: true, isLocked: false,
                defaultCollectionLabel: FileKeyring.path, problem: nil)
        } catch {
            return ServiceStatus(isReachable: false, provider: "libsecret file backend", problem: error)
        }
    }

    var isSessionBusConfigured: Bool { Keyring.isSessionBusConfigured }

    var privateStateDirectory: String? { nil }

    /// Other processes write the file: followed by inotify (`FileChangeSource`).
    func startWatch(
        _ scope: ChangeScope, _ options: CallOptions, _ continuation: AsyncStream<KeyringChange>.Continuation
    ) throws(KeyringError) -> @Sendable () -> Void {
        try ChangeWatch.start(FileChangeSource(scope: scope, timeout: options.timeout), continuation)
    }

    func lock(timeout: Duration) throws(KeyringError) {
        throw .unsupported("the file backend has no locked state, so it cannot be locked; its file is always encrypted")
    }
}

extension FileKeyring: LocalItems {
    /// An item here is named by its attributes: a name never moves to another item.
    var renumbersItems: Bool { false }

    var isLocked: Bool { false }
    var unlockOutcome: UnlockOutcome { .notAsked }
    var hidesLockedItems: Bool { false }

    func listed() throws(KeyringError) -> [LocalItem] {
        try items().map { LocalItem(item: $0.keyringItem, secret: $0.secret) }
    }

    func listed(matching attributes: [String: String]) throws(KeyringError) -> [LocalItem] {
        try matching(attributes).map { LocalItem(item: $0.keyringItem, secret: $0.secret) }
    }

    /// The file backend keeps no content type (every secret reads back as `text/plain`).
    func store(_ attributes: [String: String], label: String, secret: Data, contentType: String) throws(KeyringError) {
        try store(attributes, label: label, secret: secret)
    }

    func remove(objectPath: String) throws(KeyringError) {
        guard let found = try items().first(where: { $0.name == objectPath }) else { return }
        try remove(exactly: found.attributes)
    }
}
