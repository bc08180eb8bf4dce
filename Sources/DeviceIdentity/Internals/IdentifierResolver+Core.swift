import Keyring
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The decision logic behind resolve, dry run and migrate. The cardinal rule lives here: a new
/// identifier is made (or migrated) only when every store answered "absent".
extension IdentifierResolver {
    enum Mode: Equatable {
        case resolve, dryRun, migrate, migrateDryRun

        var writes: Bool { self == .resolve || self == .migrate }
        var migratesOnly: Bool { self == .migrate || self == .migrateDryRun }
    }

    /// What the keyring said.
    enum KeyringReading {
        case value(String, created: Date?)
        case absent
        /// No bus or no Secret Service: the backup may serve, and a new identifier may live there alone.
        case unavailable(KeyringError)
        /// Locked, timed out or failed: not absent, so nothing may be generated.
        case failed(KeyringError)
        /// An item exists but its value breaks the identifier rules.
        case invalid(reason: String)
        /// This resolver uses no keyring.
        case notUsed
    }

    static let schemaName = "io.keyringidentity.Identifier"

    var itemAttributes: [String: String] {
        scope.keyringAttributes.merging(["xdg:schema": Self.schemaName]) { current, _ in current }
    }

    var itemLabel: String { "Identifier for \(scope)" }

    func readKeyring() -> KeyringReading {
        guard let keyring else { return .notUsed }
        do {
            guard let (item, secret) = try keyring.firstItem(scope.keyringAttributes) else { return .absent }
            switch IdentifierText.normalize(secret) {
            case .success(let value): return .value(value, created: item.created)
            case .failure(let rejection): return .invalid(reason: rejection.reason)
            }
        } catch {
            switch error {
            case .noSessionBus, .noSecretService: return .unavailable(error)
            default: return .failed(error)
            }
        }
    }

    func readBackup() -> BackupState {
        backup?.read() ?? .absent
    }

    /// Shared by every mode. Reads without the lock first, so the common case (an identifier
    /// exists) takes no lock; a proven absence is re-checked under the lock before anything is made.
    func run(_ mode: Mode) throws(IdentityError) -> MigrationReport {
        var notes = Notes()
        if let existing = try settle(readKeyring(), readBackup(), mode: mode, notes: &notes) {
            return MigrationReport(
                outcome: mode.migratesOnly ? .destinationHadIdentifier : .nothingToMigrate,
                resolution: existing, rejected: [], legacyRemoved: false)
        }
        if !mode.writes { return try create(keyringReading: readKeyring(), mode: mode, notes: notes) }
        return try lock.withLock(timeout: lockTimeout) { () throws(IdentityError) -> MigrationReport in
            var notesUnderLock = Notes()
            let keyringNow = readKeyring()
            if let existing = try settle(keyringNow, readBackup(), mode: mode, notes: &notesUnderLock) {
                return MigrationReport(
                    outcome: mode.migratesOnly ? .destinationHadIdentifier : .nothingToMigrate,
                    resolution: existing, rejected: [], legacyRemoved: false)
            }
            notesUnderLock.conflicts.insert(contentsOf: notes.conflicts, at: 0)
            return try create(keyringReading: keyringNow, mode: mode, notes: notesUnderLock)
        }
    }

    struct Notes {
        var repairs: [String] = []
        var conflicts: [String] = []
    }

    /// Decides from what the stores said. Returns nil only on a proven absence.
    func settle(_ keyringReading: KeyringReading, _ backupState: BackupState, mode: Mode, notes: inout Notes) throws(IdentityError) -> Resolution? {
        var record: BackupRecord?
        switch backupState {
        case .present(let present): record = present
        case .absent: break
        case .corrupt(let reason, let quarantinedAs):
            notes.conflicts.append("backup file quarantined (\(reason))" + (quarantinedAs.map { " as \($0)" } ?? ""))
        case .unreadable(let reason):
            // Not absent. Only a keyring value can stand without it.
            guard case .value = keyringReading else { throw .backupUnreadable(path: backup?.path ?? "", reason: reason) }
            notes.conflicts.append("backup file unreadable (\(reason))")
        }

        switch keyringReading {
        case .value(let value, let created):
            let matches = record?.identifier == value
            if record != nil && !matches {
                notes.conflicts.append("backup file held a different identifier; the keyring's wins")
            }
            var stores: Set<Resolution.Store> = [.keyring]
            if let backup {
                if matches {
                    stores.insert(.backup)
                } else if mode.writes {
                    let rewritten = BackupRecord(scope: scope, identifier: value, created: created ?? Date(), origin: "keyring")
                    do {
                        try backup.write(rewritten)
                        stores.insert(.backup)
                        notes.repairs.append(record == nil ? "backup file written from the keyring" : "backup file rewritten from the keyring")
                    } catch {
                        notes.conflicts.append("backup file could not be written (\(error))")
                    }
                }
            }
            return Resolution(
                value: value, provenance: .keyring, origin: matches ? record?.origin : nil,
                createdAt: (matches ? record?.created : nil) ?? created, storedIn: stores,
                repairs: notes.repairs, conflicts: notes.conflicts, keyringProblem: nil, isDryRun: !mode.writes)

        case .absent, .invalid:
            if case .invalid(let reason) = keyringReading {
                guard record != nil else {
                    throw .keyring(.invalidArgument("the keyring item for \(scope) holds an invalid identifier (\(reason)); run reset to start over"))
                }
                notes.conflicts.append("keyring item held an invalid identifier (\(reason))")
            }
            guard let record else { return nil }
            // The item was deleted behind our back (or never pushed): write it back from the backup.
            var stores: Set<Resolution.Store> = [.backup]
            var problem: KeyringError?
            if mode.writes {
                do {
                    try writeKeyring(record.identifier)
                    stores.insert(.keyring)
                    notes.repairs.append("keyring item restored from the backup file")
                } catch {
                    problem = error
                }
            }
            return Resolution(
                value: record.identifier, provenance: .backup, origin: record.origin, createdAt: record.created,
                storedIn: stores, repairs: notes.repairs, conflicts: notes.conflicts, keyringProblem: problem,
                isDryRun: !mode.writes)

        case .unavailable(let error), .failed(let error):
            guard let record else {
                if case .failed = keyringReading { throw .keyring(error) }
                return nil  // no Secret Service at all: the headless default may be made
            }
            return Resolution(
                value: record.identifier, provenance: .backup, origin: record.origin, createdAt: record.created,
                storedIn: [.backup], repairs: notes.repairs, conflicts: notes.conflicts, keyringProblem: error,
                isDryRun: !mode.writes)

        case .notUsed:
            guard let record else { return nil }
            return Resolution(
                value: record.identifier, provenance: .backup, origin: record.origin, createdAt: record.created,
                storedIn: [.backup], repairs: notes.repairs, conflicts: notes.conflicts, keyringProblem: nil,
                isDryRun: !mode.writes)
        }
    }

