// Support for the fault-injection suite: per-case sandboxes, and small helpers around idtool, secret-tool
// and scripts/keyring-ctl.
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What a finished child did.
struct Run {
    var status: Int32
    var stdout: Data
    var stderr: String
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    var line: String { stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) }
    var stderrLines: [Substring] { stderr.split(separator: "\n") }
    var summary: String { "exit \(status), stderr: \(stderr)" }

    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: stdout) as? [String: Any] }
}

/// A started child (TestSupport's ChildProcess), with results as this suite's `Run`.
final class Child {
    private let process: ChildProcess
    var pid: pid_t { process.pid }

    init(_ program: String, _ arguments: [[UInt8]], stdin: Data? = nil, environment: [String: String]) throws {
        // An unprivileged child (setpriv) must be able to write its output files.
        process = try ChildProcess(program, arguments, stdin: stdin, environment: environment, outputWritableByAnyone: true)
    }

    /// Waits with waitpid and collects the output.
    func wait() throws -> Run {
        let result = try process.wait()
        return Run(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }
}

enum Fault {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// TestSupport's idtool.
    static let idtool: String? = idtoolPath

    /// Fails (never skips) outside scripts/with-keyring, or without a built idtool.
    static func requireTestKeyring(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try TestSupport.requireTestKeyring(sourceLocation: sourceLocation)
        _ = try requireIdtool(sourceLocation: sourceLocation)
    }

    /// Reruns secret-tool and python when kwalletd5 would mishandle their session (see ChildProcess.isRejectedSessionKey).
    static func run(_ program: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil) throws -> Run {
        var attempts = 0
        while true {
            attempts += 1
            let result = try Child(program, arguments.map { Array($0.utf8) }, stdin: stdin,
                                   environment: ChildProcess.clientEnvironment(program, environment ?? ProcessInfo.processInfo.environment)).wait()
            if attempts >= 5 || !ChildProcess.isRejectedSessionKey(program, status: result.status, stderr: result.stderr) { return result }
        }
    }

    static func keyringCtl(_ command: String) throws -> Run {
        try run(keyringCtlPath, [command])
    }

    /// keyring-ctl restart, recorded as an issue when it fails (for defers).
    static func restoreDaemon(sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let restart = try keyringCtl("restart")
            #expect(restart.status == 0, "keyring-ctl restart: \(restart.summary)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("keyring-ctl restart: \(error)", sourceLocation: sourceLocation)
        }
    }

    static func lockKeyring(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let lock = try keyringCtl("lock")
        try #require(lock.status == 0, "keyring-ctl lock: \(lock.summary)", sourceLocation: sourceLocation)
    }

    static func daemonPID() throws -> pid_t? { pid_t(try keyringCtl("pid").line) }

    /// The identifier item's secret, per secret-tool (the documented lookup), or nil.
    static func keyringValue(app: String, scope: String = "app") throws -> String? {
        let lookup = try run("/usr/bin/secret-tool", ["lookup", "identity-scope", scope, "identity-name", app])
        return lookup.status == 0 ? lookup.line : nil
    }

    static func keyringItemCount(app: String, scope: String = "app") throws -> Int {
        let search = try run("/usr/bin/secret-tool", ["search", "--all", "--unlock", "identity-scope", scope, "identity-name", app])
        return search.stdoutText.components(separatedBy: "[/").count - 1
    }

    static func clearKeyringItem(app: String, scope: String = "app") throws {
        _ = try run("/usr/bin/secret-tool", ["clear", "identity-scope", scope, "identity-name", app])
    }

    static func isUUID(_ text: String) -> Bool {
        text.range(of: "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", options: .regularExpression) != nil
    }

    static func newApp(_ tag: String) -> String { "fault.\(tag).\(UUID().uuidString.prefix(8).lowercased())" }
}

/// A private HOME/XDG tree for one case, so the backup path is known and nothing leaks between
/// cases. Mounts made inside it are unmounted on cleanup.
final class Sandbox {
    let root: URL
    var stateHome: String { root.appendingPathComponent("state").path }
    var runtimeDir: String { root.appendingPathComponent("run").path }
    var home: String { root.appendingPathComponent("home").path }
    private var mounts: [String] = []

