import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A stable identifier for an app (or a vendor's apps), kept in the user's keyring.
///
/// It follows the pattern iOS apps adopted when the UDID went away: look in the keyring; if
/// it has none, adopt what an older version stored (migration); only then make a new one
/// (the generation policy). A private backup file mirrors the keyring and stands in when the
/// keyring cannot be reached.
///
/// **An identifier never changes silently.** A new one is made only when every store answered
/// "absent"; a locked, unreachable or unreadable store is not absent. First runs are serialized
/// across processes with a `flock`, and the stores are read again under it.
///
/// ```swift
/// let resolver = try IdentifierResolver(appID: "com.example.editor")
/// let id = try resolver.identifier()   // the same value on every run
/// ```
public struct IdentifierResolver: Sendable {
    /// Where the backup file lives.
    public enum BackupLocation: Sendable, Equatable {
        /// `$XDG_STATE_HOME/<name>/`, falling back to `~/.local/state/<name>/`.
        case standard
        /// A directory of your choosing.
        case directory(String)
        /// No backup file (the keyring alone).
        case none
    }

    /// Whose identifier this is.
    public let scope: IdentifierScope
    /// How a new identifier is made.
    public let policy: GenerationPolicy
    /// Legacy sources, tried in order when no store holds an identifier.
    public let migrations: [MigrationSource]
    /// The keyring, or nil to use the backup file alone.
    public let keyring: Keyring?
    /// The backup file's path, or nil when there is none.
    public var backupPath: String? { backup?.path }

    /// `var` so the event-order tests can observe its durable steps; never changed in use.
    var backup: BackupFile?
    let lock: FirstRunLock
    let cache = ResolutionCache()

    /// A resolver for one app with the defaults: the keyring, the backup file, random v4 UUIDs, no migrations.
    /// - Parameter appID: the app's ID, e.g. `com.example.editor`.
    /// - Throws: `IdentityError.invalidArgument` for an empty ID, `/`, `.`/`..` or control characters.
    public init(appID: String) throws(IdentityError) {
        try self.init(scope: .app(appID))
    }

    /// A resolver for the identifier a vendor's apps share (like identifierForVendor).
    /// Every app that names `vendorGroup` gets the same identifier; resetting it resets it for all.
    /// On Linux the group is a shared namespace, not an access-control boundary.
    /// - Parameters:
    ///   - appID: the calling app's ID (validated, and named in the item's label).
    ///   - vendorGroup: the vendor's group, e.g. `com.example`.
    /// - Throws: `IdentityError.invalidArgument` for an invalid app ID or group.
    public init(appID: String, vendorGroup: String) throws(IdentityError) {
        try IdentifierScope.app(appID).validate()
        try self.init(scope: .vendor(vendorGroup))
    }

    /// The full initializer.
    /// - Parameters:
    ///   - scope: an app's or a vendor group's identifier.
    ///   - policy: how a new identifier is made.
    ///   - migrations: legacy sources, tried in order when no store holds an identifier.
    ///   - keyring: the keyring to use (it sets the timeout and whether to prompt to unlock; a
    ///     backup that holds the identifier is served without prompting), or nil for the backup file alone.
    ///   - backup: where the backup file lives. With KeyringTesting's memory keyring, `.standard`
    ///     is a temporary directory of that keyring's, never the user's state directory.
    ///   - lockDirectories: where the first-run lock may live, in order of preference; nil means
    ///     `$XDG_RUNTIME_DIR/keyring-identity`, then the backup directory (with a memory keyring,
    ///     its temporary directory).
    /// - Throws: `IdentityError.invalidArgument` for an invalid scope, or when there is neither a keyring nor a backup.
    public init(
        scope: IdentifierScope,
        policy: GenerationPolicy = .randomUUID,
        migrations: [MigrationSource] = [],
        keyring: Keyring? = .default,
        backup: BackupLocation = .standard,
        lockDirectories: [String]? = nil
    ) throws(IdentityError) {
        try scope.validate()
        self.scope = scope
        self.policy = policy
        self.migrations = migrations
        self.keyring = keyring
        // A test's memory keyring keeps the "standard" backup and lock in a directory of its own.
        let testDirectory = keyring?.memory?.privateStateDirectory
        switch backup {
        case .standard where testDirectory != nil:
            self.backup = BackupFile(directory: testDirectory! + "/backup/" + scope.kind + "/" + scope.name, scope: scope)
        case .standard: self.backup = BackupFile(directory: BackupFile.defaultDirectory(for: scope), scope: scope, isStandard: true)
        case .directory(let directory):
            guard directory.hasPrefix("/") else { throw .invalidArgument("the backup directory must be an absolute path") }
            self.backup = BackupFile(directory: directory, scope: scope)
        case .none: self.backup = nil
        }
        if keyring == nil && self.backup == nil { throw .invalidArgument("a resolver needs a keyring, a backup file, or both") }
        let backupDirectory = self.backup?.directory ?? BackupFile.defaultDirectory(for: scope)
        let defaultLocks = testDirectory.map { [$0 + "/locks"] } ?? FirstRunLock.defaultDirectories(backupDirectory: backupDirectory)
        self.lock = FirstRunLock(directories: lockDirectories ?? defaultLocks, scope: scope)
    }

    /// The identifier. After the first call it is served from memory; call `refresh()` to read the stores again.
    /// - Returns: the canonical identifier.
    /// - Throws: `IdentityError` when no store can answer and absence is not proven, or when a
    ///   first run could not store its identifier: `.keyring(.timedOut)` while another process's
    ///   creation still holds the lock, `.keyring(.locked)`, `.keyringUnreachable`. Nothing new is
    ///   handed out then; a retry adopts what the keyring holds.
    public func identifier() throws(IdentityError) -> String {
        if let cached = cache.value { return cached }
        return try resolve().value
    }

    /// Reads every store, repairs what disagrees, and makes or migrates an identifier only on a
    /// proven absence. Updates the in-memory copy that `identifier()` serves.
    /// - Returns: the identifier with its provenance, stores, repairs and conflicts.
    /// - Throws: what `identifier()` throws.
    public func resolve() throws(IdentityError) -> Resolution {
        let resolution = withNotices(try run(.resolve).resolution!)
        cache.store(resolution.value)
        return resolution
    }

    /// Forgets the in-memory copy and resolves again.
    /// - Returns: the fresh resolution.
    /// - Throws: as `resolve()`.
    public func refresh() throws(IdentityError) -> Resolution {
        cache.clear()
        return try resolve()
    }

    /// What `resolve()` would do, without writing anything or removing legacy copies.
    /// - Returns: the resolution that would result; `isDryRun` is true. A generated value here is only a sample.
    /// - Throws: as `resolve()`.
    public func dryRun() throws(IdentityError) -> Resolution {
        withNotices(try run(.dryRun).resolution!)
    }

    /// A vendor identifier kept by libsecret's file backend lives in this sandbox's own keyring
    /// file: the vendor's other sandboxed apps each have theirs, so they do not share it.
    static let sandboxVendorNotice =
        "vendor scope in a file keyring (a sandboxed app): each sandboxed app has its own keyring file, so the vendor's other sandboxed apps do not share this identifier"

    func withNotices(_ resolution: Resolution) -> Resolution {
        guard case .vendor = scope, keyring?.backend.resolved == .file else { return resolution }
        var resolution = resolution
        resolution.notices.append(Self.sandboxVendorNotice)
        return resolution
    }

    /// Adopts a legacy identifier from `migrations` when this scope has none. Never generates,
    /// never overwrites.
    /// - Parameter dryRun: report what would happen without writing or removing anything.
    /// - Returns: what happened, including rejected sources.
    /// - Throws: `IdentityError` when a store or a source cannot be read.
    public func migrate(dryRun: Bool = false) throws(IdentityError) -> MigrationReport {
        let report = try run(dryRun ? .migrateDryRun : .migrate)
        if !dryRun, let value = report.resolution?.value { cache.store(value) }
        return report
    }

    /// Removes this scope's identifier from the keyring and the backup file, and nothing of any
    /// other scope. The next resolve makes (or migrates) a new one.
    ///
    /// The keyring keeps a small reset record (checksums of reset identifiers, never the
    /// identifiers), so a backup file in another environment, such as another app of a vendor
    /// group with its own state directory, never writes a reset identifier back.
    ///
    /// When the keyring cannot be reached (no bus, or no Secret Service yet), the reset is
    /// recorded next to the backup file and completed the next time the keyring answers: then
    /// only the identifier it recorded is removed, never a newer one.
    /// - Throws: `IdentityError.keyring` when the keyring is locked, broken or does not answer
    ///   (then nothing is removed).
    public func reset() throws(IdentityError) {
        let budget = Budget(timeout: keyring?.timeout ?? .seconds(25), keyring: keyring)
        let isCancelled = { budget.isCancelled }
        try lock.withLock(until: budget.deadline, timeout: budget.seconds, isCancelled: isCancelled) { () throws(IdentityError) in
            // Marker first: if anything below fails or the process dies, the old identifier stays
            // void (the marker records its checksum) instead of being restored from a leftover copy.
            let previous = backup?.pendingReset()
            var backupChecksum: String?
            if case .present(let record) = backup?.read(quarantine: false) { backupChecksum = record.checksum }
            if keyring != nil, let backup {
                try backup.markPendingReset(voidChecksum: backupChecksum ?? previous?.voidChecksum)
            }
            var reachedKeyring = false
            if keyring != nil {
                do throws(KeyringError) {
                    // Under the scope's creation lock, the reset record first: a process that sees the
                    // item gone then also sees why, and never restores it from an old backup.
                    try withScopeCreationLock(budget) { () throws(KeyringError) in
                        let all = try budget.call { keyring throws(KeyringError) in try keyring.readAllNonSecret(scope.keyringAttributes) }
                        var voided = Set([backupChecksum, previous?.voidChecksum].compactMap { $0 })
                        for (_, secret) in all { voided.insert(BackupRecord.checksum(String(decoding: secret, as: UTF8.self))) }
                        try recordReset(voided, at: Date(), budget: budget)
                        for (item, _) in all { try budget.call { keyring throws(KeyringError) in try keyring.delete(item: item) } }
                    }
                    reachedKeyring = true
                } catch {
                    // No keyring to reach: the reset stays pending and completes when it answers.
                    var canWait = false
                    switch classify(error) {
                    case .headless, .unreachable: canWait = backup != nil
                    default: break
                    }
                    if !canWait {
                        // Nothing was removed: take back the marker this call wrote, or put back the
                        // earlier one as it was. Its time must not move: a later time would void
                        // identifiers made between the two.
                        if let previous {
                            try? backup?.markPendingReset(voidChecksum: previous.voidChecksum, at: previous.time ?? Date())
                        } else {
                            try? backup?.clearPendingReset()
                        }
                        throw .keyring(error)
                    }
                }
            }
            try backup?.delete()
            backup?.removeQuarantinedFiles()
            if reachedKeyring { try backup?.completePendingReset() }
            cache.clear()
        }
    }
}

/// The in-process copy behind `identifier()`. `Guarded` makes the shared state safe across threads.
final class ResolutionCache: Sendable {
    private let state = Guarded<String?>(nil)

    var value: String? { state.withLock { $0 } }
    func store(_ value: String) { state.withLock { $0 = value } }
    func clear() { state.withLock { $0 = nil } }
}
