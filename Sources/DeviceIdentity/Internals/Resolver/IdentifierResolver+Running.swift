import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
/// Carrying out what `Decision.decide` planned: serving, repairing and inserting.
extension IdentifierResolver {
    // MARK: Running

    /// Shared by every mode. The first reading takes no lock and writes nothing; most runs end
    /// there. Repairs and creation happen under the lock, after reading every store again.
    func run(_ mode: Mode) throws(IdentityError) -> MigrationReport {
        let budget = Budget(timeout: keyring?.timeout ?? .seconds(25), keyring: keyring)
        let pending = backup?.hasPendingReset ?? false
        var lostReset = false
        if !pending, let (value, record) = readAgreeingStores(budget) {
            return existing(
                Resolution(
                    value: value, provenance: .keyring, origin: record.origin, createdAt: record.created,
                    storedIn: [.keyring, .backup], repairs: [], conflicts: [], keyringProblem: nil, isDryRun: !mode.writes), mode)
        }
        // A pending reset is applied under the lock before anything is served for writing.
        if !pending || !mode.writes {
            var facts = gatherFacts(budget, quarantine: false)
            // A completed reset the keyring lost is made again under the lock, or, for a dry run,
            // counted as made.
            if let lost = lostCompletedReset(facts, budget) {
                facts.pendingReset = lost
                lostReset = true
            }
            if !lostReset || !mode.writes {
                switch Decision.decide(facts) {
                case .fail(let error): throw error
                case .serve(let served) where served.repairs.isEmpty || !mode.writes:
                    return existing(resolution(served, dryRun: !mode.writes, needsRepair: !served.repairs.isEmpty), mode)
                case .create(let creation) where !mode.writes:
                    return try create(creation, mode: mode, budget: budget)
                default: break
                }
            }
        }
        let isCancelled = { budget.isCancelled }
        return try lock.withLock(until: budget.deadline, timeout: budget.seconds, isCancelled: isCancelled) {
            () throws(IdentityError) -> MigrationReport in
            // Asked again under the lock, which resets take too: a reset made meanwhile stands.
            if lostReset, !(backup?.hasPendingReset ?? true), let backup,
                let lost = lostCompletedReset(gatherFacts(budget, quarantine: false), budget), let time = lost.time
            {
                try backup.markPendingReset(voidChecksum: lost.voidChecksum, at: time)
            }
            var repairs = applyPendingReset(budget)
            // A second pass only when a reset overtook the first one's restore.
            for _ in 0..<2 {
                switch Decision.decide(gatherFacts(budget, quarantine: true)) {
                case .fail(let error): throw error
                case .serve(let served):
                    if let done = self.repair(served, budget: budget, notes: &repairs) { return existing(done, mode) }
                case .create(var creation):
                    creation.conflicts = repairs.conflicts + creation.conflicts
                    return try create(creation, mode: mode, budget: budget, repairs: repairs.repairs)
                }
            }
            throw .keyring(
                .serviceFailure(domain: "keyring-identity", code: 2, message: "the identifier was reset twice while being restored; retry"))
        }
    }

    /// The completed reset the keyring lost (`Decision.keyringLostReset`), asked of its reset
    /// record only when the keyring shows a value that reset voided; nil when the record cannot be
    /// read (the keyring's trouble then decides).
    func lostCompletedReset(_ facts: Decision.Facts, _ budget: Budget) -> PendingReset? {
        guard let done = Decision.possiblyLostReset(facts), case .success(let record) = readTombstone(budget),
            Decision.keyringLostReset(done, record: record)
        else { return nil }
        return done
    }

    struct Notes {
        var repairs: [String] = []
        var conflicts: [String] = []
    }

    func resolution(_ served: Decision.Served, dryRun: Bool, needsRepair: Bool, notes: Notes = Notes()) -> Resolution {
        Resolution(
            value: served.value, provenance: served.provenance, origin: served.origin, createdAt: served.createdAt,
            storedIn: served.storedIn, repairs: notes.repairs, conflicts: notes.conflicts + served.conflicts,
            keyringProblem: served.keyringProblem, isDryRun: dryRun, needsRepair: needsRepair)
    }

