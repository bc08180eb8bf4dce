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

    func itemAttributes(origin: String, created: Date) -> [String: String] {
        scope.keyringAttributes.merging([
            "xdg:schema": Self.schemaName, Self.originAttribute: origin,
            Self.createdAttribute: BackupFile.milliseconds(created),
        ]) { current, _ in current }
    }

    /// When the identifier in `item` was first made: its own record of that, else the item's creation.
    static func identifierCreated(_ item: KeyringItem) -> Date? {
        if let text = item.attributes[createdAttribute], let seconds = Double(text) { return Date(timeIntervalSince1970: seconds) }
        return item.created
    }

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
        case .noSessionBus: noKeyring = !Keyring.isSessionBusConfigured
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
        if fd >= 0 { close(fd) }
    }

    // MARK: Reading

    /// The common case, cheaply: one matching item whose value the backup already holds.
    func readAgreeingStores(_ budget: Budget) -> (String, BackupRecord)? {
        guard keyring != nil, case .present(let record) = backup?.read(quarantine: false) ?? .absent else { return nil }
        guard let bytes = try? budget.call({ keyring throws(KeyringError) in try keyring.soleSecret(scope.keyringAttributes) }) ?? nil,
            case .success(let value) = IdentifierText.normalize(bytes), Decision.sameBytes(value, record.identifier)
        else { return nil }
        noteKeyringServed()
        return (value, record)
    }

    /// - Parameter mayPrompt: false to never show an unlock dialog, whatever the keyring's policy.
    func readKeyring(_ budget: Budget, mayPrompt: Bool = true) -> Decision.KeyringReading {
        guard keyring != nil else { return .notUsed }
        do throws(KeyringError) {
            // The oldest identifier wins: by the second it was first made (a copy restored from a
            // backup keeps that time; other clients' items have whole seconds), then as every
            // reader orders items.
            // An identifier is not a secret: it may travel without the session's encryption (README, Security).
            let found = try budget.call(mayPrompt: mayPrompt) { keyring throws(KeyringError) in
                try keyring.readAllNonSecret(scope.keyringAttributes)
            }
            // Within one second a foreign item cannot be ordered against ours, and only ours can
            // have been handed out: ours wins the tie. (Object paths order items by creation on
            // gnome-keyring, but not on the file backend, where they come from the attributes.)
            let all = found.sorted { lhs, rhs in
                let left = (Self.identifierCreated(lhs.item)?.timeIntervalSince1970 ?? 0).rounded(.down)
                let right = (Self.identifierCreated(rhs.item)?.timeIntervalSince1970 ?? 0).rounded(.down)
                if left != right { return left < right }
                let leftOurs = lhs.item.attributes[Self.createdAttribute] != nil
                let rightOurs = rhs.item.attributes[Self.createdAttribute] != nil
                return leftOurs != rightOurs ? leftOurs : KeyringItem.isOlder(lhs.item, rhs.item)
            }
            guard let first = all.first else { return .absent(reset: ResetRecord()) }
            noteKeyringServed()
            guard case .success(let value) = IdentifierText.normalize(first.secret) else {
                if case .failure(let rejection) = IdentifierText.normalize(first.secret) {
                    return .invalid(reason: rejection.reason, items: all.map(\.item))
                }
                return .invalid(reason: "unreadable", items: all.map(\.item))
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
        // (README, "Unlocking"). Without one, the keyring's unlock policy applies.
        var backupHoldsValue = false
        if case .present = backup?.read(quarantine: false) ?? .absent { backupHoldsValue = true }
        var keyringNow = readKeyring(budget, mayPrompt: !backupHoldsValue)
        let backupNow = backup?.read(quarantine: quarantine) ?? .absent
        // Only a backup about to be restored into the keyring needs the reset record.
        if case .absent = keyringNow, case .present = backupNow {
            switch readTombstone(budget) {
            case .success(let reset): keyringNow = .absent(reset: reset)
            case .failure(let error): keyringNow = .failed(error)
            }
        }
        return Decision.Facts(
            keyring: keyringNow, backup: backupNow, quarantinedBackup: backup?.quarantinedFiles().first,
            pendingReset: backup?.pendingReset(), hasBackup: backup != nil, backupPath: backup?.path ?? "", scope: scope,
            now: Date())
    }

}
