// The cardinal rule at its edges (issue 9): twins in several collections, a bus without a Secret
// Service for a user the keyring already served, creators that share no directory, other
// clients' items, pending and cross-directory resets, corrupt backups, byte-exact comparison,
// long names, the --timeout bound, and the smaller leaks (legacy removal, foreign state
// directories, symlinked backup directories). Every case runs against the real gnome-keyring.
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Sandbox {
    /// The backup file of a vendor group: `$XDG_STATE_HOME/keyring-identity/vendor/<group>/identifier`.
    func vendorBackupPath(_ group: String) -> String { stateHome + "/keyring-identity/vendor/" + group + "/identifier" }

    /// The identifier in a backup file at `path` as raw UTF-8 bytes, when it is a JSON record.
    func backupIdentifierBytes(at path: String) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let identifier = object["identifier"] as? String
        else { return nil }
        return Array(identifier.utf8)
    }

    /// `idtool ARGS` with `stdin`, started and not yet waited for.
    func start(_ arguments: [String], stdin: Data, environment: [String: String]) throws -> Child {
        try Child(Fault.idtool!, arguments.map { Array($0.utf8) }, stdin: stdin, environment: environment)
    }
}

extension Fault {
    static let sessionCollection = "/org/freedesktop/secrets/collection/session"

    /// Stores an item with secret-tool, as another client would; `collection` nil means the default.
    static func storeItem(_ attributes: [(String, String)], value: Data, label: String = "edge", collection: String? = nil,
                          sourceLocation: SourceLocation = #_sourceLocation) throws {
        let arguments = ["store", "--label=\(label)"] + (collection.map { ["--collection=\($0)"] } ?? [])
            + attributes.flatMap { [$0.0, $0.1] }
        let store = try run("/usr/bin/secret-tool", arguments, stdin: value)
        try #require(store.status == 0, "secret-tool store: \(store.summary)", sourceLocation: sourceLocation)
    }

    /// Every item matching `attributes` in every collection, per the Secret Service's SearchItems:
    /// unlocked and locked object paths.
    static func itemPaths(_ attributes: [(String, String)]) throws -> (unlocked: [String], locked: [String]) {
        let dict = "dict:string:string:" + attributes.flatMap { [$0.0, $0.1] }.joined(separator: ",")
        let reply = try run("/usr/bin/dbus-send", ["--session", "--print-reply", "--reply-timeout=5000", "--dest=org.freedesktop.secrets",
                                                   "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.SearchItems", dict])
        var arrays: [[String]] = []
        for line in reply.stdoutText.split(separator: "\n") {
            if line.trimmingCharacters(in: .whitespaces) == "array [" { arrays.append([]) }
            if line.contains("object path"), !arrays.isEmpty, let path = line.split(separator: "\"").dropFirst().first {
                arrays[arrays.count - 1].append(String(path))
            }
        }
        return (arrays.first ?? [], arrays.dropFirst().first ?? [])
    }

    /// Every identity item of a scope, locked or not, in every collection.
    static func identityItems(_ name: String, scope: String = "app") throws -> [String] {
        let found = try itemPaths([("identity-scope", scope), ("identity-name", name)])
        return found.unlocked + found.locked
    }

    static func sha256Hex(_ data: Data) throws -> String {
        String(try run("/usr/bin/sha256sum", [], stdin: data).stdoutText.prefix(64))
    }

    /// A start barrier: `start` runs while the daemon is SIGSTOPped, so every child it starts
    /// queues its first call at the daemon; then the daemon resumes and they race from there.
    /// The pause only gives the children time to get there; nothing is asserted on time.
    static func startingTogether<T>(_ start: () throws -> T) throws -> T {
        let paused = try PausedDaemon()
        defer { paused.resume() }
        let started = try start()
        usleep(800_000)
        return started
    }

    /// The created timestamps of the Secret Service are whole seconds: wait past one so that an
    /// item stored next is strictly younger.
    static func waitPastCreationSecond() { usleep(1_100_000) }
}

@Suite("Faults: the cardinal rule at its edges", .serialized, .needs(.secretService))
struct EdgeFaults {
    init() throws { try Fault.requireTestKeyring() }

    // MARK: 1. Twins