    /// Carries out a serve plan's repairs (under the lock). Nil when a reset overtook the plan,
    /// which then has to be made again from fresh readings.
    func repair(_ plan: Decision.Served, budget: Budget, notes: inout Notes) -> Resolution? {
        var served = plan
        for repair in plan.repairs {
            switch repair {
            case .writeBackup(let record):
                do throws(IdentityError) {
                    try backup?.write(record)
                    served.storedIn.insert(.backup)
                    notes.repairs.append(
                        served.conflicts.isEmpty ? "backup file written from the keyring" : "backup file rewritten from the keyring")
                } catch {
                    notes.conflicts.append("backup file could not be written (\(error))")
                }
            case .removeTwins(let items):
                var removed = 0
                for item in items {
                    do throws(KeyringError) {
                        try budget.call { keyring throws(KeyringError) in try keyring.delete(item: item) }
                        removed += 1
                    } catch {
                        notes.conflicts.append("a duplicate keyring item could not be removed (\(error))")
                    }
                }
                if removed > 0 { notes.repairs.append("removed \(removed) duplicate keyring item(s)") }
            case .restoreKeyring(let value, let origin, let replacing):
                let restoredCreated = plan.createdAt ?? Date()
                do throws(KeyringError) {
                    for item in replacing { try budget.call { keyring throws(KeyringError) in try keyring.delete(item: item) } }
                    // Checked and restored under the lock resets take: a reset that ran since the
                    // stores were read wins, and the old backup is never written back.
                    let restored = try withScopeCreationLock(budget) { () throws(KeyringError) -> Decision.WriteOutcome? in
                        switch readTombstone(budget) {
                        case .success(let reset):
                            let record = BackupRecord(scope: scope, identifier: value, created: restoredCreated, origin: origin)
                            if reset.voids(record) { return nil }
                        case .failure(let error): throw error
                        }
                        return writeIfAbsent(value, origin: origin, created: restoredCreated, budget: budget)
                    }
                    guard let restored else {
                        notes.conflicts.append("the backup's identifier was reset meanwhile")
                        return nil
                    }
                    switch restored {
                    case .stored:
                        served.storedIn.insert(.keyring)
                        notes.repairs.append("keyring item restored from the backup file")
                    case .found(let other, _):
                        // Another process stored an identifier first: the keyring's wins, and the
                        // backup follows it.
                        served.value = other
                        served.provenance = .keyring
                        served.storedIn = [.keyring]
                        notes.conflicts.append("the keyring already held another identifier; the keyring's wins")
                        let record = BackupRecord(scope: scope, identifier: other, created: Date(), origin: "keyring")
                        if (try? backup?.write(record)) != nil { served.storedIn.insert(.backup) }
                    case .foundInvalid(let reason):
                        served.keyringProblem = .invalidArgument("the keyring item for \(scope) holds an invalid identifier (\(reason))")
                    case .foundVoid:
                        served.keyringProblem = .serviceFailure(
                            domain: "keyring-identity", code: 2, message: "a pending reset cannot complete yet")
                    case .failed(let error):
                        served.keyringProblem = error
                    case .notAttempted:
                        break
                    }
                } catch {
                    served.keyringProblem = error
                }
            }
        }
        return resolution(served, dryRun: false, needsRepair: false, notes: notes)
    }

    /// Create-if-absent in the keyring, then search again and read "the" item back, whatever the
    /// lock did: that item, not the write's own answer, says what the keyring holds. An existing
    /// item is adopted, never overwritten. Never throws: every outcome goes to the decision.
    /// `created` nil (a new value): stamped inside the creation lock, right before the write, so
    /// it never ranks before an item stored while this creator waited; a restored copy keeps its time.
    func writeIfAbsent(_ value: String, origin: String, created: Date?, budget: Budget) -> Decision.WriteOutcome {
        do throws(KeyringError) {
            _ = try budget.call { keyring throws(KeyringError) in
                try keyring.insertIfAbsent(
                    Data(value.utf8), attributes: itemAttributes(origin: origin, created: created), matching: scope.keyringAttributes,
                    label: itemLabel, order: Self.itemOrder, stampsFirstMade: created == nil)
            }
            noteKeyringServed()
            let readBack = try budget.call { keyring throws(KeyringError) in try keyring.readAllNonSecret(scope.keyringAttributes) }
            guard let first = readBack.min(by: { Self.itemOrder.precedes($0.item, $1.item) }) else {
                // Removed between the write and the read (a reset elsewhere): nothing to serve.
                return .failed(.serviceFailure(domain: "keyring-identity", code: 1, message: "the identifier did not read back"))
            }
            guard case .success(let other) = IdentifierText.normalize(first.secret) else {
                if case .failure(let rejection) = IdentifierText.normalize(first.secret) { return .foundInvalid(reason: rejection.reason) }
                return .foundInvalid(reason: "unreadable")
            }
            if Decision.sameBytes(other, value) { return .stored(created: Self.identifierCreated(first.item)) }
            // A value a pending reset voids is never adopted, even when the reset cannot complete
            // yet (say the keyring's default collection is locked while the item sits in another).
            if let pending = backup?.pendingReset(), pending.voids(value: other, created: Self.identifierCreated(first.item)) {
                return .foundVoid
            }
            return .found(other, item: first.item)
        } catch {
            return .failed(error)
        }
    }

    /// The report for an identifier that already existed (nothing was migrated or made).
    func existing(_ resolution: Resolution, _ mode: Mode) -> MigrationReport {
        MigrationReport(
            outcome: mode.migratesOnly ? .destinationHadIdentifier : .nothingToMigrate,
            resolution: resolution, rejected: [], legacyRemoved: false)
    }

}
