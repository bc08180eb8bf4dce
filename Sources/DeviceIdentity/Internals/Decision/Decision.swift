import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The resolver's decision as a pure function: what each store said goes in, a plan comes out
/// (serve with these repairs, create, or fail). Nothing here reads or writes; the executor in
/// `Internals/Resolver` carries plans out. The cardinal rule lives here.
enum Decision {
    /// What the keyring said.
    enum KeyringReading: Equatable {
        /// The oldest identity item's value, and the other items that answered the same query.
        case value(String, created: Date?, origin: String?, twins: [Twin])
        /// No identity item; `reset` is what resets (in any environment) recorded in the keyring.
        case absent(reset: ResetRecord)
        /// No keyring for this user at all: no bus, or a bus without a Secret Service, and none
        /// ever served this user. A new identifier may live in the backup alone.
        case headless(KeyringError)
        /// No bus or no Secret Service now, but one served this user before: a login race or a
        /// provider not started yet. Not absent.
        case unreachable(KeyringError)
        /// Locked, timed out, a broken bus, any failure: not absent.
        case failed(KeyringError)
        /// "The" item's value breaks the identifier rules. `invalid` are the items whose values
        /// do, `valid` the others with their values, "the" item of those first.
        case invalid(reason: String, invalid: [KeyringItem], valid: [ValidItem])
        /// This resolver uses no keyring.
        case notUsed
    }

    /// An identity item whose value keeps the identifier rules.
    struct ValidItem: Equatable {
        let item: KeyringItem
        let value: String
    }

    /// A backup moved aside as corrupt, and when it was written (``BackupFile/writtenWhole(_:)``).
    struct QuarantinedCopy: Equatable {
        let path: String
        let written: Date?
    }

    /// An identity item beside the oldest one, and whether its value differs.
    struct Twin: Equatable {
        let item: KeyringItem
        let differs: Bool
    }

    /// Everything the decision depends on.
    struct Facts: Equatable {
        var keyring: KeyringReading
        var backup: BackupState
        /// Backups moved aside as corrupt earlier: each may have held the identifier.
        var quarantinedBackups: [QuarantinedCopy]
        /// A reset that has not reached the keyring yet.
        var pendingReset: PendingReset?
        /// Whether this resolver keeps a backup file at all.
        var hasBackup: Bool
        var backupPath: String
        var scope: IdentifierScope
        var now: Date
        /// The last reset this environment completed (`BackupFile.completedReset`).
        var completedReset: PendingReset? = nil
    }

    /// A write that brings the stores back in line.
    enum Repair: Equatable {
        /// Write the backup file from the keyring's value.
        case writeBackup(BackupRecord)
        /// Put the backup's value back into the keyring, unless another value got there first;
        /// `replacing` are invalid items to remove first.
        case restoreKeyring(value: String, origin: String, replacing: [KeyringItem])
        /// Remove identity items beside the oldest one.
        case removeTwins([KeyringItem])
    }

    /// An identifier that exists, and what to repair around it.
    struct Served: Equatable {
        var value: String
        var provenance: Resolution.Provenance
        var origin: String?
        var createdAt: Date?
        var storedIn: Set<Resolution.Store>
        var repairs: [Repair]
        var conflicts: [String]
        var keyringProblem: KeyringError?
    }

    /// Every store proved absent: migrate or generate.
    struct Creation: Equatable {
        /// The keyring answered "absent", so the new value goes there (create-if-absent).
        var writesKeyring: Bool
        var keyringProblem: KeyringError?
        /// The backup held a value a reset voided; it is removed first.
        var discardsBackup: Bool
        var conflicts: [String]
        /// Quarantined backups written before this reset time are void; they are removed first.
        var discardsQuarantinedBefore: Date? = nil
    }

    enum Plan: Equatable {
        case serve(Served)
        case create(Creation)
        case fail(IdentityError)
    }

    /// The latest reset this decision knows of: the keyring's reset record (any environment's)
    /// or this environment's pending one, whichever is later.
    static func latestReset(keyring: KeyringReading, pending: PendingReset?) -> Date? {
        var latest = pending?.time
        if case .absent(let reset) = keyring, let time = reset.time, latest.map({ time > $0 }) ?? true { latest = time }
        return latest
    }

    /// Whether a copy written at `written` predates `reset`. An unknown time never does.
    static func writtenBefore(_ written: Date?, _ reset: Date) -> Bool {
        (written ?? .distantFuture) < reset
    }