    // Needs a second collection that stays unlocked while the default one locks: gnome-keyring's
    // in-memory session collection. KWallet has one collection (its wallet), which locks as a whole.
    @Test(
        "a locked original is never displaced by an unlocked younger twin in the session collection",
        .needs(.sessionCollection))
    func lockedOriginalBeatsUnlockedTwin() throws {
        let box = try Sandbox()
        let app = Fault.newApp("twin-locked")
        let id = try box.establish(app)
        Fault.waitPastCreationSecond()
        let twin = UUID().uuidString.lowercased()
        defer { Fault.restoreDaemon() }  // also empties the in-memory session collection
        try Fault.storeItem([("identity-scope", "app"), ("identity-name", app)], value: Data(twin.utf8), collection: Fault.sessionCollection)
        try Fault.lockKeyring()
        let found = try Fault.itemPaths([("identity-scope", "app"), ("identity-name", app)])
        try #require(found.unlocked.count == 1 && found.locked.count == 1, "one unlocked twin, one locked original: \(found)")

        let get = try box.idtool(["get", "--app", app])
        get.expectExit(FaultTable["edge.twin.locked"])
        #expect(get.line == id, "the original, not the twin: \(get.summary)")
        #expect(box.backupIdentifier(app) == id, "the backup still holds the original")
        get.expectClean(hiding: [id, twin])

        try FileManager.default.removeItem(atPath: box.backupPath(app))
        let bare = try box.idtool(["get", "--app", app])
        bare.expectExit(FaultTable["edge.twin.locked.no-backup"])
        #expect(bare.stdout.isEmpty, "a locked match is locked, not the next item: \(bare.stdoutText)")
        bare.expectClean(hiding: [id, twin])
        #expect(!FileManager.default.fileExists(atPath: box.backupPath(app)), "no backup written from the twin")
    }

    @Test(
        "two readable twins resolve to the oldest, report the conflict, and leave one item",
        .needs(.sessionCollection))
    func readableTwinsResolveToOldest() throws {
        let box = try Sandbox()
        let app = Fault.newApp("twin-readable")
        let id = try box.establish(app)
        Fault.waitPastCreationSecond()
        let twin = UUID().uuidString.lowercased()
        // In gnome-keyring's session collection; KWallet has only its wallet, where secret-tool's
        // replace flag would take any item whose attributes include these: one more keeps the original.
        if TestConfiguration.current.capabilities.contains(.sessionCollection) {
            try Fault.storeItem([("identity-scope", "app"), ("identity-name", app)], value: Data(twin.utf8), collection: Fault.sessionCollection)
        } else {
            try Fault.storeItem([("identity-scope", "app"), ("identity-name", app), ("twin", "1")], value: Data(twin.utf8))
        }
        try #require(try Fault.identityItems(app).count == 2, "the twin is in place")

        let get = try box.idtool(["get", "--app", app])
        get.expectExit(FaultTable["edge.twin.readable"])
        #expect(get.line == id, "the oldest item wins: \(get.summary)")
        #expect(get.stderrLines.contains { $0.contains("notice:") }, "the twin is reported: \(get.stderr)")
        get.expectClean(hiding: [id, twin])
        let left = try Fault.identityItems(app)
        #expect(left.count == 1, "the twin is cleaned up: \(left)")
        #expect(try Fault.keyringValue(app: app) == id)
        #expect(box.backupIdentifier(app) == id)
        let again = try box.idtool(["get", "--app", app])
        #expect(again.status == 0 && again.line == id, "stable: \(again.summary)")
    }

    // MARK: 2. A bus without a Secret Service

    @Test("a bus without a Secret Service is temporary for a user the keyring served; headless only for one it never served")
    func missingSecretServiceIsNotAbsenceForServedUser() throws {
        let box = try Sandbox()
        let app = Fault.newApp("nosvc-served")
        let id = try box.establish(app)
        #expect(FileManager.default.fileExists(atPath: box.keyringSeenMarker), "serving from the keyring leaves the keyring-seen marker")
        try FileManager.default.removeItem(atPath: box.backupPath(app))
        let bus = try BusWithoutSecretService()
        var environment = box.keyringEnvironment
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address

        let get = try box.idtool(["get", "--app", app], environment: environment)
        get.expectExit(FaultTable["edge.no-secret-service.served"])
        #expect(get.stdout.isEmpty, "nothing handed out: \(get.stdoutText)")
        get.expectClean(hiding: [id])
        #expect(!FileManager.default.fileExists(atPath: box.backupPath(app)), "no backup created")
        #expect(try Fault.keyringValue(app: app) == id, "the keyring still holds the identifier")
        let back = try box.idtool(["get", "--app", app])
        #expect(back.status == 0 && back.line == id, "same identifier once the Secret Service is back: \(back.summary)")

        // A user no Secret Service ever served (fresh state directory): the headless default.
        let fresh = try Sandbox()
        var freshEnvironment = fresh.keyringEnvironment
        freshEnvironment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        let other = Fault.newApp("nosvc-never")
        let made = try fresh.idtool(["get", "--app", other], environment: freshEnvironment)
        made.expectExit(FaultTable["edge.no-secret-service.never-served"])
        #expect(Fault.isUUID(made.line), "\(made.summary)")
        made.expectClean(hiding: [made.line])
        let second = try fresh.idtool(["get", "--app", other], environment: freshEnvironment)
        #expect(second.status == 0 && second.line == made.line, "stable: \(second.summary)")
        #expect(!FileManager.default.fileExists(atPath: fresh.keyringSeenMarker), "no Secret Service served this user")
    }