    /// Every store said absent: migrate, or (outside migrate-only modes) generate, then write and verify.
    func create(keyringReading: KeyringReading, mode: Mode, notes: Notes) throws(IdentityError) -> MigrationReport {
        var rejected: [MigrationReport.Rejection] = []
        var adopted: (value: String, source: MigrationSource)?
        for source in migrations {
            switch try source.read(keyring: keyring ?? .default) {
            case .value(let value):
                adopted = (value, source)
            case .absent:
                continue
            case .rejected(let reason):
                rejected.append(.init(source: source.description, reason: reason))
                continue
            }
            break
        }

        let value: String
        let provenance: Resolution.Provenance
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
        var notes = notes
        notes.conflicts += rejected.map { "migration source \($0.source) rejected: \($0.reason)" }
        let now = Date()

        guard mode.writes else {
            let resolution = Resolution(
                value: value, provenance: provenance, origin: provenance.description, createdAt: now, storedIn: [],
                repairs: [], conflicts: notes.conflicts, keyringProblem: keyringProblem(keyringReading), isDryRun: true)
            let outcome: MigrationReport.Outcome = adopted.map { .wouldAdopt(source: $0.source.description) } ?? .nothingToMigrate
            return MigrationReport(outcome: outcome, resolution: resolution, rejected: rejected, legacyRemoved: false)
        }

        var stores: Set<Resolution.Store> = []
        var problem = keyringProblem(keyringReading)
        if case .absent = keyringReading {
            do {
                try writeKeyring(value)
                stores.insert(.keyring)
            } catch {
                problem = error  // e.g. no default collection: the backup alone holds it for now
            }
        }
        if let backup {
            do throws(IdentityError) {
                try backup.write(BackupRecord(scope: scope, identifier: value, created: now, origin: provenance.description))
                guard case .present(let readBack) = backup.read(), readBack.identifier == value else {
                    throw IdentityError.verificationFailed(store: "backup file")
                }
                stores.insert(.backup)
            } catch {
                if stores.isEmpty { throw error }
                notes.conflicts.append("backup file could not be written (\(error))")
            }
        }
        if stores.isEmpty { throw .keyring(problem ?? .noSecretService) }

        var removed = false
        if let adopted, adopted.source.removesLegacyCopy {
            try adopted.source.removeLegacy(keyring: keyring ?? .default)
            removed = true
        }
        let resolution = Resolution(
            value: value, provenance: provenance, origin: provenance.description, createdAt: now, storedIn: stores,
            repairs: notes.repairs, conflicts: notes.conflicts, keyringProblem: problem, isDryRun: false)
        let outcome: MigrationReport.Outcome = adopted.map { .adopted(source: $0.source.description) } ?? .nothingToMigrate
        return MigrationReport(outcome: outcome, resolution: resolution, rejected: rejected, legacyRemoved: removed)
    }

    /// Stores the identifier in the keyring and reads it back.
    func writeKeyring(_ value: String) throws(KeyringError) {
        guard let keyring else { throw .noSecretService }
        try keyring.store(Data(value.utf8), attributes: itemAttributes, label: itemLabel)
        guard let (_, secret) = try keyring.firstItem(scope.keyringAttributes), secret == Data(value.utf8) else {
            throw .serviceFailure(domain: "keyring-identity", code: 1, message: "the identifier did not read back the same")
        }
    }

    func keyringProblem(_ reading: KeyringReading) -> KeyringError? {
        switch reading {
        case .unavailable(let error), .failed(let error): return error
        default: return nil
        }
    }
}