    /// Byte equality: Swift's `==` treats NFC and NFD as equal, but the stores must hold the same bytes.
    static func sameBytes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.elementsEqual(rhs.utf8)
    }

    /// The completed reset the keyring may have lost, before its reset record is read: the keyring
    /// shows an identifier that reset voided. Only this environment can tell; another one sees the
    /// identifier as live until then.
    static func possiblyLostReset(_ facts: Facts) -> PendingReset? {
        guard facts.pendingReset == nil, let done = facts.completedReset, done.time != nil,
            case .value(let value, let created, _, _) = facts.keyring, done.voids(value: value, created: created)
        else { return nil }
        return done
    }

    /// A reset this environment completed that the keyring lost: a daemon that acknowledged it and
    /// restarted from an older file lost its reset record with it, so `record` has neither the
    /// reset's time (or a later one) nor the checksum it voided. Then the reset is made again, as a
    /// pending one, before anything is served. While the record has it, the keyring's value is
    /// newer than the reset (the same identifier made again by a deterministic policy or a
    /// migration, or a clock set back), and it is served.
    static func keyringLostReset(_ done: PendingReset, record: ResetRecord) -> Bool {
        if let checksum = done.voidChecksum, record.checksums.contains(checksum) { return false }
        guard let time = done.time else { return false }
        return record.time.map { $0 < time } ?? true
    }

    static func decide(_ facts: Facts) -> Plan {
        var conflicts: [String] = []
        var keyring = facts.keyring
        var backup = facts.backup
        var backupIsVoid = false
        var quarantined = facts.quarantinedBackups
        var quarantineVoidBefore: Date?

        // A reset not yet applied voids the value it recorded, wherever it still is.
        if let pending = facts.pendingReset {
            if case .value(let value, let created, _, _) = keyring, pending.voids(value: value, created: created) {
                keyring = .absent(reset: ResetRecord())
            }
            if case .present(let record) = backup, record.checksum == pending.voidChecksum {
                backup = .absent
                backupIsVoid = true
            }
        }
        // A reset made in another environment (another state directory) left a tombstone.
        if case .absent(let reset) = keyring, case .present(let record) = backup, reset.voids(record) {
            backup = .absent
            backupIsVoid = true
            conflicts.append("the backup file held an identifier that was reset; it was discarded")
        }
        // Every identifier made before a reset is void, so is every damaged copy written before it,
        // in either order of damage and reset, and whether it was moved aside before or after the
        // reset: such a copy can only hold a reset identifier. A copy written after the latest
        // reset may hold a live one, and still blocks.
        if let latestReset = Self.latestReset(keyring: keyring, pending: facts.pendingReset) {
            if case .corrupt(let reason, _, let born) = backup, Self.writtenBefore(born, latestReset) {
                backup = .absent
                backupIsVoid = true
                conflicts.append("the backup file was corrupt (\(reason)) but written before the identifier was reset; it was discarded")
            }
            if quarantined.contains(where: { Self.writtenBefore($0.written, latestReset) }) {
                quarantined.removeAll { Self.writtenBefore($0.written, latestReset) }
                quarantineVoidBefore = latestReset
                conflicts.append("a backup moved aside as corrupt, written before the identifier was reset, was discarded")
            }
        }

        var record: BackupRecord?
        switch backup {
        case .present(let present): record = present
        case .absent: break
        case .corrupt(let reason, let quarantinedAs, _):
            conflicts.append("backup file " + (quarantinedAs.map { "quarantined as \($0)" } ?? "is corrupt") + " (\(reason))")
        case .unreadable(let reason):
            conflicts.append("backup file unreadable (\(reason))")
        }

        func fromBackup(_ record: BackupRecord, repairs: [Repair], problem: KeyringError?) -> Plan {
            .serve(
                Served(
                    value: record.identifier, provenance: .backup, origin: record.origin, createdAt: record.created,
                    storedIn: [.backup], repairs: repairs, conflicts: conflicts, keyringProblem: problem))
        }

        /// Without a usable backup: a corrupt or unreadable one is not absent.
        func backupFailure() -> IdentityError? {
            switch backup {
            case .unreadable(let reason): return .backupUnreadable(path: facts.backupPath, reason: reason)
            case .corrupt(let reason, let quarantinedAs, _):
                return .backupCorrupt(path: quarantinedAs ?? facts.backupPath, reason: reason)
            default:
                if let lost = quarantined.first {
                    return .backupCorrupt(path: lost.path, reason: "it was moved aside earlier because it was corrupt")
                }
                return nil
            }
        }

        switch keyring {
        case .value(let value, let created, let keyringOrigin, let twins):
            let matches = record.map { sameBytes($0.identifier, value) } ?? false
            var repairs: [Repair] = []
            if !twins.isEmpty {
                repairs.append(.removeTwins(twins.map(\.item)))
                let differing = twins.filter(\.differs).count
                if differing > 0 {
                    conflicts.append("\(differing) more keyring item(s) held other identifiers; the oldest item wins")
                }
            }
            if record != nil && !matches { conflicts.append("backup file held a different identifier; the keyring's wins") }
            let origin = matches ? record?.origin ?? keyringOrigin : keyringOrigin
            if facts.hasBackup && !matches {
                repairs.append(
                    .writeBackup(
                        BackupRecord(scope: facts.scope, identifier: value, created: created ?? facts.now, origin: origin ?? "keyring")))
            }
            return .serve(
                Served(
                    value: value, provenance: .keyring, origin: origin, createdAt: (matches ? record?.created : nil) ?? created,
                    storedIn: matches ? [.keyring, .backup] : [.keyring], repairs: repairs, conflicts: conflicts,
                    keyringProblem: nil))

        case .absent:
            if let record {
                // Deleted behind our back (or never pushed): write it back from the backup.
                return fromBackup(
                    record, repairs: [.restoreKeyring(value: record.identifier, origin: record.origin, replacing: [])], problem: nil)
            }
            if let failure = backupFailure() { return .fail(failure) }
            return .create(
                Creation(
                    writesKeyring: true, keyringProblem: nil, discardsBackup: backupIsVoid, conflicts: conflicts,
                    discardsQuarantinedBefore: quarantineVoidBefore))

        case .invalid(let reason, let invalid, let valid):
            conflicts.append("keyring item held an invalid identifier (\(reason))")
            // A valid item may have been handed out: it is never removed here. The backup serves
            // when it holds the value that becomes "the" item once the invalid ones are gone.
            if let record, let next = valid.first, sameBytes(next.value, record.identifier) {
                return .serve(
                    Served(
                        value: record.identifier, provenance: .keyring, origin: record.origin, createdAt: record.created,
                        storedIn: [.keyring, .backup], repairs: [.removeTwins(invalid)], conflicts: conflicts, keyringProblem: nil))
            }
            if let record, valid.isEmpty {
                return fromBackup(
                    record, repairs: [.restoreKeyring(value: record.identifier, origin: record.origin, replacing: invalid)], problem: nil)
            }
            let others = valid.isEmpty ? "" : " beside \(valid.count) valid one(s) the backup does not hold"
            return .fail(
                .keyring(
                    .invalidArgument(
                        "the keyring item for \(facts.scope) holds an invalid identifier (\(reason))\(others); run reset to start over")
                ))

        case .headless(let error):
            if let record { return fromBackup(record, repairs: [], problem: error) }
            if let failure = backupFailure() { return .fail(failure) }
            return .create(
                Creation(
                    writesKeyring: false, keyringProblem: error, discardsBackup: backupIsVoid, conflicts: conflicts,
                    discardsQuarantinedBefore: quarantineVoidBefore))

        case .unreachable(let error):
            if let record { return fromBackup(record, repairs: [], problem: error) }
            return .fail(backupFailure() ?? .keyringUnreachable(error))

        case .failed(let error):
            if let record { return fromBackup(record, repairs: [], problem: error) }
            if case .unreadable(let reason) = backup { return .fail(.backupUnreadable(path: facts.backupPath, reason: reason)) }
            return .fail(.keyring(error))

        case .notUsed:
            if let record { return fromBackup(record, repairs: [], problem: nil) }
            if let failure = backupFailure() { return .fail(failure) }
            return .create(
                Creation(
                    writesKeyring: false, keyringProblem: nil, discardsBackup: backupIsVoid, conflicts: conflicts,
                    discardsQuarantinedBefore: quarantineVoidBefore))
        }
    }
}