    // MARK: 3, 4. Creators that share no directory

    @Test("16 processes with separate runtime and state directories agree on a new vendor group's identifier, 3 rounds")
    func creatorsWithoutSharedDirectoriesAgree() throws {
        defer { Fault.restoreDaemon() }
        for round in 0..<3 {
            let group = Fault.newApp("vendor-race\(round)")
            let boxes = try (0..<16).map { _ in try Sandbox() }
            let children = try Fault.startingTogether {
                try boxes.enumerated().map { i, box in try box.start(["get", "--app", "fault.edge-app\(i)", "--vendor", group]) }
            }
            let runs = try children.map { try $0.wait() }
            for run in runs {
                run.expectExit(FaultTable["edge.race.separate-dirs"])
                run.expectClean(hiding: runs.map(\.line))
            }
            #expect(Set(runs.map(\.line)).count == 1, "round \(round): \(Set(runs.map(\.line)))")
            #expect(try Fault.identityItems(group, scope: "vendor").count == 1, "round \(round): one keyring item")
            #expect(try Fault.keyringValue(app: group, scope: "vendor") == runs[0].line, "round \(round): the keyring holds what was printed")
        }
    }

    @Test("8 concurrent item set with XDG_RUNTIME_DIR unset leave exactly one item, 3 rounds")
    func concurrentItemSetWithoutRuntimeDirMakesOneItem() throws {
        let box = try Sandbox()
        var environment = box.keyringEnvironment
        environment["XDG_RUNTIME_DIR"] = nil
        defer { Fault.restoreDaemon() }
        for round in 0..<3 {
            let service = "fault.edge.itemset\(round).\(UUID().uuidString.prefix(8).lowercased())"
            let values = (0..<8).map { "value-\($0)-\(UUID().uuidString)" }
            let children = try Fault.startingTogether {
                try values.map { try box.start(["item", "set", service], stdin: Data($0.utf8), environment: environment) }
            }
            let runs = try children.map { try $0.wait() }
            for run in runs {
                run.expectExit(FaultTable["edge.race.item-set-no-runtime-dir"])
                run.expectClean(hiding: values)
            }
            let items = try Fault.itemPaths([("service", service)])
            #expect(items.unlocked.count + items.locked.count == 1, "round \(round): one item, found \(items)")
            let read = try box.idtool(["item", "get", service], environment: environment)
            #expect(values.contains(read.stdoutText), "round \(round): holds one of the written values: \(read.summary)")
            _ = try Fault.run("/usr/bin/secret-tool", ["clear", "service", service])
        }
    }

    // MARK: 5. Other clients' items

    @Test("item reset without --account deletes neither of two accounts' items; --account deletes only that account's")
    func itemResetLeavesOtherAccounts() throws {
        let box = try Sandbox()
        let service = "fault.edge.accounts.\(UUID().uuidString.prefix(8).lowercased())"
        let alice = "alice-\(UUID().uuidString)", bob = "bob-\(UUID().uuidString)"
        try Fault.storeItem([("service", service), ("username", "alice")], value: Data(alice.utf8))
        Fault.waitPastCreationSecond()
        try Fault.storeItem([("service", service), ("username", "bob")], value: Data(bob.utf8))
        defer { _ = try? Fault.run("/usr/bin/secret-tool", ["clear", "service", service]) }

        let before = try box.idtool(["item", "get", service])
        #expect(before.status == 0 && before.stdoutText == alice, "item get reads the oldest, alice's: \(before.summary)")
        let refused = try box.idtool(["item", "reset", service])
        refused.expectExit(FaultTable["edge.item-reset.other-accounts"])
        refused.expectClean(hiding: [alice, bob])
        let both = try Fault.itemPaths([("service", service)])
        #expect(both.unlocked.count + both.locked.count == 2, "nothing deleted without --account: \(both)")
        let reset = try box.idtool(["item", "reset", service, "--account", "alice"])
        #expect(reset.status == 0, "\(reset.summary)")
        let left = try Fault.itemPaths([("service", service)])
        #expect(left.unlocked.count + left.locked.count == 1, "exactly one item deleted: \(left)")
        let bobNow = try Fault.run("/usr/bin/secret-tool", ["lookup", "service", service, "username", "bob"])
        #expect(bobNow.status == 0 && bobNow.stdoutText == bob, "bob's item still holds B: \(bobNow.summary)")
        let aliceNow = try Fault.run("/usr/bin/secret-tool", ["lookup", "service", service, "username", "alice"])
        #expect(aliceNow.status != 0, "alice's item, the one read, is gone: \(aliceNow.summary)")
    }

    // MARK: 6. Pending resets

