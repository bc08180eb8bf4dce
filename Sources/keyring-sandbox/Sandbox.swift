// One run: the temporary root, the private bus, the provider, the command, and the cleanup. The
// provider is checked, set up and started by the package's scripts/keyring-ctl from its file in
// scripts/providers, as the package's own test harness starts it: one definition per provider.
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Why a run stopped before the command ran, with its exit status.
struct SandboxFailure: Error {
    var status: Int32
    var message: String
}

/// The variables never passed on: the user's session (bus, keyring agent, display), libsecret's
/// test switches, and the project's own harness (scripts/with-keyring), when runs are nested.
private let removedVariables = [
    "DBUS_SESSION_BUS_ADDRESS", "DBUS_STARTER_ADDRESS", "DBUS_STARTER_BUS_TYPE", "DISPLAY", "WAYLAND_DISPLAY",
    "GNOME_KEYRING_CONTROL", "SSH_AUTH_SOCK", "GNOME_KEYRING_TEST_PROMPTER", "SECRET_BACKEND", "SECRET_FILE_TEST_PATH",
    "SECRET_FILE_TEST_PASSWORD", "WITH_KEYRING_ROOT", "WITH_KEYRING_PASSWORD", "WITH_KEYRING_PROMPTER", "KEYRING_CLIENT_G_DEBUG",
    "KEYRING_PROVIDER", "KEYRING_LIVED_IN", "KEYRING_SANDBOX_ROOT", "KEYRING_SANDBOX_PROVIDER",
]

/// The package's scripts/keyring-ctl, found from this file's path: `swift run` builds from a
/// checkout (a dependency's too: SwiftPM checks out the whole repository), where scripts/ is
/// beside Sources/.
private let keyringCtlPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("scripts/keyring-ctl").path

/// A throwaway keyring session: created by `run`, gone when it returns (unless `keep`).
final class Sandbox {
    private let options: Options
    private let outer: [String: String]
    private var root = ""
    private var environment: [String: String] = [:]
    private var busPID: pid_t = 0
    /// The throwaway keyring's password: random, so that nothing can guess it.
    private let password = "throwaway-" + (0..<2).map { _ in String(UInt64.random(in: .min ... .max), radix: 16) }.joined()

    init(options: Options, environment: [String: String]) {
        self.options = options
        self.outer = environment
    }

    /// Sets up, runs the command, tears down; returns the exit status.
    func run() -> Int32 {
        var status: Int32
        do throws(SandboxFailure) {
            guard FileManager.default.fileExists(atPath: keyringCtlPath) else {
                throw SandboxFailure(
                    status: 69, message: "\(keyringCtlPath), which starts the provider, is missing: run keyring-sandbox from its checkout")
            }
            try makeRoot()
            try keyringCtl("check")
            try keyringCtl("private-bus")
            try startBus()
            try keyringCtl("start")
            // A signal that came during the last step, which did not wait.
            var pending = sigset_t()
            sigpending(&pending)
            if let signal = forwardedSignals.first(where: { sigismember(&pending, $0) == 1 }) { throw Self.interrupted(by: signal) }
            status = runCommand()
        } catch {
            report(error.message)
            status = error.status
        }
        tearDown()
        return status
    }

    // MARK: Setup

    private func makeRoot() throws(SandboxFailure) {
        let base = outer["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/keyring-sandbox.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw SandboxFailure(status: 73, message: "cannot create a directory in \(base): \(String(cString: strerror(errno)))")
        }
        root = String(cString: made)
        chmod(root, 0o700)  // mkdtemp's mode already; said for the reader
        let home = root + "/home"
        let dirs = [
            "HOME": home, "XDG_RUNTIME_DIR": root + "/run", "XDG_DATA_HOME": home + "/.local/share",
            "XDG_CONFIG_HOME": home + "/.config", "XDG_CACHE_HOME": home + "/.cache", "XDG_STATE_HOME": home + "/.local/state",
        ]
        var environment = outer
        for name in removedVariables { environment[name] = nil }
        for (name, dir) in dirs { environment[name] = dir }
        environment["KEYRING_SANDBOX_ROOT"] = root
        environment["KEYRING_SANDBOX_PROVIDER"] = options.provider.rawValue
        // The daemons never get the caller's G_DEBUG (fatal-criticals is for the code under
        // test: a critical inside a daemon would fail the app's test for a daemon bug).
        environment["G_DEBUG"] = nil
        self.environment = environment
        do {
            for dir in dirs.values.sorted() + [root + "/logs"] {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            }
        } catch {
            throw SandboxFailure(status: 73, message: "cannot create the sandbox's directories: \(error)")
        }
        chmod(home, 0o700)
        chmod(root + "/run", 0o700)
    }

    /// Runs `scripts/keyring-ctl COMMAND` for the provider, with the run's environment and the
    /// harness's variables its file reads; its output goes to logs/provider.log. Its 64 or 69 (a
    /// missing program, named with its Debian packages) ends the run with its message, any other
    /// failure with 70 and the log; a forwarded signal stops it, and the run.
    private func keyringCtl(_ command: String) throws(SandboxFailure) {
        var environment = environment
        environment["WITH_KEYRING_ROOT"] = root
        environment["WITH_KEYRING_PASSWORD"] = password
        environment["KEYRING_PROVIDER"] = options.provider.rawValue
        let log = openLog("provider.log")
        defer { close(log) }
        let pid: pid_t
        do {
            // bash by its path: the caller's PATH may lack it (`check` then says what is missing).
            pid = try spawn(
                lookUp("bash", in: outer["PATH"] ?? "") ?? "/bin/bash", [keyringCtlPath, command], environment: environment,
                io: ChildIO(stdout: log, stderr: log), newGroup: true)
        } catch {
            throw SandboxFailure(status: 71, message: "cannot run bash: \(String(cString: strerror(error.code)))")
        }
        while true {
            if let status = reapIfEnded(pid) {
                guard status != 0 else { return }
                let text = logText("provider.log")
                guard status != 64 && status != 69 else {
                    throw SandboxFailure(status: status, message: text.hasPrefix("keyring-ctl: ") ? String(text.dropFirst(13)) : text)
                }
                throw SandboxFailure(status: 70, message: "keyring-ctl \(command) failed for \(options.provider.rawValue): \(text)")
            }
            if let signal = pause(milliseconds: 50) {
                kill(-pid, SIGKILL)
                while waitpid(pid, nil, 0) < 0 && errno == EINTR {}
                throw Self.interrupted(by: signal)
            }
        }
    }

