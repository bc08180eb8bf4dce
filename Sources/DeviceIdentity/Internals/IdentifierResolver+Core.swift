import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The decision logic behind resolve, dry run and migrate. The cardinal rule lives here: a new
/// identifier is made (or migrated) only when every store answered "absent", and nothing is
/// written outside the first-run lock.
extension IdentifierResolver {
    enum Mode: Equatable {
        case resolve, dryRun, migrate, migrateDryRun

        var writes: Bool { self == .resolve || self == .migrate }
        var migratesOnly: Bool { self == .migrate || self == .migrateDryRun }
    }

    /// What the keyring said.
    enum KeyringReading {
        case value(String, created: Date?, origin: String?)
        case absent
        /// No session bus configured at all, or a bus without a Secret Service: a headless
        /// session. The backup may serve, and a new identifier may live there alone.
        case unavailable(KeyringError)
        /// Locked, timed out, a broken bus, any failure: not absent, so nothing may be generated.
        case failed(KeyringError)
        /// An item exists but its value breaks the identifier rules.
        case invalid(reason: String)
        /// This resolver uses no keyring.
        case notUsed
    }

    static let schemaName = "io.keyringidentity.Identifier"
    static let originAttribute = "identity-origin"

    func itemAttributes(origin: String) -> [String: String] {
        scope.keyringAttributes.merging(["xdg:schema": Self.schemaName, Self.originAttribute: origin]) { current, _ in current }
    }

    var itemLabel: String { "Identifier for \(scope)" }

    /// Only a session with no bus configured at all, or a bus that has no Secret Service, is
    /// "unavailable". A configured bus that fails is broken, which proves nothing.
    static func classify(_ error: KeyringError) -> KeyringReading {
        switch error {
        case .noSecretService: return .unavailable(error)
        case .noSessionBus where !Keyring.isSessionBusConfigured: return .unavailable(error)
        default: return .failed(error)
        }
    }

    /// The common case, cheaply: the keyring's value by lookup alone (no item properties), when
    /// the backup already holds the same value. Nil means "read it all".
    func readAgreeingStores() -> (String, BackupRecord)? {
        guard let keyring, case .present(let record) = readBackup(quarantine: false) else { return nil }
        guard let bytes = try? keyring.lookup(scope.keyringAttributes),
            case .success(let value) = IdentifierText.normalize(bytes), value == record.identifier
        else { return nil }
        return (value, record)
    }

    func readKeyring() -> KeyringReading {
        guard let keyring else { return .notUsed }
        do {
            guard let (item, secret) = try keyring.firstItem(scope.keyringAttributes) else { return .absent }
            switch IdentifierText.normalize(secret) {
            case .success(let value): return .value(value, created: item.created, origin: item.attributes[Self.originAttribute])
            case .failure(let rejection): return .invalid(reason: rejection.reason)
            }
        } catch {
            return Self.classify(error)
        }
    }

    func readBackup(quarantine: Bool) -> BackupState {
        backup?.read(quarantine: quarantine) ?? .absent
    }

    /// Shared by every mode. The first reading takes no lock and writes nothing; most runs end
    /// there. Repairs and creation happen under the lock, after reading every store again.
    func run(_ mode: Mode) throws(IdentityError) -> MigrationReport {
        let pending = backup?.hasPendingReset ?? false
        if !pending, let (value, record) = readAgreeingStores() {
            return existing(
                Resolution(
                    value: value, provenance: .keyring, origin: record.origin, createdAt: record.created,
                    storedIn: [.keyring, .backup], repairs: [], conflicts: [], keyringProblem: nil, isDryRun: !mode.writes), mode)
        }
        // A pending reset must be applied under the lock before anything is served for writing.
        if !pending || !mode.writes {
            var notes = Notes(conflicts: pending ? ["a reset is pending"] : [])
            let (keyringNow, backupNow) = readStores(quarantine: false)
            if let found = try settle(keyringNow, backupNow, writes: false, dryRun: !mode.writes, notes: &notes),
                !found.needsRepair || !mode.writes
            {
                return existing(found, mode)
            }
            if !mode.writes { return try create(keyringReading: keyringNow, mode: mode, notes: notes) }
        }
        return try lock.withLock(timeout: lockTimeout) { () throws(IdentityError) -> MigrationReport in
            var notes = Notes()
            try applyPendingReset(notes: &notes)
            let (keyringNow, backupNow) = readStores(quarantine: true)
            if let found = try settle(keyringNow, backupNow, writes: true, dryRun: false, notes: &notes) {
                return existing(found, mode)
            }
            return try create(keyringReading: keyringNow, mode: mode, notes: notes)
        }
    }