    @Test("a pending reset removes only the identifier it recorded, not one made after it elsewhere")
    func pendingResetRemovesOnlyRecordedValue() throws {
        let s1 = try Sandbox(), s2 = try Sandbox()
        let app = Fault.newApp("pending-only")
        let k = try s1.establish(app)
        let pending = try s1.idtool(["reset", "--app", app], environment: s1.noBusEnvironment)
        #expect(pending.status == 0, "reset without a bus is recorded as pending: \(pending.summary)")
        pending.expectClean(hiding: [k])

        let reset = try s2.idtool(["reset", "--app", app])
        #expect(reset.status == 0, "\(reset.summary)")
        let n = try s2.establish(app)
        try #require(n != k)

        let get = try s1.idtool(["get", "--app", app])
        get.expectExit(FaultTable["edge.reset.pending-recorded-only"])
        #expect(get.line == n, "the pending reset of K leaves N alone: \(get.summary)")
        get.expectClean(hiding: [k, n])
        #expect(try Fault.keyringValue(app: app) == n, "the keyring still holds N")
        #expect(try Fault.identityItems(app).count == 1)
        #expect(try s2.idtool(["get", "--app", app]).line == n, "N is stable in the other state directory")
    }

    // Found by scripts/chaos: the bus-less environment that resets may never have seen the keyring's
    // current identifier (another state directory made it), so its pending reset recorded none.
    @Test("a pending reset voids an identifier made before it that the resetting environment never saw")
    func pendingResetVoidsUnseenOlderIdentifier() throws {
        let desktop = try Sandbox(), sandbox = try Sandbox()
        let app = Fault.newApp("pending-unseen")
        let d = try desktop.establish(app)
        // Another state directory resets and makes K; the desktop's backup still holds D.
        #expect(try sandbox.idtool(["reset", "--app", app]).status == 0)
        let k = try sandbox.establish(app)
        try #require(k != d)
        usleep(20_000)  // the reset comes after K was made (times are kept in milliseconds)
        // Without a bus the desktop records a reset of what it knows: D, not K.
        let reset = try desktop.idtool(["reset", "--app", app], environment: desktop.noBusEnvironment)
        #expect(reset.status == 0, "a bus-less reset is recorded as pending: \(reset.summary)")

        let get = try desktop.idtool(["get", "--app", app])
        get.expectExit(FaultTable["edge.reset.pending-unseen"])
        #expect(Fault.isUUID(get.line) && get.line != k, "the identifier made before the reset is void: \(get.summary)")
        #expect(get.line != d)
        get.expectClean(hiding: [k, d])
        let other = try sandbox.idtool(["get", "--app", app])
        #expect(other.status == 0 && other.line == get.line, "the other state directory follows the keyring: \(other.summary)")
        #expect(try Fault.identityItems(app).count == 1)
    }

    // Found by scripts/chaos: a copy restored from a backup took a fresh creation time, so a reset
    // made after the identifier but before the restore no longer saw it as older.
    @Test("an identifier restored from a backup keeps its creation time, so a later pending reset still voids it")
    func restoredCopyStaysOlderThanReset() throws {
        let desktop = try Sandbox(), sandbox = try Sandbox()
        let app = Fault.newApp("restored-copy")
        _ = try desktop.establish(Fault.newApp("restored-copy-other"))
        let k = try sandbox.establish(app)
        try Fault.clearKeyringItem(app: app)
        usleep(20_000)  // the reset comes after K was made (times are kept in milliseconds)
        let reset = try desktop.idtool(["reset", "--app", app], environment: desktop.noBusEnvironment)
        #expect(reset.status == 0, "\(reset.summary)")
        // The restore happens in a later second than the reset, so the item's own creation time
        // (whole seconds) would call the copy newer than the reset.
        usleep(1_100_000)
        // The sandbox cannot see the pending reset: it writes K back from its backup, as designed.
        let restored = try sandbox.idtool(["get", "--app", app])
        #expect(restored.status == 0 && restored.line == k, "\(restored.summary)")

        let get = try desktop.idtool(["get", "--app", app])
        get.expectExit(FaultTable["edge.reset.pending-restored-copy"])
        #expect(Fault.isUUID(get.line) && get.line != k, "the restored copy is as old as K, so the reset voids it: \(get.summary)")
        #expect(try sandbox.idtool(["get", "--app", app]).line == get.line, "the sandbox follows the keyring")
        #expect(try Fault.identityItems(app).count == 1)
    }

    // Found by scripts/chaos: a reset killed between creating its marker and writing it left an
    // empty marker, which carried no time and so voided every identifier, even ones made later.
    @Test("a pending-reset marker without its time counts from when it was written: later identifiers stay")
    func cutShortMarkerKeepsLaterIdentifiers() throws {
        let desktop = try Sandbox(), other = try Sandbox()
        let app = Fault.newApp("marker-cut")
        let k = try desktop.establish(app)
        // What an older idtool killed mid-write left: the marker, empty.
        try Data().write(to: URL(fileURLWithPath: desktop.backupPath(app) + ".reset-pending"))
        usleep(20_000)  // N is made after the marker (times are kept in milliseconds)
        #expect(try other.idtool(["reset", "--app", app]).status == 0)
        let n = try other.establish(app)
        try #require(n != k)

        let get = try desktop.idtool(["get", "--app", app])
        get.expectExit(FaultTable["edge.reset.pending-marker-cut"])
        #expect(get.line == n, "N was made after the cut-short reset, so it stays: \(get.summary)")
        get.expectClean(hiding: [k, n])
        #expect(try Fault.keyringValue(app: app) == n)
        #expect(try Fault.identityItems(app).count == 1)
        #expect(!FileManager.default.fileExists(atPath: desktop.backupPath(app) + ".reset-pending"), "the marker was applied")
    }