    /// A dbus-daemon on the configuration `keyring-ctl private-bus` wrote (private-bus.sh): its one
    /// service directory is the sandbox's, so nothing of the system's can be activated and no
    /// portal or desktop keyring can take org.freedesktop.secrets.
    private func startBus() throws(SandboxFailure) {
        var pipeFDs: [Int32] = [-1, -1]
        guard makePipe(&pipeFDs) else { throw SandboxFailure(status: 71, message: "pipe failed") }
        defer { close(pipeFDs[0]) }
        let log = openLog("dbus-daemon.log")
        defer { close(log) }
        do {
            busPID = try spawn(
                "dbus-daemon", ["--config-file=\(root)/bus/session.conf", "--nofork", "--print-address=1"],
                environment: environment, io: ChildIO(stdout: pipeFDs[1], stderr: log), newGroup: true, search: true)
        } catch {
            close(pipeFDs[1])
            throw SandboxFailure(status: 71, message: "cannot start dbus-daemon: \(String(cString: strerror(error.code)))")
        }
        close(pipeFDs[1])
        guard let address = readLine(pipeFDs[0], milliseconds: 30_000), !address.isEmpty else {
            throw SandboxFailure(status: 70, message: "dbus-daemon did not start: \(logText("dbus-daemon.log"))")
        }
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
    }

    /// A forwarded signal that came before the command started: the run stops with 128 + it.
    static func interrupted(by signal: Int32) -> SandboxFailure {
        SandboxFailure(status: 128 + signal, message: "interrupted by signal \(signal) before the command started")
    }

    // MARK: The command

    /// Runs the command in this process's group (a terminal's Ctrl-C reaches it directly) and
    /// forwards the signals this process gets, until it ends.
    private func runCommand() -> Int32 {
        var commandEnvironment = environment
        if let debug = outer["G_DEBUG"] { commandEnvironment["G_DEBUG"] = debug }
        let pid: pid_t
        do {
            pid = try spawn(
                options.command[0], Array(options.command.dropFirst()), environment: commandEnvironment, newGroup: false, search: true)
        } catch {
            report("cannot run \(options.command[0]): \(String(cString: strerror(error.code)))")
            return error.code == ENOENT ? 127 : 126
        }
        var set = waitedSignals()
        var info = siginfo_t()
        while true {
            if let status = reapIfEnded(pid) { return status }
            let signal = sigwaitinfo(&set, &info)
            // Only what was sent to this process alone (kill, sigqueue: si_code <= 0). A terminal's
            // Ctrl-C (SI_KERNEL) went to the whole foreground group and already reached the command.
            if forwardedSignals.contains(signal) && info.si_code <= 0 { kill(pid, signal) }
        }
    }

    // MARK: Teardown

    private func tearDown() {
        if busPID > 0 { stopGroup(busPID) }
        // The provider among them: it carries KEYRING_SANDBOX_ROOT too.
        stopStragglers()
        guard !root.isEmpty else { return }
        if options.keep {
            report("kept \(root)")
        } else {
            try? FileManager.default.removeItem(atPath: root)
        }
    }

    /// Stops every process still carrying this run's KEYRING_SANDBOX_ROOT (the provider, a daemon
    /// the command started, a service the bus activated), so nothing outlives the run, and reaps
    /// those that became this subreaper's children.
    private func stopStragglers() {
        guard !root.isEmpty else { return }
        let marker = Array("KEYRING_SANDBOX_ROOT=\(root)".utf8)
        for signal in [SIGTERM, SIGKILL] {
            let pids = stragglers(marker)
            if pids.isEmpty { break }
            for pid in pids { kill(pid, signal) }
            for _ in 0..<100 {
                if stragglers(marker).isEmpty { break }
                _ = pause(milliseconds: 20)
            }
        }
        // A process leaves /proc's environ before it can be reaped.
        var waited = 0
        while !reapEnded() && waited < 2000 {
            _ = pause(milliseconds: 20)
            waited += 20
        }
    }

    private func stragglers(_ marker: [UInt8]) -> [pid_t] {
        let me = getpid()
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { pid in
            guard pid != me, let data = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return false }
            // A zombie has an empty environ: only running processes count.
            return data.split(separator: 0).contains { Array($0) == marker }
        }
    }

    // MARK: Support

    private func openLog(_ name: String) -> Int32 {
        open(root + "/logs/" + name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
    }

    private func logText(_ name: String) -> String {
        let text = (try? String(contentsOfFile: root + "/logs/" + name, encoding: .utf8)) ?? ""
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? "(no output)" : String(trimmed.suffix(2000))
    }
}

/// One line to stderr: `keyring-sandbox: MESSAGE`.
func report(_ message: String) {
    FileHandle.standardError.write(Data("keyring-sandbox: \(message)\n".utf8))
}
