import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
/// Creating a first identifier: migrate, or generate, then write and verify.
extension IdentifierResolver {
    // MARK: Creating

    /// Every store said absent: migrate, or (outside migrate-only modes) generate, then write and verify.
    func create(
        _ creation: Decision.Creation, mode: Mode, budget: Budget, repairs: [String] = []
    ) throws(IdentityError) -> MigrationReport {
        var rejected: [MigrationReport.Rejection] = []
        var adopted: (value: String, item: KeyringItem?, source: MigrationSource)?
        for source in migrations {
            switch try source.read(budget: budget) {
            case .value(let value, let item):
                adopted = (value, item, source)
            case .absent:
                continue
            case .rejected(let reason):
                rejected.append(.init(source: source.description, reason: reason))
                continue
            }
            break
        }

        var value: String
        var provenance: Resolution.Provenance
        if let adopted {
            value = adopted.value
            provenance = .migrated(source: adopted.source.description)
        } else if mode.migratesOnly {
            return MigrationReport(outcome: .nothingToMigrate, resolution: nil, rejected: rejected, legacyRemoved: false)
        } else {
            let generated = try policy.generate()
            value = generated.value
            provenance = .generated(policy: generated.policy)
        }
        var notes = Notes(repairs: repairs, conflicts: creation.conflicts)
        notes.conflicts += rejected.map { "migration source \($0.source) rejected: \($0.reason)" }
        // A dry run's or a backup-only value's time; one the keyring holds takes the time its
        // item was stamped with, inside the creation lock.
        var now = Date()

        guard mode.writes else {
            let resolution = Resolution(
                value: value, provenance: provenance, origin: provenance.description, createdAt: now, storedIn: [],
                repairs: [], conflicts: notes.conflicts, keyringProblem: creation.keyringProblem, isDryRun: true)
            let outcome: MigrationReport.Outcome = adopted.map { .wouldAdopt(source: $0.source.description) } ?? .nothingToMigrate
            return MigrationReport(outcome: outcome, resolution: resolution, rejected: rejected, legacyRemoved: false)
        }

        if creation.discardsBackup { try backup?.delete() }
        if let before = creation.discardsQuarantinedBefore { backup?.removeQuarantinedFiles(writtenBefore: before) }
        var stores: Set<Resolution.Store> = []
        var adoptedExisting = false
        let written =
            creation.writesKeyring
            ? writeIfAbsent(value, origin: provenance.description, created: nil, budget: budget) : Decision.WriteOutcome.notAttempted
        switch written {
        case .stored(let created?): now = created
        case .found(_, let item): now = Self.identifierCreated(item) ?? now
        default: break
        }
        let problem: KeyringError?
        switch Decision.decideAfterCreate(written, value: value, creation: creation, hasBackup: backup != nil, scope: scope) {
        case .fail(let error):
            throw error
        case .keyring(let kept, let adopted):
            stores.insert(.keyring)
            problem = nil
            if adopted {
                // Another process, whatever its environment, created one first: adopt it.
                value = kept
                provenance = .keyring
                adoptedExisting = true
                notes.conflicts.append("another process stored an identifier first; adopted it")
            }
        case .backupOnly(let why):
            problem = why  // e.g. no default collection: the backup alone holds it for now
        }
        if let backup {
            do throws(IdentityError) {
                try backup.write(BackupRecord(scope: scope, identifier: value, created: now, origin: provenance.description))
                guard case .present(let readBack) = backup.read(), Decision.sameBytes(readBack.identifier, value) else {
                    throw IdentityError.verificationFailed(store: "backup file")
                }
                stores.insert(.backup)
            } catch {
                if stores.isEmpty { throw error }
                notes.conflicts.append("backup file could not be written (\(error))")
            }
        }
        if stores.isEmpty { throw .keyring(problem ?? .noSecretService) }

        // The legacy copy goes only once the keyring (the source of truth) holds the value, or
        // when this resolver has no keyring at all.
        var removed = false
        if let adopted, !adoptedExisting, adopted.source.removesLegacyCopy, stores.contains(.keyring) || keyring == nil {
            try adopted.source.removeLegacy(item: adopted.item, budget: budget)
            removed = true
        } else if let adopted, !adoptedExisting, adopted.source.removesLegacyCopy {
            notes.conflicts.append("the legacy copy was kept because the keyring does not hold the identifier yet")
        }
        let resolution = Resolution(
            value: value, provenance: provenance, origin: adoptedExisting ? nil : provenance.description, createdAt: now,
            storedIn: stores, repairs: notes.repairs, conflicts: notes.conflicts, keyringProblem: stores.contains(.keyring) ? nil : problem,
            isDryRun: false)
        let outcome: MigrationReport.Outcome =
            adoptedExisting
            ? (mode.migratesOnly ? .destinationHadIdentifier : .nothingToMigrate)
            : adopted.map { .adopted(source: $0.source.description) } ?? .nothingToMigrate
        return MigrationReport(outcome: outcome, resolution: resolution, rejected: rejected, legacyRemoved: removed)
    }
}