    // Found by scripts/chaos (KWallet, seed 3): a reset killed after removing the item left its
    // marker; completing it later kept the quarantined copy of the old epoch, so every get
    // exited 69 ("restore the backup, or run reset") although the user had already reset.
    @Test("a killed reset completed later removes backups quarantined before it, and keeps later ones", arguments: [false, true])
    func pendingResetRemovesOlderQuarantinedCopies(_ quarantinedAfterReset: Bool) throws {
        let box = try Sandbox()
        let app = Fault.newApp("pending-quarantine")
        let k = try box.establish(app)
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: box.backupPath(app)))
        let repaired = try box.idtool(["get", "--app", app])
        try #require(repaired.status == 0 && repaired.line == k && BackupFaults.quarantined(box, app).count == 1, "\(repaired.summary)")
        usleep(20_000)  // the reset comes after the quarantine (times are kept in milliseconds)

        // What a reset killed after deleting the item leaves: its marker, and the backup of K.
        let marker = "\(try Fault.sha256Hex(Data(k.utf8)))\n\(String(format: "%.3f", Date().timeIntervalSince1970))\n"
        try Data(marker.utf8).write(to: URL(fileURLWithPath: box.backupPath(app) + ".reset-pending"))
        try Fault.clearKeyringItem(app: app)
        if quarantinedAfterReset {
            usleep(20_000)
            try Data("later".utf8).write(to: URL(fileURLWithPath: box.backupPath(app) + ".corrupt-9999999999-1"))
        }

        let get = try box.idtool(["get", "--app", app])
        get.expectClean(hiding: [k])
        #expect(!FileManager.default.fileExists(atPath: box.backupPath(app) + ".reset-pending"), "the reset completed")
        if quarantinedAfterReset {
            get.expectExit(FaultTable["edge.reset.pending-quarantine-after"])
            #expect(get.stdout.isEmpty && get.stderr.contains("reset"), "\(get.summary)")
            #expect(BackupFaults.quarantined(box, app) == ["identifier.corrupt-9999999999-1"], "only the later copy stays")
        } else {
            get.expectExit(FaultTable["edge.reset.pending-quarantine-before"])
            #expect(Fault.isUUID(get.line) && get.line != k, "a new identifier, as the reset asked: \(get.summary)")
            #expect(BackupFaults.quarantined(box, app).isEmpty, "the old epoch's copy is gone")
            #expect(try Fault.keyringValue(app: app) == get.line)
        }
    }

    // Found by scripts/chaos (seed of a 30-minute run, step 2255): a reset that failed on a locked
    // keyring rewrote an earlier pending marker with its own, later time, so completing it
    // voided an identifier another state directory had made in between.
    @Test("a reset that fails leaves an earlier pending reset as it was: a newer identifier stays")
    func failedResetKeepsPendingTime() throws {
        let desktop = try Sandbox(), other = try Sandbox()
        let app = Fault.newApp("failed-reset")
        let k = try desktop.establish(app)
        // What a reset killed after writing its marker leaves; then the item goes.
        let marker = "\(try Fault.sha256Hex(Data(k.utf8)))\n\(String(format: "%.3f", Date().timeIntervalSince1970))\n"
        try Data(marker.utf8).write(to: URL(fileURLWithPath: desktop.backupPath(app) + ".reset-pending"))
        try Fault.clearKeyringItem(app: app)
        usleep(20_000)  // N is made after the killed reset (times are kept in milliseconds)
        let n = try other.establish(app)
        try #require(n != k)
        usleep(20_000)

        defer { Fault.restoreDaemon() }
        try Fault.lockKeyring()
        let failed = try desktop.idtool(["reset", "--app", app, "--no-prompt"])
        #expect(failed.status == 75, "the locked keyring stops the reset: \(failed.summary)")
        #expect(try String(contentsOfFile: desktop.backupPath(app) + ".reset-pending", encoding: .utf8) == marker,
                "the earlier marker is back as it was")
        Fault.restoreDaemon()

        let get = try desktop.idtool(["get", "--app", app])
        get.expectExit(FaultTable["edge.reset.failed-keeps-pending"])
        #expect(get.line == n, "N was made after the pending reset, so it stays: \(get.summary)")
        get.expectClean(hiding: [k, n])
        #expect(try Fault.keyringValue(app: app) == n)
        #expect(try other.idtool(["get", "--app", app]).line == n, "the other state directory keeps N")
    }

    // Found by scripts/chaos (30-minute run, step 68): the twin a bus-less reset voided came back
    // through creation, which adopted it as "another process stored an identifier first".
    @Test("a pending reset that cannot complete never adopts the identifier it voids from another collection",
          .needs(.sessionCollection))
    func pendingResetNeverAdoptsVoidTwin() throws {
        let box = try Sandbox()
        let app = Fault.newApp("pending-twin")
        let k = try box.establish(app)
        try Fault.clearKeyringItem(app: app)
        let twin = UUID().uuidString.lowercased()
        try Fault.storeItem([("identity-scope", "app"), ("identity-name", app), ("edge-twin", "1")], value: Data(twin.utf8),
                            collection: "/org/freedesktop/secrets/collection/session")
        defer { Fault.restoreDaemon() }
        try Fault.lockKeyring()
        let served = try box.idtool(["get", "--app", app, "--no-prompt"])
        try #require(served.status == 0 && served.line == twin, "the unlocked twin is the keyring's value: \(served.summary)")
        #expect(try box.idtool(["reset", "--app", app], environment: box.noBusEnvironment).status == 0)

        let get = try box.idtool(["get", "--app", app, "--no-prompt"])
        get.expectExit(FaultTable["edge.reset.pending-twin-locked"])
        #expect(Fault.isUUID(get.line) && get.line != twin && get.line != k, "not the void twin: \(get.summary)")
        get.expectClean(hiding: [k, twin])
        let v = get.line

        Fault.restoreDaemon()
        let after = try box.idtool(["get", "--app", app])
        #expect(after.status == 0 && after.line == v, "the reset completes and the new one stays: \(after.summary)")
        #expect(try Fault.keyringValue(app: app) == v)
        #expect(try Fault.itemPaths([("identity-scope", "app"), ("identity-name", app)]).unlocked.count == 1, "the twin is gone")
    }

    @Test("a pending reset that meets a locked keyring still serves a backup made after the reset")
    func pendingResetWithLockedKeyringServesNewerBackup() throws {
        let box = try Sandbox()
        let app = Fault.newApp("pending-locked")
        let k = try box.establish(app)
        let pending = try box.idtool(["reset", "--app", app], environment: box.noBusEnvironment)
        #expect(pending.status == 0, "\(pending.summary)")
        try? FileManager.default.removeItem(atPath: box.keyringSeenMarker)
        let headless = try box.idtool(["get", "--app", app], environment: box.noBusEnvironment)
        try #require(headless.status == 0 && Fault.isUUID(headless.line), "headless get without the marker: \(headless.summary)")
        let h = headless.line
        #expect(h != k)

        defer { Fault.restoreDaemon() }
        try Fault.lockKeyring()
        let get = try box.idtool(["get", "--app", app])
        get.expectExit(FaultTable["edge.reset.pending-locked"])
        #expect(get.line == h, "the backup is already past the reset: \(get.summary)")
        get.expectClean(hiding: [k, h])

        Fault.restoreDaemon()
        let after = try box.idtool(["get", "--app", app])
        #expect(after.status == 0 && after.line == h, "once unlocked, H stays: \(after.summary)")
        #expect(try Fault.keyringValue(app: app) == h, "K removed, H pushed into the keyring")
        #expect(try Fault.identityItems(app).count == 1)
    }

    // MARK: 7. Resets across state directories

    @Test("a vendor reset sticks: another state directory's backup never writes the old identifier back")
    func vendorResetSticksAcrossStateDirectories() throws {
        let s1 = try Sandbox(), s2 = try Sandbox()
        let group = Fault.newApp("vendor-reset")
        let appA = Fault.newApp("vendor-a"), appB = Fault.newApp("vendor-b")
        let first = try s1.idtool(["get", "--app", appA, "--vendor", group])
        try #require(first.status == 0 && Fault.isUUID(first.line), "\(first.summary)")
        let v = first.line
        let shared = try s2.idtool(["get", "--app", appB, "--vendor", group])
        try #require(shared.status == 0 && shared.line == v, "the group shares V: \(shared.summary)")

        let reset = try s1.idtool(["reset", "--app", appA, "--vendor", group])
        #expect(reset.status == 0, "\(reset.summary)")
        let b = try s2.idtool(["get", "--app", appB, "--vendor", group])
        b.expectExit(FaultTable["edge.reset.vendor-other-state-dir"])
        #expect(Fault.isUUID(b.line) && b.line != v, "a new W, not V from B's old backup: \(b.summary)")
        b.expectClean(hiding: [v, b.line])
        let w = b.line
        #expect(s2.backupIdentifierBytes(at: s2.vendorBackupPath(group)) == Array(w.utf8), "B's backup now holds W")
        let a = try s1.idtool(["get", "--app", appA, "--vendor", group])
        #expect(a.status == 0 && a.line == w, "A gets W too: \(a.summary)")
        #expect(try Fault.keyringValue(app: group, scope: "vendor") == w)
        #expect(try Fault.identityItems(group, scope: "vendor").count == 1)
    }

    // MARK: 8. Corrupt backup, item deleted

    @Test("keyring item deleted and backup corrupt: an error that says reset, on every run, until reset")
    func corruptBackupWithItemDeletedIsAnError() throws {
        let box = try Sandbox()
        let app = Fault.newApp("corrupt-nokey")
        let k = try box.establish(app)
        try Fault.clearKeyringItem(app: app)
        try Data("{\"garbage\": ".utf8 + (0..<200).map { _ in UInt8.random(in: 0x41...0x5a) }).write(to: URL(fileURLWithPath: box.backupPath(app)))

        for attempt in 1...2 {
            let get = try box.idtool(["get", "--app", app])
            get.expectExit(FaultTable["edge.backup.corrupt-item-deleted"])
            #expect(get.stdout.isEmpty, "run \(attempt): nothing handed out: \(get.stdoutText)")
            #expect(get.stderr.contains("reset"), "run \(attempt): tells the user to reset: \(get.stderr)")
            get.expectClean(hiding: [k])
            #expect(try Fault.identityItems(app).isEmpty, "run \(attempt): no keyring item created")
        }

        let reset = try box.idtool(["reset", "--app", app])
        #expect(reset.status == 0, "\(reset.summary)")
        let fresh = try box.idtool(["get", "--app", app])
        #expect(fresh.status == 0 && Fault.isUUID(fresh.line) && fresh.line != k, "a new identifier after reset: \(fresh.summary)")
    }

    // MARK: 9. Bytes, not Unicode text

    @Test("stores are compared as bytes: an NFC backup is repaired to the keyring's NFD bytes")
    func storesComparedAsBytes() throws {
        let box = try Sandbox()
        let app = Fault.newApp("nfd")
        _ = try box.establish(app)
        let nfd = "e\u{301}-rest", nfc = "\u{e9}-rest"
        try #require(Array(nfd.utf8) == [0x65, 0xCC, 0x81] + Array("-rest".utf8) && Array(nfc.utf8) == [0xC3, 0xA9] + Array("-rest".utf8))
        try Fault.clearKeyringItem(app: app)
        try Fault.storeItem([("identity-scope", "app"), ("identity-name", app)], value: Data(nfd.utf8))
        // The record as the current code writes it, with the NFC form and its checksum.
        let recordData = try Data(contentsOf: URL(fileURLWithPath: box.backupPath(app)))
        var record = try #require(try JSONSerialization.jsonObject(with: recordData) as? [String: Any])
        record["identifier"] = nfc
        record["checksum"] = try Fault.sha256Hex(Data(nfc.utf8))
        try JSONSerialization.data(withJSONObject: record, options: [.sortedKeys]).write(to: URL(fileURLWithPath: box.backupPath(app)))
        try #require(box.backupIdentifierBytes(at: box.backupPath(app)) == Array(nfc.utf8), "the backup holds the NFC bytes")

        let get = try box.idtool(["get", "--app", app])
        get.expectExit(FaultTable["edge.backup.nfd-nfc"])
        #expect(Array(get.stdout) == Array((nfd + "\n").utf8), "prints the keyring's NFD bytes: \(Array(get.stdout))")
        get.expectClean(hiding: [nfd, nfc])
        #expect(box.backupIdentifierBytes(at: box.backupPath(app)) == Array(nfd.utf8), "the backup is repaired to the NFD bytes")
        let again = try box.idtool(["get", "--app", app])
        #expect(Array(again.stdout) == Array((nfd + "\n").utf8), "stable bytes")
    }

    // MARK: 10. Long names

    @Test("app IDs and vendor groups of 250 bytes resolve and are stable")
    func longNamesResolve() throws {
        let box = try Sandbox()
        let tag = UUID().uuidString.prefix(8).lowercased()
        let app = "edge" + tag + String(repeating: "a", count: 250 - 12)
        let group = "edge" + tag + String(repeating: "b", count: 250 - 12)
        try #require(app.utf8.count == 250 && group.utf8.count == 250)
        for (arguments, name, scope) in [(["get", "--app", app], app, "app"), (["get", "--app", "a", "--vendor", group], group, "vendor")] {
            let first = try box.idtool(arguments)
            first.expectExit(FaultTable["edge.input.long-names"])
            #expect(Fault.isUUID(first.line), "\(scope): \(first.summary)")
            first.expectClean(hiding: [first.line])
            let second = try box.idtool(arguments)
            #expect(second.status == 0 && second.line == first.line, "\(scope) stable: \(second.summary)")
            #expect(try Fault.keyringValue(app: name, scope: scope) == first.line, "\(scope): in the keyring")
        }
    }

    // MARK: 11. --timeout bounds the whole command

    @Test("against a hung daemon, get --timeout 3 serves the backup within the timeout (plus margin)")
    func timeoutBoundsWholeCommand() throws {
        let box = try Sandbox()
        let app = Fault.newApp("hung")
        let id = try box.establish(app)
        let paused = try PausedDaemon()
        defer {
            paused.resume()
            Fault.restoreDaemon()
        }
        let clock = ContinuousClock()
        let start = clock.now
        let get = try box.idtool(["get", "--app", app, "--timeout", "3"])
        let elapsed = clock.now - start
        get.expectExit(FaultTable["edge.timeout.hung-daemon"])
        #expect(get.line == id, "served from the backup: \(get.summary)")
        get.expectClean(hiding: [id])
        // Far above 3 s plus a process start under load; below the 25 s default that an ignored --timeout would take.
        #expect(elapsed < .seconds(20), "--timeout 3 bounds the whole command; took \(elapsed)")
    }

    // MARK: 12. Smaller leaks

    @Test("migrate --remove-legacy keeps the legacy copy when only the backup received the value (no bus)")
    func legacyKeptWhenOnlyBackupHoldsIt() throws {
        let box = try Sandbox()
        let app = Fault.newApp("migrate-nobus")
        let legacy = box.root.appendingPathComponent("legacy-id").path
        let value = "legacy-\(UUID().uuidString.prefix(8).lowercased())"
        try Data((value + "\n").utf8).write(to: URL(fileURLWithPath: legacy))
        let migrate = try box.idtool(["migrate", "--app", app, "--from", "file:\(legacy)", "--remove-legacy"],
                                     environment: box.noBusEnvironment)
        migrate.expectExit(FaultTable["edge.migrate.no-bus-remove-legacy"])
        #expect(migrate.line == value, "adopted into the backup: \(migrate.summary)")
        migrate.expectClean(hiding: [value])
        #expect(FileManager.default.fileExists(atPath: legacy), "the legacy copy stays: the keyring never received the value")
        #expect(box.backupIdentifier(app) == value)
    }

    @Test("another program's state directory (nvim, the default idtool) is never chmod'ed or written into")
    func foreignStateDirectoryUntouched() throws {
        let box = try Sandbox()
        for (app, arguments) in [("nvim", ["get", "--app", "nvim"]), ("idtool", ["get"])] {
            let directory = box.stateHome + "/" + app
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data("theirs\n".utf8).write(to: URL(fileURLWithPath: directory + "/shada"))
            try #require(chmod(directory, 0o755) == 0)
            let get = try box.idtool(arguments)
            get.expectExit(FaultTable["edge.sec.foreign-state-dir"])
            #expect(Fault.isUUID(get.line), "\(app): \(get.summary)")
            get.expectClean(hiding: [get.line])
            var info = stat()
            #expect(lstat(directory, &info) == 0 && info.st_mode & 0o7777 == 0o755, "\(app): mode still 0755, got \(String(info.st_mode & 0o7777, radix: 8))")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["shada"], "\(app): nothing written into it")
        }
    }

    @Test("a symlinked backup directory is never read through: its record is not served or pushed")
    func symlinkedBackupDirectoryNotRead() throws {
        let box = try Sandbox()
        let app = Fault.newApp("symdir-read")
        // A valid record for this app, made headless in another state directory (no keyring item).
        let maker = try Sandbox()
        let made = try maker.idtool(["get", "--app", app], environment: maker.noBusEnvironment)
        try #require(made.status == 0 && Fault.isUUID(made.line), "\(made.summary)")
        let planted = made.line
        let elsewhere = box.root.appendingPathComponent("elsewhere").path
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: maker.backupPath(app), toPath: elsewhere + "/identifier")
        // The parents as the library would make them (0700), so only the symlink is unusual.
        var parents: [String] = []
        var parent = (box.backupDirectory(app) as NSString).deletingLastPathComponent
        while parent.count > box.stateHome.count {
            parents.insert(parent, at: 0)
            parent = (parent as NSString).deletingLastPathComponent
        }
        for directory in parents where mkdir(directory, 0o700) != 0 {
            try #require(errno == EEXIST, "mkdir \(directory): \(String(cString: strerror(errno)))")
        }
        try #require(symlink(elsewhere, box.backupDirectory(app)) == 0)
        try #require(try Fault.keyringValue(app: app) == nil, "the keyring has no item")

        let get = try box.idtool(["get", "--app", app])
        get.expectExit(FaultTable["edge.sec.symlinked-dir-no-item"])
        #expect(get.status != 0, "\(get.summary)")
        #expect(!get.stdoutText.contains(planted), "the record behind the symlink is never served")
        get.expectClean(hiding: [planted])
        #expect(try Fault.keyringValue(app: app) != planted, "and never pushed into the keyring")
    }
}