    /// Both stores; while a reset is pending, the keyring's old value and a backup still holding
    /// the reset identifier are void.
    func readStores(quarantine: Bool) -> (keyring: KeyringReading, backup: BackupState) {
        let keyringNow = readKeyring()
        let backupNow = readBackup(quarantine: quarantine)
        guard backup?.hasPendingReset == true else { return (keyringNow, backupNow) }
        return (Self.classifyPending(keyringNow), voidingPendingReset(backupNow))
    }

    /// The report for an identifier that already existed (nothing was migrated or made).
    func existing(_ resolution: Resolution, _ mode: Mode) -> MigrationReport {
        MigrationReport(
            outcome: mode.migratesOnly ? .destinationHadIdentifier : .nothingToMigrate,
            resolution: resolution, rejected: [], legacyRemoved: false)
    }

    /// A reset made while the keyring was unreachable: remove the keyring's copy once it answers.
    func applyPendingReset(notes: inout Notes) throws(IdentityError) {
        guard let backup, backup.hasPendingReset, let keyring else { return }
        do throws(KeyringError) {
            try keyring.delete(scope.keyringAttributes)
        } catch {
            if case .failed = Self.classify(error) { throw .keyring(error) }
            return  // still unreachable: the reset stays pending, and the keyring's content is ignored
        }
        // A backup still holding the reset identifier (a reset interrupted between its steps) is void too.
        let current = backup.read(quarantine: false)
        if case .present = current, voidingPendingReset(current) == .absent { try backup.delete() }
        try backup.clearPendingReset()
        notes.repairs.append("a pending reset removed the keyring's old identifier")
    }

    /// A backup that still holds the identifier a pending reset removed reads as absent.
    func voidingPendingReset(_ state: BackupState) -> BackupState {
        guard case .present(let record) = state, let void = backup?.pendingResetChecksum(), record.checksum == void else {
            return state
        }
        return .absent
    }

    /// While a reset is pending (the keyring was unreachable), the keyring's old value is void.
    static func classifyPending(_ reading: KeyringReading) -> KeyringReading {
        switch reading {
        case .value, .invalid: return .unavailable(.noSecretService)
        default: return reading
        }
    }

    struct Notes {
        var repairs: [String] = []
        var conflicts: [String] = []
    }

    /// Decides from what the stores said. Returns nil only on a proven absence. Without
    /// `writes`, a needed repair is flagged in `needsRepair` instead of made.
    func settle(
        _ keyringReading: KeyringReading, _ backupState: BackupState, writes: Bool, dryRun: Bool, notes: inout Notes
    ) throws(IdentityError) -> Resolution? {
        var record: BackupRecord?
        var backupNeedsWrite = false
        switch backupState {
        case .present(let present): record = present
        case .absent: backupNeedsWrite = backup != nil
        case .corrupt(let reason, let quarantinedAs):
            backupNeedsWrite = true
            notes.conflicts.append("backup file " + (quarantinedAs.map { "quarantined as \($0)" } ?? "is corrupt") + " (\(reason))")
        case .unreadable(let reason):
            // Not absent. Only a keyring value can stand without it.
            guard case .value = keyringReading else { throw .backupUnreadable(path: backup?.path ?? "", reason: reason) }
            backupNeedsWrite = true
            notes.conflicts.append("backup file unreadable (\(reason))")
        }

        switch keyringReading {
        case .value(let value, let created, let keyringOrigin):
            let matches = record?.identifier == value
            if record != nil && !matches {
                notes.conflicts.append("backup file held a different identifier; the keyring's wins")
                backupNeedsWrite = true
            }
            let origin = matches ? record?.origin ?? keyringOrigin : keyringOrigin
            var stores: Set<Resolution.Store> = [.keyring]
            if matches { stores.insert(.backup) }
            var needsRepair = false
            if let backup, backupNeedsWrite {
                if writes {
                    let rewritten = BackupRecord(scope: scope, identifier: value, created: created ?? Date(), origin: origin ?? "keyring")
                    do {
                        try backup.write(rewritten)
                        stores.insert(.backup)
                        notes.repairs.append(
                            record == nil ? "backup file written from the keyring" : "backup file rewritten from the keyring")
                    } catch {
                        notes.conflicts.append("backup file could not be written (\(error))")
                    }
                } else {
                    needsRepair = true
                }
            }
            return Resolution(
                value: value, provenance: .keyring, origin: origin, createdAt: (matches ? record?.created : nil) ?? created,
                storedIn: stores, repairs: notes.repairs, conflicts: notes.conflicts, keyringProblem: nil,
                isDryRun: dryRun, needsRepair: needsRepair)

        case .absent, .invalid:
            if case .invalid(let reason) = keyringReading {
                guard record != nil else {
                    throw .keyring(
                        .invalidArgument("the keyring item for \(scope) holds an invalid identifier (\(reason)); run reset to start over"))
                }
                notes.conflicts.append("keyring item held an invalid identifier (\(reason))")
            }
            guard let record else { return nil }
            // The item was deleted behind our back (or never pushed): write it back from the backup.
            var stores: Set<Resolution.Store> = [.backup]
            var problem: KeyringError?
            if writes {
                do {
                    try writeKeyring(record.identifier, origin: record.origin, replacingInvalid: keyringReading)
                    stores.insert(.keyring)
                    notes.repairs.append("keyring item restored from the backup file")
                } catch {
                    problem = error
                }
            }
            return servedFromBackup(record, storedIn: stores, keyringProblem: problem, notes, dryRun: dryRun, needsRepair: !writes)

        case .unavailable(let error), .failed(let error):
            guard let record else {
                if case .failed = keyringReading { throw .keyring(error) }
                // A backup that was corrupt may have held the identifier, and the keyring that could
                // tell cannot be reached: that is not a proven absence.
                if let lost = backupLostEvidence(backupState) {
                    throw .backupUnreadable(
                        path: backup?.path ?? "",
                        reason:
                            "it was corrupt and is kept as \(lost), and the keyring cannot be reached to recover the identifier; reconnect to the keyring, or delete \(lost) to start over"
                    )
                }
                return nil  // no Secret Service at all: the headless default may be made
            }
            return servedFromBackup(record, storedIn: [.backup], keyringProblem: error, notes, dryRun: dryRun)

        case .notUsed:
            guard let record else { return nil }
            return servedFromBackup(record, storedIn: [.backup], keyringProblem: nil, notes, dryRun: dryRun)
        }
    }

