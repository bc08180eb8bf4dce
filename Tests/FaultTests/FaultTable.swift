// The fault table: one row per scenario, declared once. Each test asserts its row's exit code
// (and "identifier kept" where one existed), and FaultTableDocumentTests checks that
// fault-table.md (copied into the DocC article by scripts/docs-tables) is exactly this table rendered, so the two cannot drift.
// Regenerate the markdown with scripts/fault-table.
import Foundation
import Testing

enum Kept: String, Sendable {
    /// An identifier existed and must be unchanged afterwards.
    case yes = "yes"
    /// No identifier existed before the scenario.
    case none = "— (none existed)"
    /// Not about an identifier (secrets, arguments).
    case notApplicable = "n/a"
}

struct FaultRow: Sendable {
    let id: String
    let area: String
    let scenario: String
    let outcome: String
    /// idtool's exit status; nil for cases only the library can exercise.
    let exit: Int32?
    let kept: Kept
}

enum FaultTable {
    static let rows: [FaultRow] = [
        // Environment
        .init(id: "env.no-bus", area: "environment", scenario: "no session bus, backup holds the identifier",
              outcome: "served from the backup, one-line notice on stderr", exit: 0, kept: .yes),
        .init(id: "env.no-bus.new", area: "environment", scenario: "no session bus, new app, no keyring ever served this user",
              outcome: "generated into the backup alone; pushed into the keyring once a bus is back", exit: 0, kept: .none),
        .init(id: "env.no-bus.new.served", area: "environment", scenario: "no session bus, new app, a keyring served this user before",
              outcome: "error \"cannot be reached now\", nothing generated (an SSH session must not mint what the desktop's keyring would overrule)",
              exit: 75, kept: .none),
        .init(id: "env.no-secret-service", area: "environment", scenario: "a bus with no Secret Service, backup holds the identifier",
              outcome: "served from the backup, one-line notice", exit: 0, kept: .yes),
        .init(id: "env.no-default-collection", area: "environment", scenario: "no default collection, identifier already stored",
              outcome: "served from the keyring (reads search every collection)", exit: 0, kept: .yes),
        .init(id: "env.no-default-collection.new", area: "environment", scenario: "no default collection, new app",
              outcome: "generated into the backup alone, notice; written to the keyring once a default collection is back",
              exit: 0, kept: .none),
        .init(id: "env.locked.backup", area: "environment", scenario: "keyring locked, backup present",
              outcome: "served from the backup (degraded); keyring left alone", exit: 0, kept: .yes),
        .init(id: "env.locked.no-backup", area: "environment", scenario: "keyring locked, no backup",
              outcome: "error \"locked\", nothing generated; same identifier after unlock", exit: 75, kept: .yes),
        .init(id: "env.killed-between-calls", area: "environment",
              scenario: "daemon SIGKILLed between two calls; D-Bus activation starts a new daemon without the password",
              outcome: "login collection is locked: served from the backup (degraded); same identifier from the keyring after a real restart",
              exit: 0, kept: .yes),
        .init(id: "env.killed-in-flight", area: "environment",
              scenario: "daemon SIGSTOPped, call started, daemon SIGKILLed mid-call, then restarted",
              outcome: "the call fails over to the backup (degraded); same identifier after restart", exit: 0, kept: .yes),
        .init(id: "env.item-deleted", area: "environment", scenario: "keyring item deleted behind our back (secret-tool clear)",
              outcome: "served from the backup; keyring item written back", exit: 0, kept: .yes),
        .init(id: "env.runtime-dir-unset", area: "environment", scenario: "XDG_RUNTIME_DIR unset, new app",
              outcome: "first-run lock falls back to the backup directory; identifier made and stable", exit: 0, kept: .none),
        .init(id: "env.runtime-dir-readonly", area: "environment", scenario: "XDG_RUNTIME_DIR on a read-only file system",
              outcome: "first-run lock falls back to the backup directory; identifier made and stable", exit: 0, kept: .none),
        // Backup file
        .init(id: "backup.truncated", area: "backup file", scenario: "truncated",
              outcome: "served from the keyring; file quarantined and rewritten (notice)", exit: 0, kept: .yes),
        .init(id: "backup.garbage", area: "backup file", scenario: "garbage",
              outcome: "served from the keyring; file quarantined and rewritten (notice)", exit: 0, kept: .yes),
        .init(id: "backup.empty", area: "backup file", scenario: "empty",
              outcome: "served from the keyring; file quarantined and rewritten (notice)", exit: 0, kept: .yes),
        .init(id: "backup.huge", area: "backup file", scenario: "10 MB",
              outcome: "served from the keyring; file quarantined unread and rewritten (notice)", exit: 0, kept: .yes),
        .init(id: "backup.directory", area: "backup file", scenario: "a directory at its path",
              outcome: "served from the keyring; directory moved aside, file rewritten", exit: 0, kept: .yes),
        .init(id: "backup.symlink", area: "backup file", scenario: "a symlink to another file at its path",
              outcome: "symlink moved aside, never followed; the other file untouched; served from the keyring", exit: 0, kept: .yes),
        .init(id: "backup.symlink-dangling", area: "backup file", scenario: "a dangling symlink at its path",
              outcome: "symlink moved aside, nothing created at its target; served from the keyring", exit: 0, kept: .yes),
        .init(id: "backup.unreadable", area: "backup file", scenario: "mode 000 (unprivileged user, no bus)",
              outcome: "error \"backup unreadable\"; nothing generated, file untouched", exit: 69, kept: .yes),
        .init(id: "backup.readonly-dir", area: "backup file", scenario: "state directory on a read-only file system, backup missing",
              outcome: "served from the keyring; notice that the backup could not be written", exit: 0, kept: .yes),
        .init(id: "backup.readonly-dir.no-bus", area: "backup file", scenario: "read-only state directory, no bus, new app",
              outcome: "error \"backup cannot be written\"; nothing is handed out", exit: 69, kept: .none),
        .init(id: "backup.disk-full", area: "backup file", scenario: "full disk (64 KiB tmpfs), backup missing",
              outcome: "served from the keyring; notice; no temp file left", exit: 0, kept: .yes),
        .init(id: "backup.disk-full.no-bus", area: "backup file", scenario: "full disk, no bus, new app",
              outcome: "error \"backup cannot be written\"; no temp file left", exit: 69, kept: .none),
        .init(id: "backup.sigkill-writer", area: "backup file", scenario: "writer SIGKILLed at random moments, 200 times",
              outcome: "the file is always the old or the new valid record, or absent; never torn", exit: 0, kept: .yes),
        // Concurrency
        .init(id: "race.16-processes", area: "concurrency", scenario: "16 processes racing on a new app, 10 rounds (idtoolTests) + 3 rounds with no bus",
              outcome: "all print the same identifier; one keyring item", exit: 0, kept: .none),
        .init(id: "race.reset-get", area: "concurrency", scenario: "reset racing get",
              outcome: "every call succeeds; afterwards one keyring item, and backup = keyring", exit: 0, kept: .notApplicable),
        .init(id: "race.threads", area: "concurrency", scenario: "32 threads sharing one resolver and one SecretStore",
              outcome: "one identifier; every SecretStore call succeeds; one item", exit: nil, kept: .yes),
        // Bad input
        .init(id: "input.app-id", area: "bad input", scenario: "empty, 300-byte, control-character and \"/\" app IDs and vendor groups",
              outcome: "usage error; nothing written", exit: 64, kept: .notApplicable),
        .init(id: "input.non-utf8-app-id", area: "bad input", scenario: "non-UTF-8 bytes in --app / --vendor",
              outcome: "usage error; nothing written", exit: 64, kept: .notApplicable),
        .init(id: "input.item-identifier.empty", area: "bad input", scenario: "empty item identifier or --group",
              outcome: "usage error, nothing sent", exit: 64, kept: .notApplicable),
        .init(id: "input.item-identifier.huge", area: "bad input", scenario: "5000-byte item identifier or group; NUL byte (library)",
              outcome: "bad data, rejected before anything is sent", exit: 65, kept: .notApplicable),
        .init(id: "input.non-utf8-item-identifier", area: "bad input", scenario: "non-UTF-8 bytes in an item identifier or --group",
              outcome: "bad data, rejected before anything is sent", exit: 65, kept: .notApplicable),
        .init(id: "input.attributes", area: "bad input", scenario: "attribute names libsecret rejects (empty, xdg:*, NUL, 33 of them, 5000 bytes)",
              outcome: "KeyringError.invalidArgument, no GLib critical, nothing stored", exit: nil, kept: .notApplicable),
        .init(id: "input.values", area: "bad input", scenario: "item values of 0 bytes, 1 MiB, binary",
              outcome: "stored and read back byte for byte", exit: 0, kept: .notApplicable),
        .init(id: "input.legacy", area: "bad input", scenario: "invalid legacy value (empty, control chars, not UTF-8, 300 bytes) in each migration source",
              outcome: "rejected and reported; nothing adopted, legacy copy untouched; idtool migrate exits 65", exit: 65, kept: .none),
        // Security
        .init(id: "sec.permissions", area: "security", scenario: "backup permissions, also when the directory pre-exists as 0755",
              outcome: "file 0600; a directory it creates is 0700, one that existed keeps its mode (never chmod'ed)", exit: 0, kept: .yes),
        .init(id: "sec.symlinked-dir", area: "security", scenario: "the backup directory is a symlink to another directory",
              outcome: "never read or written through; served from the keyring with a notice", exit: 0, kept: .yes),
        .init(id: "sec.no-identifier-in-stderr", area: "security", scenario: "every failing and degraded run in this suite",
              outcome: "stderr never contains the identifier or a secret", exit: 0, kept: .notApplicable),
        .init(id: "sec.no-secret-in-argv", area: "security", scenario: "a secret passed in argv to item set",
              outcome: "usage error; nothing stored; secrets are read from stdin only", exit: 64, kept: .notApplicable),
        // The cardinal rule at its edges (issue 9)
        .init(id: "edge.twin.locked", area: "environment",
              scenario: "original in the locked login collection, a younger unlocked twin in the session collection, backup present",
              outcome: "served from the backup (the original); the twin never wins and the backup is not rewritten", exit: 0, kept: .yes),
        .init(id: "edge.twin.locked.no-backup", area: "environment", scenario: "locked original, unlocked younger twin, no backup",
              outcome: "error \"locked\"; the twin is not served and no backup is written", exit: 75, kept: .yes),
        .init(id: "edge.twin.readable", area: "environment", scenario: "two readable identity items with different values (login and session)",
              outcome: "the oldest wins in every process; the conflict is reported and the twin removed", exit: 0, kept: .yes),
        .init(id: "edge.no-secret-service.served", area: "environment",
              scenario: "a bus with no Secret Service, backup gone, for a user a keyring already served",
              outcome: "temporary error; nothing generated, no backup created", exit: 75, kept: .yes),
        .init(id: "edge.no-secret-service.never-served", area: "environment",
              scenario: "a bus with no Secret Service, for a user no keyring ever served",
              outcome: "the headless default: generated into the backup, stable", exit: 0, kept: .none),
        .init(id: "edge.race.separate-dirs", area: "concurrency",
              scenario: "16 processes on a new vendor group, each with its own XDG_RUNTIME_DIR and XDG_STATE_HOME, 3 rounds",
              outcome: "all print the same identifier; one keyring item", exit: 0, kept: .none),
        .init(id: "edge.race.item-set-no-runtime-dir", area: "concurrency", scenario: "8 concurrent item set on a new item, XDG_RUNTIME_DIR unset",
              outcome: "every call succeeds; one item", exit: 0, kept: .notApplicable),
        .init(id: "edge.item-reset.other-accounts", area: "environment",
              scenario: "item reset S while secret-tool stored service S for two usernames",
              outcome: "refused, naming both accounts (ambiguous item); both items stay; with --account alice only alice's is deleted", exit: 65, kept: .notApplicable),
        .init(id: "edge.reset.pending-recorded-only", area: "environment",
              scenario: "reset without a bus (pending), then another state directory resets and makes a new identifier",
              outcome: "the pending reset removes only the identifier it recorded; the new one is served and kept", exit: 0, kept: .yes),
        .init(id: "edge.reset.pending-unseen", area: "environment",
              scenario: "a bus-less reset in a state directory that never saw the keyring's identifier (made elsewhere, before the reset)",
              outcome: "once the keyring answers, that older identifier is void too; every environment gets the new one", exit: 0,
              kept: .none),
        .init(id: "edge.reset.pending-restored-copy", area: "environment",
              scenario: "the item deleted, a bus-less reset, then another environment restores the old identifier from its backup",
              outcome: "the restored copy keeps the identifier's creation time, so the pending reset still voids it", exit: 0,
              kept: .none),
        .init(id: "edge.reset.pending-marker-cut", area: "environment",
              scenario: "a reset killed while writing its pending marker (left empty), then another state directory resets and makes a new identifier",
              outcome: "the marker counts from when it was written: the newer identifier is served and kept", exit: 0, kept: .yes),
        .init(id: "edge.reset.pending-quarantine-before", area: "environment",
              scenario: "a reset killed after it removed the item, with a backup quarantined before the reset",
              outcome: "the next get completes the reset, removes the old quarantined copy and makes a new identifier", exit: 0,
              kept: .none),
        .init(id: "edge.reset.pending-quarantine-after", area: "environment",
              scenario: "as above, but a backup was quarantined after the reset (it may hold a newer identifier)",
              outcome: "error that says to restore the backup or reset; that copy is kept", exit: 69, kept: .none),
        .init(id: "edge.reset.failed-keeps-pending", area: "environment",
              scenario: "a reset pending since an earlier killed one, a newer identifier made elsewhere, then a reset that fails on a locked keyring",
              outcome: "the failed reset leaves the pending reset as it was: once unlocked, the newer identifier is served and kept", exit: 0,
              kept: .yes),
        .init(id: "edge.reset.pending-twin-locked", area: "environment",
              scenario: "a foreign twin in an unlocked collection served while the default one is locked, then a bus-less reset, then get with the default collection still locked",
              outcome: "the twin is void: a new identifier, kept in the backup until the reset completes; after unlock the twin is removed and the new one stays", exit: 0,
              kept: .none),
        .init(id: "edge.reset.pending-locked", area: "environment",
              scenario: "pending reset, a headless identifier made after it, then the keyring is locked",
              outcome: "the backup, already past the reset, is served", exit: 0, kept: .yes),
        .init(id: "edge.reset.vendor-other-state-dir", area: "environment",
              scenario: "a vendor group reset by one app; another app with its own state directory still has the old backup",
              outcome: "the old identifier is not written back; both apps get the new one", exit: 0, kept: .none),
        .init(id: "edge.backup.corrupt-item-deleted", area: "backup file", scenario: "keyring item deleted and the backup corrupt",
              outcome: "error that says to reset, on every run until reset; nothing generated", exit: 69, kept: .none),
        .init(id: "edge.backup.nfd-nfc", area: "backup file", scenario: "keyring holds the NFD bytes, the backup the NFC form",
              outcome: "the keyring's bytes are served and the backup is rewritten to them (bytes compared, not text)", exit: 0, kept: .yes),
        .init(id: "edge.input.long-names", area: "bad input", scenario: "250-byte app ID and vendor group",
              outcome: "resolved and stable", exit: 0, kept: .none),
        .init(id: "edge.timeout.hung-daemon", area: "environment", scenario: "daemon SIGSTOPped, backup present, get --timeout 3",
              outcome: "served from the backup within the timeout plus a small margin", exit: 0, kept: .yes),
        .init(id: "edge.migrate.machine-id-placeholder", area: "bad input", scenario: "machine-id source holding \"uninitialized\" or all zeros",
              outcome: "rejected, never adopted", exit: nil, kept: .none),
        .init(id: "edge.migrate.no-bus-remove-legacy", area: "environment", scenario: "migrate --remove-legacy with no bus (backup only)",
              outcome: "adopted into the backup; the legacy copy is kept", exit: 0, kept: .none),
        .init(id: "edge.sec.foreign-state-dir", area: "security", scenario: "$XDG_STATE_HOME/nvim (and the default idtool) exists as 0755",
              outcome: "never chmod'ed or written into; state lives under keyring-identity/", exit: 0, kept: .none),
        .init(id: "edge.sec.symlinked-dir-no-item", area: "security",
              scenario: "the backup directory is a symlink to a valid record, keyring has no item",
              outcome: "never read through: the record is not served or pushed", exit: 69, kept: .none),
        // One seam for each concern (issue 20): creation outcomes through the decision, one order
        // seam.decide
        .init(id: "seam.decide.slow-creator", area: "concurrency",
              scenario: "new app while another process holds the bus-wide creation lock (slow inside its creation), get --timeout 2",
              outcome: "error \"timed out\", prints nothing, makes no identifier in the keyring or the backup; once the other stores its value and releases, get prints that value",
              exit: 75, kept: .none),
        .init(id: "seam.decide.reset-elsewhere-quarantine", area: "environment",
              scenario: "a backup quarantined earlier, then a reset made in another state directory (a sandbox)",
              outcome: "the keyring's reset record voids the copy quarantined before it: it is removed and a new identifier is made (a copy quarantined after the reset still blocks, exit 69)",
              exit: 0, kept: .none),
        .init(id: "seam.decide.invalid-oldest", area: "bad input",
              scenario: "the oldest identity item holds an invalid value, a younger valid item holds the backup's identifier",
              outcome: "the backup's identifier is served; only the invalid item is removed, the valid one is kept (without a matching backup: an error, nothing removed)",
              exit: 0, kept: .yes),
        .init(id: "seam.decide.stored-meanwhile", area: "concurrency",
              scenario: "a first run pauses between its absent check and its write (over a second boundary) while a client that takes no lock stores and hands out a value",
              outcome: "its value is stamped at the write, so the value stored meanwhile stays the winner: it prints that value and removes the item it made, leaving one",
              exit: 0, kept: .none),
        .init(id: "seam.decide.refused-settle", area: "concurrency",
              scenario: "a first run refused the creation lock's bus name (xdg-dbus-proxy) writes; a twin made earlier by a creator it does not exclude appears just after",
              outcome: "it waits about a second and re-reads before printing: it prints the twin's value, removes its own item, and later reads serve the same",
              exit: 0, kept: .none),

        // seam.order
        .init(id: "seam.order.waiting-creator", area: "concurrency",
              scenario: "a first run waits on the creation lock while two items appear whose Created and identity-created orders disagree",
              outcome: "it adopts the item first made, the one every later read serves (one order everywhere)", exit: 0, kept: .none),
        .init(id: "seam.order.refused-name", area: "concurrency",
              scenario: "two first runs at once, one behind xdg-dbus-proxy, which refuses it the creation lock's bus name, with separate runtime and state directories",
              outcome: "both print the same identifier: a create always searches again and adopts the one winner", exit: 0, kept: .none),

        // seam.typed-call
        .init(id: "seam.typed-call.wrong-shape", area: "environment",
              scenario: "the Secret Service answers SearchItems, an item's GetAll, Collections or Locked with a reply of the wrong shape, or GetAll with UnknownMethod",
              outcome: "error naming the method (\"unexpected shape\"), never read as absent: nothing printed, no item or backup created",
              exit: 70, kept: .none),
        .init(id: "seam.typed-call.signal-flood", area: "environment",
              scenario: "an app read once, then idles while another client broadcasts 240,000 PropertiesChanged signals",
              outcome: "only the Secret Service's own signals are matched; the heap stops growing after the first batches and a real change is still seen",
              exit: nil, kept: .notApplicable),
        .init(id: "seam.typed-call.kwallet-read-only", area: "environment",
              scenario: "KWallet: doctor and reads in a fresh process, no session-check item yet",
              outcome: "the session is checked without writing (against a plain-session read); only a write creates the check item",
              exit: 0, kept: .notApplicable),
        .init(id: "seam.typed-call.service-object-missing", area: "environment",
              scenario: "the Secret Service's own object answers Collections or ReadAlias with UnknownObject or UnknownInterface, or the default collection is gone between ReadAlias and its Locked",
              outcome: "error naming the method, never \"no collection locked\" (absent) or \"no default collection\": nothing printed, no item or backup created",
              exit: 70, kept: .none),
        .init(id: "seam.typed-call.lock-release", area: "concurrency",
              scenario: "a creation lock ends while another thread's call waits on a hung daemon, or its RequestName times out because the bus stalled",
              outcome: "the lock's bus name is released at once, straight on its connection: other processes' first runs are not held up until this one exits",
              exit: nil, kept: .notApplicable),

        // seam.deadline
        .init(id: "deadline.hung-daemon.two-threads", area: "environment",
              scenario: "daemon SIGSTOPped; one thread reads with a 25 s timeout, another 0.3 s later with 1 s",
              outcome: "the 1 s call ends with timedOut(1 s) while the 25 s one still waits: every wait of a call, the in-process gate included, ends at its own deadline",
              exit: nil, kept: .notApplicable),
        .init(id: "deadline.creation-lock.one-timeout", area: "environment",
              scenario: "daemon SIGSTOPped; an 8 s write waits 6 s for another thread's creation lock",
              outcome: "timedOut(8 s) at its own deadline, not 8 s after the lock's release: the lock wait and the service call share one deadline; no lock wait reports 0 s",
              exit: nil, kept: .notApplicable),
        .init(id: "deadline.huge-timeout", area: "bad input", scenario: "Keyring(timeout: .seconds(Int64.max)), or larger",
              outcome: "works (the deadline saturates at a century); no arithmetic trap", exit: nil, kept: .notApplicable),
        .init(id: "deadline.first-run.nested", area: "concurrency",
              scenario: "a first run nested in another on the same scope and lock directory (a policy that asks a second resolver)",
              outcome: "resolved at once, one identifier: the first-run lock is re-entrant on its thread", exit: nil, kept: .none),

        // seam.async
        .init(id: "async.twin-content-type", area: "async", scenario: "`await setObject(_:forKey: .valueData)` beside the sync call",
              outcome: "the same item and content type (application/octet-stream): each async call runs its sync call itself",
              exit: nil, kept: .notApplicable),
        .init(id: "input.store-size-cap", area: "bad input", scenario: "`Keyring.store` or `insertIfAbsent` with a secret over 16 MiB",
              outcome: "error `invalidArgument` (the cap `SecretStore` has), nothing created", exit: nil, kept: .notApplicable),

        // seam.file-atomic
        .init(id: "file.killed-mid-change", area: "file keyring",
              scenario:
                "a change touching several items (an account change, a reset beside another wrapper's item) SIGKILLed at each of its writes",
              outcome: "one write per change: every other item intact, the changed one old or new byte for byte; the next change works",
              exit: 0, kept: .notApplicable),
        .init(id: "file.overtaken-write", area: "file keyring",
              scenario: "another libsecret program (which takes no lock of ours) writes the file between a change's read and its write, "
                  + "or the change is then cancelled",
              outcome: "typed error (file unavailable: \"another program changed it … try again\"; or cancelled); "
                  + "that program's items kept: the saved copy is put back only over a partial file",
              exit: nil, kept: .notApplicable),

        // seam.small
        .init(id: "small.migrate.locked-legacy-item", area: "environment",
              scenario: "migrate from a legacy keyring item while the keyring is locked "
                  + "(KeePassXC hides the item, gnome-keyring lists it locked)",
              outcome: "error \"locked\", nothing generated, the legacy item kept; adopted once the keyring is unlocked",
              exit: 75, kept: .none),
        .init(id: "small.migrate.source-locked-miss", area: "environment",
              scenario: "the keyring locks between the scope read and the legacy keyring item's read (KeePassXC then hides the item)",
              outcome: "the migration source reads as locked, never absent: no new identifier is made instead of migrating",
              exit: nil, kept: .none),
        .init(id: "small.migrate.no-keyring-resolver", area: "bad input",
              scenario: "a resolver without a keyring lists a keyring migration source",
              outcome: "typed error (migration source unreadable); the default keyring is never read outside the resolver's budget",
              exit: nil, kept: .none),

    ]