    init() throws {
        root = URL(fileURLWithPath: "/tmp").appendingPathComponent("fault-\(UUID().uuidString.prefix(12))")
        for dir in [root.path, stateHome, runtimeDir, home] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            chmod(dir, 0o700)
        }
    }

    deinit { cleanup() }

    func cleanup() {
        for mount in mounts.reversed() { umount2(mount, Int32(MNT_DETACH)) }
        mounts = []
        _ = try? Fault.run("/bin/chmod", ["-R", "u+rwx", root.path])
        try? FileManager.default.removeItem(at: root)
    }

    /// The library's own per-scope state directory: `$XDG_STATE_HOME/keyring-identity/<kind>/<name>`.
    func backupDirectory(_ name: String, vendor: Bool = false) -> String {
        stateHome + "/keyring-identity/" + (vendor ? "vendor/" : "app/") + name
    }
    func backupPath(_ name: String, vendor: Bool = false) -> String {
        backupDirectory(name, vendor: vendor) + "/identifier"
    }
    /// Written once a Secret Service held an identifier for this user.
    var keyringSeenMarker: String { stateHome + "/keyring-identity/keyring-seen" }

    /// The identifier in the backup file when it is a valid record, else nil.
    func backupIdentifier(_ app: String) -> String? {
        guard let data = FileManager.default.contents(atPath: backupPath(app)),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return object["identifier"] as? String
    }

    /// The with-keyring environment, with this sandbox's XDG state and runtime dirs.
    var keyringEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["G_DEBUG"] = "fatal-criticals"
        environment["IDTOOL_APP"] = nil
        environment["XDG_STATE_HOME"] = stateHome
        environment["XDG_RUNTIME_DIR"] = runtimeDir
        return environment
    }

    /// No session bus at all: no address, and a runtime dir with no `bus` socket.
    var noBusEnvironment: [String: String] {
        var environment = keyringEnvironment
        environment["DBUS_SESSION_BUS_ADDRESS"] = nil
        return environment
    }

    /// `idtool ARGS` in `environment` (the keyring environment by default).
    func idtool(_ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil) throws -> Run {
        try Child(Fault.idtool!, arguments.map { Array($0.utf8) }, stdin: stdin,
                  environment: environment ?? keyringEnvironment).wait()
    }

    func idtool(raw arguments: [[UInt8]], stdin: Data? = nil, environment: [String: String]? = nil) throws -> Run {
        try Child(Fault.idtool!, arguments, stdin: stdin, environment: environment ?? keyringEnvironment).wait()
    }

    func start(_ arguments: [String], environment: [String: String]? = nil) throws -> Child {
        try Child(Fault.idtool!, arguments.map { Array($0.utf8) }, environment: environment ?? keyringEnvironment)
    }

    /// `idtool get --app APP` that must succeed: returns the identifier.
    func establish(_ app: String, environment: [String: String]? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let get = try idtool(["get", "--app", app], environment: environment)
        try #require(get.status == 0 && Fault.isUUID(get.line), "setup get: \(get.summary)", sourceLocation: sourceLocation)
        return get.line
    }

    /// Mounts a tmpfs of `size` at `path` (created when missing), owned by root, mode 0700.
    func mountTmpfs(at path: String, size: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let result = mount("tmpfs", path, "tmpfs", 0, "size=\(size),mode=0700")
        try #require(result == 0, "mount tmpfs at \(path): \(String(cString: strerror(errno)))", sourceLocation: sourceLocation)
        mounts.append(path)
    }

    /// Remounts a tmpfs made by mountTmpfs read-only: this stops root too (EROFS).
    func remountReadOnly(_ path: String, size: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = mount("tmpfs", path, "tmpfs", UInt(MS_REMOUNT | MS_RDONLY), "size=\(size),mode=0700")
        try #require(result == 0, "remount ro \(path): \(String(cString: strerror(errno)))", sourceLocation: sourceLocation)
    }
}

extension Run {
    /// Nothing in stderr reveals `secrets`, and there is no sign of a crash or GLib noise.
    func expectClean(hiding secrets: [String?] = [], sourceLocation: SourceLocation = #_sourceLocation) {
        for case let secret? in secrets where !secret.isEmpty {
            #expect(!stderr.contains(secret), "stderr leaks an identifier or secret: \(stderr)", sourceLocation: sourceLocation)
        }
        for noise in ["CRITICAL", "Fatal error", "Trace/breakpoint", "Stack dump", "WARNING **"] {
            #expect(!stderr.contains(noise), "stderr has \(noise): \(stderr)", sourceLocation: sourceLocation)
        }
        #expect(status < 128, "died from signal \(status - 128): \(stderr)", sourceLocation: sourceLocation)
        // Diagnostics are `idtool: …` lines; a usage error (64) appends the command's usage after its one line.
        for line in status == 64 ? Array(stderrLines.prefix(1)) : stderrLines {
            #expect(line.hasPrefix("idtool: "), "stderr line without the idtool prefix: \(line)", sourceLocation: sourceLocation)
        }
    }

    /// The exit status the fault table declares for `row`.
    func expectExit(_ row: FaultRow, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(status == row.exit, "[\(row.id)] expected exit \(row.exit.map(String.init) ?? "-"): \(summary)", sourceLocation: sourceLocation)
    }
}
