import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Reading the stores, and carrying out what `Decision.decide` planned. Nothing is written
/// outside the first-run lock, and a new identifier enters the keyring only through
/// `Keyring.insertIfAbsent`, so a creator never overwrites a value another process handed out.
extension IdentifierResolver {
    enum Mode: Equatable {
        case resolve, dryRun, migrate, migrateDryRun

        var writes: Bool { self == .resolve || self == .migrate }
        var migratesOnly: Bool { self == .migrate || self == .migrateDryRun }
    }

    static let schemaName = "io.keyringidentity.Identifier"
    static let tombstoneSchemaName = "io.keyringidentity.Reset"
    static let originAttribute = "identity-origin"
    /// When the identifier was first made (Unix seconds). A copy restored from a backup keeps it,
    /// so a pending reset still knows the copy is older than itself.
    static let createdAttribute = "identity-created"
    /// How many reset identifiers a tombstone remembers.
    static let tombstoneCapacity = 64

    /// A new item's attributes. `created` nil: `insertIfAbsent` stamps the time of the write.
    func itemAttributes(origin: String, created: Date?) -> [String: String] {
        var attributes = ["xdg:schema": Self.schemaName, Self.originAttribute: origin]
        if let created { attributes[Self.createdAttribute] = BackupFile.milliseconds(created) }
        return scope.keyringAttributes.merging(attributes) { current, _ in current }
    }

    /// The one order of identity items (Keyring's `ItemOrder`), told which attribute records
    /// when an identifier was first made. Reads, the create read-back and twin cleanup all use it.
    static let itemOrder = ItemOrder(firstMadeAttribute: createdAttribute)

    /// When the identifier in `item` was first made: its own record of that, else the item's creation.
    static func identifierCreated(_ item: KeyringItem) -> Date? { itemOrder.firstMade(item) }

    /// The reset record: which identifiers of this scope were reset, as checksums. It carries no
    /// `identity-scope` attribute, so identifier reads never see it.
    var tombstoneAttributes: [String: String] {
        ["identity-reset": scope.kind, "identity-name": scope.name, "xdg:schema": Self.tombstoneSchemaName]
    }

    var itemLabel: String { "Identifier for \(scope)" }

    /// Headless only when there is no keyring to reach at all and none ever served this user.
    func classify(_ error: KeyringError) -> Decision.KeyringReading {
        let noKeyring: Bool
        switch error {
        case .noSecretService: noKeyring = true
        case .noSessionBus: noKeyring = !(keyring?.isSessionBusConfigured ?? Keyring.isSessionBusConfigured)
        default: noKeyring = false
        }
        guard noKeyring else { return .failed(error) }
        return keyringServedBefore ? .unreachable(error) : .headless(error)
    }

    // MARK: The "a keyring served this user" marker

    /// `keyring-seen` in the library's state directory (or in the backup directory the caller chose).
    var keyringSeenPath: String? {
        guard let backup else { return nil }
        return (backup.isStandard ? StateDirectories.libraryStateDirectory() : backup.directory) + "/keyring-seen"
    }

    var keyringServedBefore: Bool {
        guard let keyringSeenPath else { return false }
        return access(keyringSeenPath, F_OK) == 0
    }

    /// Records that a Secret Service held an identifier for this user. From then on a missing
    /// Secret Service is a temporary failure, never a reason to make a new identifier.
    func noteKeyringServed() {
        guard let path = keyringSeenPath, access(path, F_OK) != 0 else { return }
        let directory = String(path[..<path.lastIndex(of: "/")!])
        guard (try? StateDirectories.makePrivateDirectory(directory)) != nil else { return }
        let fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd >= 0 {
            close(fd)
            backup?.durableStep?("keyring-seen")
        }
    }

    // MARK: Reading

    /// The common case, cheaply: one matching item whose value the backup already holds.
    func readAgreeingStores(_ budget: Budget) -> (String, BackupRecord)? {
        guard keyring != nil, case .present(let record) = backup?.read(quarantine: false) ?? .absent else { return nil }
        guard let bytes = try? budget.call({ keyring throws(KeyringError) in try keyring.soleSecret(scope.keyringAttributes) }) ?? nil,
            case .success(let value) = IdentifierText.normalize(bytes), Decision.sameBytes(value, record.identifier)
        else { return nil }
        // An identifier made before this environment's last reset, back in both stores (a keyring
        // that lost the reset, a backup put back from an old copy): the full reading decides. By
        // time alone: the same value made again after the reset (a deterministic policy) is served here.
        if let time = backup?.completedReset()?.time, record.created < time { return nil }
        noteKeyringServed()
        return (value, record)
    }

