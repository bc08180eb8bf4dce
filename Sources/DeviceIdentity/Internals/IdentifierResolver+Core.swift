@_spi(KeyringIdentityInternals) import Keyring

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

    // MARK: Running

    /// Shared by every mode. The first reading takes no lock and writes nothing; most runs end
    /// there. Repairs and creation happen under the lock, after reading every store again.
    func run(_ mode: Mode) throws(IdentityError) -> MigrationReport {
        let budget = Budget(timeout: keyring?.timeout ?? .seconds(25), keyring: keyring)
        let pending = backup?.hasPendingReset ?? false
        if !pending, let (value, record) = readAgreeingStores(budget) {
            return existing(
                Resolution(
                    value: value, provenance: .keyring, origin: record.origin, createdAt: record.created,
                    storedIn: [.keyring, .backup], repairs: [], conflicts: [], keyringProblem: nil, isDryRun: !mode.writes), mode)
        }
        // A pending reset is applied under the lock before anything is served for writing.
        if !pending || !mode.writes {
            let plan = Decision.decide(gatherFacts(budget, quarantine: false))
            switch plan {
            case .fail(let error): throw error
            case .serve(let served) where served.repairs.isEmpty || !mode.writes:
                return existing(resolution(served, dryRun: !mode.writes, needsRepair: !served.repairs.isEmpty), mode)
            case .create(let creation) where !mode.writes:
                return try create(creation, mode: mode, budget: budget)
            default: break
            }
        }
        let isCancelled = { budget.isCancelled }
        return try lock.withLock(until: budget.deadline, timeout: budget.seconds, isCancelled: isCancelled) {
            () throws(IdentityError) -> MigrationReport in
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
                    let restored = try withScopeCreationLock(budget) { () throws(KeyringError) -> Inserted? in
                        switch readTombstone(budget) {
                        case .success(let reset):
                            let record = BackupRecord(scope: scope, identifier: value, created: restoredCreated, origin: origin)
                            if reset.voids(record) { return nil }
                        case .failure(let error): throw error
                        }
                        return try insert(value, origin: origin, created: restoredCreated, budget: budget)
                    }
                    guard let restored else {
                        notes.conflicts.append("the backup's identifier was reset meanwhile")
                        return nil
                    }
                    switch restored {
                    case .inserted:
                        served.storedIn.insert(.keyring)
                        notes.repairs.append("keyring item restored from the backup file")
                    case .existing(_, let other):
                        // Another process stored an identifier first: the keyring's wins, and the
                        // backup follows it.
                        served.value = other
                        served.provenance = .keyring
                        served.storedIn = [.keyring]
                        notes.conflicts.append("the keyring already held another identifier; the keyring's wins")
                        let record = BackupRecord(scope: scope, identifier: other, created: Date(), origin: "keyring")
                        if (try? backup?.write(record)) != nil { served.storedIn.insert(.backup) }
                    }
                } catch {
                    served.keyringProblem = error
                }
            }
        }
        return resolution(served, dryRun: false, needsRepair: false, notes: notes)
    }

    enum Inserted {
        case inserted
        case existing(item: KeyringItem, value: String)
    }

    /// Create-if-absent in the keyring, then read back. An existing item is adopted, never overwritten.
    func insert(_ value: String, origin: String, created: Date, budget: Budget) throws(KeyringError) -> Inserted {
        let outcome = try budget.call { keyring throws(KeyringError) in
            try keyring.insertIfAbsent(
                Data(value.utf8), attributes: itemAttributes(origin: origin, created: created), matching: scope.keyringAttributes,
                label: itemLabel)
        }
        noteKeyringServed()
        switch outcome {
        case .inserted:
            let readBack = try budget.call { keyring throws(KeyringError) in try keyring.readAllNonSecret(scope.keyringAttributes) }
            guard let first = readBack.first, first.secret == Data(value.utf8) else {
                throw .serviceFailure(domain: "keyring-identity", code: 1, message: "the identifier did not read back the same")
            }
            return .inserted
        case .existing(let item, let secret):
            guard case .success(let other) = IdentifierText.normalize(secret) else {
                throw .invalidArgument("the keyring item for \(scope) holds an invalid identifier; run reset to start over")
            }
            if Decision.sameBytes(other, value) { return .inserted }
            // A value a pending reset voids is never adopted, even when the reset cannot complete
            // yet (say the keyring's default collection is locked while the item sits in another).
            if let pending = backup?.pendingReset(), pending.voids(value: other, created: Self.identifierCreated(item)) {
                throw .serviceFailure(
                    domain: "keyring-identity", code: 2,
                    message: "the keyring still holds an identifier that a pending reset removes, and the reset cannot complete yet")
            }
            return .existing(item: item, value: other)
        }
    }

    /// The report for an identifier that already existed (nothing was migrated or made).
    func existing(_ resolution: Resolution, _ mode: Mode) -> MigrationReport {
        MigrationReport(
            outcome: mode.migratesOnly ? .destinationHadIdentifier : .nothingToMigrate,
            resolution: resolution, rejected: [], legacyRemoved: false)
    }

    // MARK: Resets

    /// A reset made while the keyring was unreachable: once it answers, remove the value the reset
    /// recorded (or, when it recorded none, values older than the reset), and nothing newer.
    func applyPendingReset(_ budget: Budget) -> Notes {
        var notes = Notes()
        guard let backup, let pending = backup.pendingReset(), keyring != nil else { return notes }
        do throws(KeyringError) {
            _ = try budget.call { keyring throws(KeyringError) in try keyring.soleSecret(scope.keyringAttributes) }
        } catch {
            return notes  // still unreachable or locked: the reset stays pending, its value stays void
        }
        var voided = Set(pending.voidChecksum.map { [$0] } ?? [])
        do throws(KeyringError) {
            try withScopeCreationLock(budget) { () throws(KeyringError) in
                let all = try budget.call { keyring throws(KeyringError) in try keyring.readAllNonSecret(scope.keyringAttributes) }
                let void = all.filter {
                    pending.voids(value: String(decoding: $0.secret, as: UTF8.self), created: Self.identifierCreated($0.item))
                }
                for (_, secret) in void { voided.insert(BackupRecord.checksum(String(decoding: secret, as: UTF8.self))) }
                try recordReset(voided, at: pending.time, budget: budget)  // the record first, as reset() does
                for (item, _) in void { try budget.call { keyring throws(KeyringError) in try keyring.delete(item: item) } }
            }
        } catch {
            notes.conflicts.append("a pending reset could not be completed yet (\(error))")
            return notes
        }
        // A backup still holding the reset identifier (a reset interrupted between its steps) is void too.
        if case .present(let record) = backup.read(quarantine: false), record.checksum == pending.voidChecksum {
            try? backup.delete()
        }
        if (try? backup.clearPendingReset()) != nil {
            notes.repairs.append("a pending reset removed the keyring's old identifier")
            // As reset() does; a copy quarantined after the reset may hold a newer identifier, so it stays.
            backup.removeQuarantinedFiles(writtenBefore: pending.time)
        }
        return notes
    }

    /// Runs `body` under the scope's creation lock: the one `insertIfAbsent` takes for these
    /// attributes, shared by every process of every environment on this keyring.
    func withScopeCreationLock<T>(_ budget: Budget, _ body: () throws(KeyringError) -> T) throws(KeyringError) -> T {
        try budget.call { keyring throws(KeyringError) in try keyring.withCreationLock(for: scope.keyringAttributes, body) }
    }

    /// Adds `checksums` and the reset's time to this scope's reset record in the keyring, so that a
    /// backup in another environment that still holds a reset identifier (or any identifier made
    /// before the reset) never writes it back.
    func recordReset(_ checksums: Set<String>, at time: Date?, budget: Budget) throws(KeyringError) {
        let previous = try budget.call { keyring throws(KeyringError) in try keyring.lookup(tombstoneAttributes) }
        var record = ResetRecord(text: String(decoding: previous ?? Data(), as: UTF8.self))
        var lines = String(decoding: previous ?? Data(), as: UTF8.self).split(separator: "\n").map(String.init).filter {
            !$0.hasPrefix("t:")
        }
        lines.removeAll { checksums.contains($0) }
        lines += checksums.sorted()
        if let time, record.time.map({ time > $0 }) ?? true { record.time = time }
        let kept = (lines.suffix(Self.tombstoneCapacity) + (record.time.map { ["t:" + BackupFile.milliseconds($0)] } ?? []))
            .joined(separator: "\n")
        try budget.call { keyring throws(KeyringError) in
            try keyring.store(Data(kept.utf8), attributes: tombstoneAttributes, label: "Reset record for \(scope)")
        }
    }

    // MARK: Creating

    /// Every store said absent: migrate, or (outside migrate-only modes) generate, then write and verify.
    func create(
        _ creation: Decision.Creation, mode: Mode, budget: Budget, repairs: [String] = []
    ) throws(IdentityError) -> MigrationReport {
        var rejected: [MigrationReport.Rejection] = []
        var adopted: (value: String, item: KeyringItem?, source: MigrationSource)?
        for source in migrations {
            switch try source.read(keyring: budget.currentKeyring ?? .default) {
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
        let now = Date()

        guard mode.writes else {
            let resolution = Resolution(
                value: value, provenance: provenance, origin: provenance.description, createdAt: now, storedIn: [],
                repairs: [], conflicts: notes.conflicts, keyringProblem: creation.keyringProblem, isDryRun: true)
            let outcome: MigrationReport.Outcome = adopted.map { .wouldAdopt(source: $0.source.description) } ?? .nothingToMigrate
            return MigrationReport(outcome: outcome, resolution: resolution, rejected: rejected, legacyRemoved: false)
        }

        if creation.discardsBackup { try backup?.delete() }
        var stores: Set<Resolution.Store> = []
        var problem = creation.keyringProblem
        var adoptedExisting = false
        if creation.writesKeyring {
            do throws(KeyringError) {
                switch try insert(value, origin: provenance.description, created: now, budget: budget) {
                case .inserted:
                    stores.insert(.keyring)
                case .existing(_, let other):
                    // Another process, whatever its environment, created one first: adopt it.
                    value = other
                    provenance = .keyring
                    stores.insert(.keyring)
                    adoptedExisting = true
                    notes.conflicts.append("another process stored an identifier first; adopted it")
                }
            } catch {
                problem = error  // e.g. no default collection: the backup alone holds it for now
            }
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
            try adopted.source.removeLegacy(item: adopted.item, keyring: budget.currentKeyring ?? .default)
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

/// One public call's time budget: every keyring call gets the time left, lock waits end at the
/// same deadline, and a keyring that timed out once is not asked again in the same call.
final class Budget {
    let deadline: ContinuousClock.Instant
    let seconds: Double
    private let keyring: Keyring?
    private var failure: KeyringError?
    /// Set when an async caller's task can cancel this call (keyring calls follow it on their own).
    let cancellation = OperationCancellation.active

    init(timeout: Duration, keyring: Keyring?) {
        self.deadline = ContinuousClock.now + timeout
        self.seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        self.keyring = keyring
    }

    var isCancelled: Bool { cancellation?.isCancelled ?? false }

    /// The keyring with the time left as its timeout; nil without a keyring or time.
    var currentKeyring: Keyring? {
        guard var keyring else { return nil }
        let left = ContinuousClock.now.duration(to: deadline)
        keyring.timeout = max(left, .milliseconds(1))
        return keyring
    }

    /// Runs one keyring call with the time left. Timeouts and cancellation are remembered, so
    /// later calls fail at once instead of waiting again.
    /// - Parameter mayPrompt: false to never show an unlock dialog, whatever the keyring's policy.
    func call<T>(mayPrompt: Bool = true, _ body: (Keyring) throws(KeyringError) -> T) throws(KeyringError) -> T {
        if let failure { throw failure }
        if isCancelled { throw remember(.cancelled) }
        guard var keyring = currentKeyring else { throw .noSecretService }
        if !mayPrompt { keyring.unlock = .never }
        if ContinuousClock.now >= deadline { throw remember(.timedOut(seconds: seconds)) }
        do throws(KeyringError) {
            return try body(keyring)
        } catch .timedOut {
            throw remember(.timedOut(seconds: seconds))
        } catch .cancelled {
            throw remember(.cancelled)
        }
    }

    private func remember(_ error: KeyringError) -> KeyringError {
        failure = error
        return error
    }
}
