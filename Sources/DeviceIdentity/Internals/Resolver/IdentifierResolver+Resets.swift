import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
/// Resets: applying one made while the keyring was unreachable, and the keyring's reset record.
extension IdentifierResolver {
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
        if (try? backup.completePendingReset()) != nil {
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

}
