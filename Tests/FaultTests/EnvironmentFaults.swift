// Environment faults: no bus, no Secret Service, no default collection, locked, daemon killed,
// item deleted behind our back, XDG_RUNTIME_DIR unusable.
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Faults: environment", .serialized, .needs(.secretService))
struct EnvironmentFaults {
    init() throws { try Fault.requireTestKeyring() }

    @Test("no session bus: the backup serves the same identifier; a new app lives in the backup and is pushed later")
    func noSessionBus() throws {
        let box = try Sandbox()
        let app = Fault.newApp("nobus")
        let id = try box.establish(app)
        let get = try box.idtool(["get", "--app", app, "--json"], environment: box.noBusEnvironment)
        get.expectExit(FaultTable["env.no-bus"])
        #expect(get.json?["identifier"] as? String == id, "identifier unchanged")
        #expect(get.json?["provenance"] as? String == "backup")
        #expect(get.json?["degraded"] as? Bool == true)
        #expect(get.stderrLines.count == 1, "one-line notice: \(get.stderr)")
        get.expectClean(hiding: [id])

        // This user's keyring served an identifier: without a bus, a new app gets none (75).
        let fresh = Fault.newApp("nobus-new")
        let refused = try box.idtool(["get", "--app", fresh], environment: box.noBusEnvironment)
        refused.expectExit(FaultTable["env.no-bus.new.served"])
        #expect(refused.stdout.isEmpty, "\(refused.stdoutText)")
        #expect(!FileManager.default.fileExists(atPath: box.backupPath(fresh)), "nothing generated into the backup")
        refused.expectClean()

        // A user no keyring ever served (an SSH box, a container) gets the headless default.
        let never = try Sandbox()
        let first = try never.idtool(["get", "--app", fresh], environment: never.noBusEnvironment)
        first.expectExit(FaultTable["env.no-bus.new"])
        #expect(Fault.isUUID(first.line))
        first.expectClean(hiding: [first.line])
        #expect(try never.idtool(["get", "--app", fresh], environment: never.noBusEnvironment).line == first.line, "stable without a bus")
        #expect(try Fault.keyringValue(app: fresh) == nil, "nothing reached the keyring yet")
        let back = try never.idtool(["get", "--app", fresh])
        #expect(back.status == 0 && back.line == first.line, "same identifier once the bus is back: \(back.summary)")
        #expect(try Fault.keyringValue(app: fresh) == first.line, "pushed into the keyring")
    }

    @Test("a bus with no Secret Service: the backup serves the same identifier")
    func busWithoutSecretService() throws {
        let box = try Sandbox()
        let app = Fault.newApp("nosvc")
        let id = try box.establish(app)
        let bus = try BusWithoutSecretService()
        var environment = box.keyringEnvironment
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address

        let get = try box.idtool(["get", "--app", app, "--json"], environment: environment)
        get.expectExit(FaultTable["env.no-secret-service"])
        #expect(get.json?["identifier"] as? String == id, "identifier unchanged")
        #expect(get.json?["provenance"] as? String == "backup")
        #expect((get.json?["keyringProblem"] as? String)?.contains("Secret Service") == true, "\(get.stdoutText)")
        get.expectClean(hiding: [id])
        #expect(try Fault.keyringValue(app: app) == id)
    }

    // gnome-keyring 42: SetAlias(default, "/") alone falls back to "login"; the alias only goes
    // away when $XDG_DATA_HOME/keyrings/default names a collection that does not exist.
    static func dbusSecrets(_ arguments: [String]) throws -> Run {
        try Fault.run("/usr/bin/dbus-send", ["--session", "--print-reply", "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets"] + arguments)
    }

    static func readDefaultAlias() throws -> String {
        let reply = try dbusSecrets(["org.freedesktop.Secret.Service.ReadAlias", "string:default"])
        let line = reply.stdoutText.split(separator: "\n").last { $0.contains("object path") } ?? ""
        return line.split(separator: "\"").dropFirst().first.map(String.init) ?? ""
    }