    /// - Parameter mayPrompt: false to never show an unlock dialog, whatever the keyring's policy.
    func readKeyring(_ budget: Budget, mayPrompt: Bool = true) -> Decision.KeyringReading {
        guard keyring != nil else { return .notUsed }
        do throws(KeyringError) {
            // The oldest identifier wins (`itemOrder`: by the second it was first made, ours first
            // within a second, then as every reader orders items).
            // An identifier is not a secret: it may travel without the session's encryption (DocC Keyring, "What the Secret Service protects").
            let found = try budget.call(mayPrompt: mayPrompt) { keyring throws(KeyringError) in
                try keyring.readAllNonSecret(scope.keyringAttributes)
            }
            let all = found.sorted { Self.itemOrder.precedes($0.item, $1.item) }
            guard let first = all.first else { return .absent(reset: ResetRecord()) }
            noteKeyringServed()
            guard case .success(let value) = IdentifierText.normalize(first.secret) else {
                var reason = "unreadable"
                if case .failure(let rejection) = IdentifierText.normalize(first.secret) { reason = rejection.reason }
                var invalid: [KeyringItem] = []
                var valid: [Decision.ValidItem] = []
                for (item, secret) in all {
                    if case .success(let text) = IdentifierText.normalize(secret) {
                        valid.append(.init(item: item, value: text))
                    } else {
                        invalid.append(item)
                    }
                }
                return .invalid(reason: reason, invalid: invalid, valid: valid)
            }
            let twins = all.dropFirst().map { other in
                let same: Bool
                if case .success(let otherValue) = IdentifierText.normalize(other.secret) {
                    same = Decision.sameBytes(otherValue, value)
                } else {
                    same = false
                }
                return Decision.Twin(item: other.item, differs: !same)
            }
            return .value(
                value, created: Self.identifierCreated(first.item), origin: first.item.attributes[Self.originAttribute], twins: twins)
        } catch {
            return classify(error)
        }
    }

    /// What resets in any environment recorded; a failure to read it is a failed keyring.
    func readTombstone(_ budget: Budget) -> Result<ResetRecord, KeyringError> {
        do throws(KeyringError) {
            let data = try budget.call { keyring throws(KeyringError) in try keyring.lookup(tombstoneAttributes) }
            return .success(ResetRecord(text: String(decoding: data ?? Data(), as: UTF8.self)))
        } catch {
            return .failure(error)
        }
    }

    /// Everything `Decision.decide` needs, read now.
    func gatherFacts(_ budget: Budget, quarantine: Bool) -> Decision.Facts {
        // A backup that holds the identifier stands in for a locked keyring without an unlock
        // dialog: an app's start should not ask for the keyring password just for its identifier
        // (DocC Keyring, "Unlocking, timeouts and concurrency"). Without one, the keyring's unlock policy applies.
        var backupHoldsValue = false
        if case .present = backup?.read(quarantine: false) ?? .absent { backupHoldsValue = true }
        var keyringNow = readKeyring(budget, mayPrompt: !backupHoldsValue)
        let backupNow = backup?.read(quarantine: quarantine) ?? .absent
        // Only a backup about to be restored into the keyring, or a corrupt or quarantined one
        // that blocks creation unless a later reset voids it, needs the reset record.
        let quarantined = backup?.quarantinedCopies() ?? []
        var needsResetRecord = !quarantined.isEmpty
        switch backupNow {
        case .present, .corrupt: needsResetRecord = true
        case .absent, .unreadable: break
        }
        if case .absent = keyringNow, needsResetRecord {
            switch readTombstone(budget) {
            case .success(let reset): keyringNow = .absent(reset: reset)
            case .failure(let error): keyringNow = .failed(error)
            }
        }
        return Decision.Facts(
            keyring: keyringNow, backup: backupNow, quarantinedBackups: quarantined,
            pendingReset: backup?.pendingReset(), hasBackup: backup != nil, backupPath: backup?.path ?? "", scope: scope,
            now: Date(), completedReset: backup?.completedReset())
    }

}