    func servedFromBackup(
        _ record: BackupRecord, storedIn: Set<Resolution.Store>, keyringProblem: KeyringError?, _ notes: Notes,
        dryRun: Bool, needsRepair: Bool = false
    ) -> Resolution {
        Resolution(
            value: record.identifier, provenance: .backup, origin: record.origin, createdAt: record.created,
            storedIn: storedIn, repairs: notes.repairs, conflicts: notes.conflicts, keyringProblem: keyringProblem,
            isDryRun: dryRun, needsRepair: needsRepair)
    }

    /// The path of a corrupt backup, current or quarantined earlier, if there is one.
    func backupLostEvidence(_ state: BackupState) -> String? {
        if case .corrupt(_, let quarantinedAs) = state { return quarantinedAs ?? backup?.path }
        return backup?.quarantinedFiles().first
    }

    /// Every store said absent: migrate, or (outside migrate-only modes) generate, then write and verify.
    func create(keyringReading: KeyringReading, mode: Mode, notes: Notes) throws(IdentityError) -> MigrationReport {
        var rejected: [MigrationReport.Rejection] = []
        var adopted: (value: String, item: KeyringItem?, source: MigrationSource)?
        for source in migrations {
            switch try source.read(keyring: keyring ?? .default) {
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
                try writeKeyring(value, origin: provenance.description, replacingInvalid: .absent)
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
            try adopted.source.removeLegacy(item: adopted.item, keyring: keyring ?? .default)
            removed = true
        }
        let resolution = Resolution(
            value: value, provenance: provenance, origin: provenance.description, createdAt: now, storedIn: stores,
            repairs: notes.repairs, conflicts: notes.conflicts, keyringProblem: problem, isDryRun: false)
        let outcome: MigrationReport.Outcome = adopted.map { .adopted(source: $0.source.description) } ?? .nothingToMigrate
        return MigrationReport(outcome: outcome, resolution: resolution, rejected: rejected, legacyRemoved: removed)
    }

    /// Stores the identifier in the keyring and reads it back. An invalid item is removed first.
    func writeKeyring(_ value: String, origin: String, replacingInvalid reading: KeyringReading) throws(KeyringError) {
        guard let keyring else { throw .noSecretService }
        if case .invalid = reading { try keyring.delete(scope.keyringAttributes) }
        try keyring.store(Data(value.utf8), attributes: itemAttributes(origin: origin), label: itemLabel)
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