    // Removing the default alias goes through gnome-keyring's keyrings/default file (see above).
    @Test(
        "no default collection: a stored identifier is still served; a new one waits in the backup and is pushed later",
        .needs(.removableDefaultAlias))
    func noDefaultCollection() throws {
        let box = try Sandbox()
        let app = Fault.newApp("nodefault")
        let id = try box.establish(app)
        let original = try Self.readDefaultAlias()
        try #require(original.hasPrefix("/org/freedesktop/secrets/collection/"), "default alias: \(original)")
        let dataHome = try #require(ProcessInfo.processInfo.environment["XDG_DATA_HOME"])
        _ = try Self.dbusSecrets(["org.freedesktop.Secret.Service.SetAlias", "string:default", "objpath:/"])
        var restored = false
        func restore() {
            guard !restored else { return }
            restored = true
            _ = try? Self.dbusSecrets(["org.freedesktop.Secret.Service.SetAlias", "string:default", "objpath:\(original)"])
            #expect((try? Self.readDefaultAlias()) == original, "default alias restored")
        }
        defer { restore() }
        try Data("no-such-collection-\(UUID().uuidString)".utf8).write(to: URL(fileURLWithPath: dataHome + "/keyrings/default"))
        try #require(try Self.readDefaultAlias() == "/", "the daemon still reports a default collection")

        let get = try box.idtool(["get", "--app", app, "--json"])
        get.expectExit(FaultTable["env.no-default-collection"])
        #expect(get.json?["identifier"] as? String == id, "identifier unchanged: \(get.summary)")
        #expect(get.json?["provenance"] as? String == "keyring")
        get.expectClean(hiding: [id])

        let fresh = Fault.newApp("nodefault-new")
        let made = try box.idtool(["get", "--app", fresh, "--json"])
        made.expectExit(FaultTable["env.no-default-collection.new"])
        let newID = try #require(made.json?["identifier"] as? String, "\(made.summary)")
        #expect(made.json?["storedIn"] as? [String] == ["backup"])
        #expect(made.json?["degraded"] as? Bool == true)
        made.expectClean(hiding: [newID])
        #expect(try box.idtool(["get", "--app", fresh]).line == newID, "stable while there is no default collection")

        restore()
        let pushed = try box.idtool(["get", "--app", fresh, "--json"])
        #expect(pushed.json?["identifier"] as? String == newID)
        #expect(pushed.json?["storedIn"] as? [String] == ["keyring", "backup"], "\(pushed.stdoutText)")
        #expect(try Fault.keyringValue(app: fresh) == newID)
    }

    @Test("keyring locked: served from the backup; without a backup it is error 75 and nothing is generated")
    func locked() throws {
        let box = try Sandbox()
        let app = Fault.newApp("locked")
        let id = try box.establish(app)
        defer { Fault.restoreDaemon() }
        try Fault.lockKeyring()
        // --no-prompt: the locked path itself; kwalletd5 in this harness would open the wallet silently.

        let get = try box.idtool(["get", "--app", app, "--json", "--no-prompt"])
        get.expectExit(FaultTable["env.locked.backup"])
        #expect(get.json?["identifier"] as? String == id, "identifier unchanged")
        #expect(get.json?["provenance"] as? String == "backup")
        #expect(get.json?["degraded"] as? Bool == true)
        get.expectClean(hiding: [id])

        try FileManager.default.removeItem(atPath: box.backupPath(app))
        let bare = try box.idtool(["get", "--app", app, "--no-prompt"])
        bare.expectExit(FaultTable["env.locked.no-backup"])
        #expect(bare.stdout.isEmpty)
        #expect(bare.stderrLines.count == 1)
        bare.expectClean(hiding: [id])
        #expect(!FileManager.default.fileExists(atPath: box.backupPath(app)), "nothing generated into the backup")

        Fault.restoreDaemon()
        let after = try box.idtool(["get", "--app", app])
        #expect(after.status == 0 && after.line == id, "same identifier after unlock: \(after.summary)")
        #expect(try Fault.keyringItemCount(app: app) == 1)
    }