    static subscript(_ id: String) -> FaultRow {
        guard let row = rows.first(where: { $0.id == id }) else { fatalError("no fault-table row \(id)") }
        return row
    }

    static func markdown() -> String {
        var lines = [
            "<!-- generated by scripts/fault-table from Tests/FaultTests/FaultTable.swift; do not edit by hand -->",
            "| area | scenario | what happens | exit | identifier kept |",
            "|---|---|---|---|---|",
        ]
        for row in rows {
            let cells = [row.area, row.scenario, row.outcome, row.exit.map { "\($0)" } ?? "— (library)", row.kept.rawValue]
                .map { $0.replacingOccurrences(of: "|", with: "\\|") }
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static let markdownPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("fault-table.md").path
}

@Suite("Fault table document")
struct FaultTableDocumentTests {
    @Test("fault-table.md is the rendered fault table (FAULT_TABLE_WRITE=1 rewrites it)")
    func markdownMatches() throws {
        let rendered = FaultTable.markdown()
        if ProcessInfo.processInfo.environment["FAULT_TABLE_WRITE"] == "1" {
            try rendered.write(toFile: FaultTable.markdownPath, atomically: true, encoding: .utf8)
        }
        let onDisk = try String(contentsOfFile: FaultTable.markdownPath, encoding: .utf8)
        #expect(onDisk == rendered, "fault-table.md is stale: run scripts/fault-table")
        #expect(Set(FaultTable.rows.map(\.id)).count == FaultTable.rows.count, "row ids are unique")
    }
}