/// What the keyring's reset record says: the checksums of reset identifiers, and when the latest
/// reset happened. Every identifier made before a reset is void, wherever a copy of it survives.
struct ResetRecord: Equatable {
    var checksums: Set<String> = []
    var time: Date?

    func voids(_ record: BackupRecord) -> Bool {
        if checksums.contains(record.checksum) { return true }
        guard let time else { return false }
        return record.created < time
    }

    /// The secret's text: one checksum a line, and `t:<unix time>` for the latest reset.
    init(text: String) {
        for line in text.split(separator: "\n") {
            if line.hasPrefix("t:") {
                time = Double(line.dropFirst(2)).map { Date(timeIntervalSince1970: $0) }
            } else {
                checksums.insert(String(line))
            }
        }
    }

    init(checksums: Set<String> = [], time: Date? = nil) {
        self.checksums = checksums
        self.time = time
    }
}

extension PendingReset {
    /// Whether this reset removes a keyring value: the one it recorded, and any identifier made
    /// before the reset (the environment that reset may never have seen the keyring's current
    /// value). An identifier made later is kept: it is newer. Our own items carry their creation
    /// time in milliseconds; another client's item has whole seconds, so one made in the reset's
    /// own second counts as older.
    func voids(value: String, created: Date?) -> Bool {
        if let voidChecksum, BackupRecord.checksum(value) == voidChecksum { return true }
        guard let time else { return voidChecksum == nil }
        guard let created else { return voidChecksum == nil }
        return created < time
    }
}