    @Test(
        "daemon killed between two calls: D-Bus activation brings a daemon without the password; the backup serves",
        .needs(.busActivation))
    func killedBetweenCalls() throws {
        let box = try Sandbox()
        let app = Fault.newApp("killed")
        let id = try box.establish(app)
        defer { Fault.restoreDaemon() }
        let kill = try Fault.keyringCtl("kill")
        try #require(kill.status == 0, "keyring-ctl kill: \(kill.summary)")

        // The next call activates gnome-keyring-daemon through D-Bus; it has no password, so the
        // login collection comes up locked. That must read as "locked", never as "absent".
        let get = try box.idtool(["get", "--app", app, "--json"])
        get.expectExit(FaultTable["env.killed-between-calls"])
        #expect(get.json?["identifier"] as? String == id, "identifier unchanged: \(get.summary)")
        #expect(get.json?["provenance"] as? String == "backup", "\(get.stdoutText)")
        #expect((get.json?["keyringProblem"] as? String).map { $0.contains("locked") } == true,
                "the activated daemon's login collection is locked: \(get.stdoutText)")
        get.expectClean(hiding: [id])
        #expect(try Fault.daemonPID() != nil, "D-Bus activation started a daemon")

        Fault.restoreDaemon()
        let after = try box.idtool(["get", "--app", app, "--json"])
        #expect(after.json?["identifier"] as? String == id)
        #expect(after.json?["provenance"] as? String == "keyring", "\(after.summary)")
        #expect(try Fault.keyringItemCount(app: app) == 1, "no duplicate item")
    }

    /// The state letter of /proc/PID/stat ("R", "S", "D", "T", "Z", …), or nil when there is no such process.
    static func processState(_ pid: pid_t) -> Character? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let name = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: name)...].first { $0 != " " }
    }

    /// Still running: exists and has not exited (a zombie has exited; it only waits to be reaped).
    static func isRunning(_ pid: pid_t) -> Bool { processState(pid).map { $0 != "Z" && $0 != "X" } ?? false }

    /// Asks the bus (not the Secret Service) a question about a name.
    static func busDriver(_ method: String, _ name: String) throws -> String? {
        let reply = try Fault.run("/usr/bin/dbus-send", ["--session", "--print-reply", "--dest=org.freedesktop.DBus",
                                                        "/org/freedesktop/DBus", "org.freedesktop.DBus.\(method)", "string:\(name)"])
        guard reply.status == 0, let line = reply.stdoutText.split(separator: "\n").last else { return nil }
        return line.split(separator: " ").last.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
    }

    @Test("daemon killed while a call is in flight: the call fails over to the backup; same identifier after restart")
    func killedInFlight() throws {
        let box = try Sandbox()
        let app = Fault.newApp("inflight")
        let id = try box.establish(app)
        defer { Fault.restoreDaemon() }
        let pid = try #require(try Fault.daemonPID(), "daemon pid")
        let daemonName = try #require(try Self.busDriver("GetNameOwner", "org.freedesktop.secrets"), "the daemon's unique name")

        // A bus monitor sees every message the bus routes, with its sender.
        let monitor = try BusMonitor()
        defer { monitor.stop() }

        _ = try PausedDaemon()   // never resumed: killed below, or by the defer
        var killed = false
        defer { if !killed { kill(pid, SIGKILL) } }
        let child = try box.start(["get", "--app", app, "--json", "--timeout", "60"])

        // In flight: the bus has handed a method call from this child to the stopped daemon,
        // which cannot answer it. Wait for that (no clock involved); the child's own 60 s
        // timeout ends the wait if the call never comes.
        var checked: Set<String> = []
        var call: BusMonitor.Message?
        while call == nil {
            for message in monitor.messages
            where message.type == "mc" && message.destination != "org.freedesktop.DBus" && !checked.contains(message.sender) {
                checked.insert(message.sender)
                if try Self.busDriver("GetConnectionUnixProcessID", message.sender) == String(child.pid) { call = message }
            }
            guard call == nil else { break }
            guard Self.isRunning(child.pid) else {
                Issue.record("idtool finished before its call reached the daemon: \(monitor.messages)")
                break
            }
            usleep(10_000)
        }
        if let call {
            // Addressed to the daemon's unique name (libsecret) or to the name it owns (raw calls).
            #expect([daemonName, "org.freedesktop.secrets"].contains(call.destination), "the call went to the stopped daemon: \(call)")
            #expect(Self.processState(pid) == "T", "the daemon is stopped, so the call is unanswered")
        }
        #expect(Self.isRunning(child.pid), "idtool is still waiting for the answer when the daemon dies")
        #expect(kill(pid, SIGKILL) == 0)
        killed = true
        let get = try child.wait()
        get.expectExit(FaultTable["env.killed-in-flight"])
        #expect(get.json?["identifier"] as? String == id, "identifier unchanged: \(get.summary)")
        #expect(get.json?["provenance"] as? String == "backup", "\(get.stdoutText)")
        get.expectClean(hiding: [id])

        Fault.restoreDaemon()
        let after = try box.idtool(["get", "--app", app, "--json"])
        #expect(after.json?["identifier"] as? String == id)
        // KeePassXC saves changes a moment after making them, ksecretd a value 5 s later: a KILL
        // may lose the item or its value, and the backup then serves the same identifier (and writes it back).
        let provenances = TestProvider.quirks.savesBeforeAnswering ? ["keyring"] : ["keyring", "backup"]
        #expect(provenances.contains(after.json?["provenance"] as? String ?? ""), "\(after.summary)")
    }

    @Test("keyring item deleted behind our back: served from the backup and written back")
    func itemDeleted() throws {
        let box = try Sandbox()
        let app = Fault.newApp("deleted")
        let id = try box.establish(app)
        try Fault.clearKeyringItem(app: app)
        try #require(try Fault.keyringValue(app: app) == nil)
        let get = try box.idtool(["get", "--app", app, "--json"])
        get.expectExit(FaultTable["env.item-deleted"])
        #expect(get.json?["identifier"] as? String == id, "identifier unchanged")
        #expect(get.json?["provenance"] as? String == "backup")
        #expect((get.json?["repairs"] as? [String])?.isEmpty == false)
        get.expectClean(hiding: [id])
        #expect(try Fault.keyringValue(app: app) == id, "keyring item written back")
    }

    /// The first-run lock's file: named by a hash of the scope, so long names fit NAME_MAX.
    static func hasLockFile(_ directory: String) -> Bool {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).contains { $0.hasPrefix("app-") && $0.hasSuffix(".lock") }
    }

    @Test("XDG_RUNTIME_DIR unset or on a read-only file system: the lock falls back to the backup directory")
    func runtimeDirectory() throws {
        let box = try Sandbox()
        var unset = box.keyringEnvironment
        unset["XDG_RUNTIME_DIR"] = nil
        let app = Fault.newApp("noruntime")
        let first = try box.idtool(["get", "--app", app], environment: unset)
        first.expectExit(FaultTable["env.runtime-dir-unset"])
        #expect(Fault.isUUID(first.line))
        first.expectClean(hiding: [first.line])
        #expect(try box.idtool(["get", "--app", app], environment: unset).line == first.line)
        #expect(Self.hasLockFile(box.backupDirectory(app)), "lock in the backup dir")

        // Read-only even for root: a tmpfs remounted ro.
        let readOnly = box.root.appendingPathComponent("ro-run").path
        try box.mountTmpfs(at: readOnly, size: "64k")
        try box.remountReadOnly(readOnly, size: "64k")
        var environment = box.keyringEnvironment
        environment["XDG_RUNTIME_DIR"] = readOnly
        let other = Fault.newApp("roruntime")
        let made = try box.idtool(["get", "--app", other], environment: environment)
        made.expectExit(FaultTable["env.runtime-dir-readonly"])
        #expect(Fault.isUUID(made.line), "\(made.summary)")
        made.expectClean(hiding: [made.line])
        #expect(try box.idtool(["get", "--app", other], environment: environment).line == made.line)
        #expect(Self.hasLockFile(box.backupDirectory(other)))
    }
}
