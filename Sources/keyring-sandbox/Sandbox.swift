// One run: the temporary root, the private bus, the provider, the command, and the cleanup.
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Why a run stopped before the command ran, with its exit status.
struct SandboxFailure: Error {
    var status: Int32
    var message: String
}

/// A program the sandbox needs and the Debian package that has it.
private struct Requirement {
    var program: String
    var package: String
}

/// The variables never passed on: the user's session (bus, keyring agent, display), libsecret's
/// test switches, and the project's own harness (scripts/with-keyring), when runs are nested.
private let removedVariables = [
    "DBUS_SESSION_BUS_ADDRESS", "DBUS_STARTER_ADDRESS", "DBUS_STARTER_BUS_TYPE", "DISPLAY", "WAYLAND_DISPLAY",
    "GNOME_KEYRING_CONTROL", "SSH_AUTH_SOCK", "GNOME_KEYRING_TEST_PROMPTER", "SECRET_BACKEND", "SECRET_FILE_TEST_PATH",
    "SECRET_FILE_TEST_PASSWORD", "WITH_KEYRING_ROOT", "WITH_KEYRING_PASSWORD", "WITH_KEYRING_PROMPTER", "KEYRING_CLIENT_G_DEBUG",
    "KEYRING_PROVIDER", "KEYRING_SANDBOX_ROOT", "KEYRING_SANDBOX_PROVIDER",
]

/// A throwaway keyring session: created by `run`, gone when it returns (unless `keep`).
final class Sandbox {
    private let options: Options
    private let outer: [String: String]
    private(set) var root = ""
    private(set) var environment: [String: String] = [:]
    private var busPID: pid_t = 0
    var providerPID: pid_t = 0
    /// The provider's log file, in ROOT/logs.
    var providerLog = "provider.log"
    /// The programs' absolute paths, found in the caller's PATH by `checkPrograms`.
    private(set) var programs: [String: String] = [:]

    init(options: Options, environment: [String: String]) {
        self.options = options
        self.outer = environment
    }

    /// Sets up, runs the command, tears down; returns the exit status.
    func run() -> Int32 {
        var status: Int32
        do throws(SandboxFailure) {
            try checkPrograms()
            try makeRoot()
            try startBus()
            try startProvider()
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

    private func checkPrograms() throws(SandboxFailure) {
        var needed = [Requirement(program: "dbus-daemon", package: "dbus-daemon"), Requirement(program: "dbus-send", package: "dbus-bin")]
        switch options.provider {
        case .gnomeKeyring: needed.append(Requirement(program: "gnome-keyring-daemon", package: "gnome-keyring"))
        case .keepassxc:
            needed += ["keepassxc", "keepassxc-cli"].map { Requirement(program: $0, package: "keepassxc") }
        case .kwallet:
            // kwalletd6 (KDE Frameworks 6, Debian 13) or kwalletd5 (Frameworks 5, Debian 12), whichever is there.
            let daemon = ["kwalletd6", "kwalletd5"].first { lookUp($0, in: outer["PATH"] ?? "") != nil }
            needed.append(
                Requirement(
                    program: daemon ?? "kwalletd6",
                    package: "kwallet6 libqca-qt6-plugins (Debian 12: libkf5wallet-bin libqca-qt5-2-plugins)"))
            needed.append(Requirement(program: "python3", package: "python3"))
        }
        let path = outer["PATH"] ?? "/usr/bin:/bin"
        for requirement in needed { programs[requirement.program] = lookUp(requirement.program, in: path) }
        let missing = needed.filter { programs[$0.program] == nil }
        guard missing.isEmpty else {
            let names = missing.map(\.program).joined(separator: ", ")
            let packages = missing.map(\.package).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }.joined(separator: " ")
            throw SandboxFailure(
                status: 69,
                message: "\(names) not found in PATH; install the Debian packages: sudo apt-get install \(packages)"
                    + " (and libsecret-tools for secret-tool)")
        }
    }

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
            for dir in dirs.values.sorted() + [root + "/bus/services", root + "/logs"] {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            }
        } catch {
            throw SandboxFailure(status: 73, message: "cannot create the sandbox's directories: \(error)")
        }
        chmod(home, 0o700)
        chmod(root + "/run", 0o700)
    }

    /// A dbus-daemon with one service directory, the sandbox's own (empty for gnome-keyring, which
    /// the sandbox starts itself): nothing of the system's can be activated, so no portal or
    /// desktop keyring can take org.freedesktop.secrets.
    private func startBus() throws(SandboxFailure) {
        let socket = root + "/bus/socket"
        // sun_path holds 108 bytes; a long TMPDIR falls back to an abstract socket.
        let listen = socket.utf8.count < 100 ? "unix:path=\(socket)" : "unix:tmpdir=/tmp"
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <keep_umask/>
              <listen>\(listen)</listen>
              <auth>EXTERNAL</auth>
              <servicedir>\(root)/bus/services</servicedir>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
              <limit name="max_incoming_bytes">1000000000</limit>
              <limit name="max_outgoing_bytes">1000000000</limit>
              <limit name="max_message_size">1000000000</limit>
              <limit name="service_start_timeout">120000</limit>
              <limit name="max_completed_connections">100000</limit>
              <limit name="max_connections_per_user">100000</limit>
            </busconfig>
            """
        let configPath = root + "/bus/session.conf"
        do { try config.write(toFile: configPath, atomically: true, encoding: .utf8) } catch {
            throw SandboxFailure(status: 73, message: "cannot write \(configPath): \(error)")
        }
        var pipeFDs: [Int32] = [-1, -1]
        guard makePipe(&pipeFDs) else { throw SandboxFailure(status: 71, message: "pipe failed") }
        defer { close(pipeFDs[0]) }
        let log = openLog("dbus-daemon.log")
        defer { close(log) }
        do {
            busPID = try spawn(
                programs["dbus-daemon", default: "dbus-daemon"], ["--config-file=\(configPath)", "--nofork", "--print-address=1"],
                environment: environment, io: ChildIO(stdout: pipeFDs[1], stderr: log), newGroup: true)
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

    private func startProvider() throws(SandboxFailure) {
        switch options.provider {
        case .gnomeKeyring: try startGnomeKeyring()
        case .keepassxc: try startKeePassXC()
        case .kwallet: try startKWallet()
        }
    }

    private func startGnomeKeyring() throws(SandboxFailure) {
        // gnome-keyring-daemon --unlock reads the login keyring's password from stdin (no newline:
        // it would be part of the password) and creates the keyring unlocked; --foreground keeps
        // it this process's child, so its pid is known and it is reaped.
        providerLog = "gnome-keyring.log"
        providerPID = try start(
            "gnome-keyring-daemon", ["--foreground", "--unlock", "--components=secrets"], environment: environment, stdin: password,
            log: providerLog)
        try waitUntil("gnome-keyring-daemon takes org.freedesktop.secrets") { hasOwner("org.freedesktop.secrets") }
    }

    /// Starts `program` (a name `checkPrograms` found) in a process group of its own, with `stdin`
    /// written to it and its output appended to `log`.
    func start(_ program: String, _ arguments: [String], environment: [String: String], stdin: String?, log: String) throws(SandboxFailure)
        -> pid_t
    {
        var pipeFDs: [Int32] = [-1, -1]
        guard makePipe(&pipeFDs) else { throw SandboxFailure(status: 71, message: "pipe failed") }
        let logFD = openLog(log)
        defer { close(logFD) }
        let pid: pid_t
        do {
            pid = try spawn(
                programs[program, default: program], arguments, environment: environment,
                io: ChildIO(stdin: pipeFDs[0], stdout: logFD, stderr: logFD), newGroup: true)
        } catch {
            close(pipeFDs[0])
            close(pipeFDs[1])
            throw SandboxFailure(status: 71, message: "cannot start \(program): \(String(cString: strerror(error.code)))")
        }
        close(pipeFDs[0])
        if let stdin { writeAll(pipeFDs[1], Array(stdin.utf8)) }
        close(pipeFDs[1])
        return pid
    }

    /// Waits for `pid` to end (nothing is waited for in between: it is a short helper).
    func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return exitStatus(status)
    }

    /// `dbus-send --print-reply ARGUMENTS` on the sandbox's bus: its status and its reply.
    func dbusSend(_ arguments: [String]) -> (status: Int32, reply: String) {
        capture("dbus-send", ["--session", "--print-reply", "--reply-timeout=5000"] + arguments)
    }

    /// Runs a short helper (a name `checkPrograms` found) to its end: its status and its stdout.
    func capture(_ program: String, _ arguments: [String]) -> (status: Int32, reply: String) {
        let replyPath = root + "/logs/reply"
        let fd = open(replyPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { close(fd) }
        guard
            let pid = try? spawn(
                programs[program, default: program], arguments, environment: environment, io: ChildIO(stdout: fd, stderr: devNull),
                newGroup: true)
        else { return (127, "") }
        let status = wait(pid)
        return (status, (try? String(contentsOfFile: replyPath, encoding: .utf8)) ?? "")
    }

    /// Whether `name` has an owner on the sandbox's bus.
    func hasOwner(_ name: String) -> Bool {
        let answer = dbusSend([
            "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", "string:\(name)",
        ])
        return answer.status == 0 && answer.reply.contains("boolean true")
    }

    /// Polls `condition` every 50 ms for up to 60 s. The provider's exit ends the wait with its
    /// log; a forwarded signal ends it too (the run then stops with 128 + that signal).
    func waitUntil(_ what: String, _ condition: () -> Bool) throws(SandboxFailure) {
        for _ in 0..<1200 {
            if condition() { return }
            if let status = reapIfEnded(providerPID) {
                providerPID = 0
                throw SandboxFailure(status: 70, message: "the provider exited with status \(status): \(logText(providerLog))")
            }
            if let signal = pause(milliseconds: 50) { throw Self.interrupted(by: signal) }
        }
        throw SandboxFailure(status: 70, message: "timed out waiting until \(what): \(logText(providerLog))")
    }

    /// A forwarded signal that came before the command started: the run stops with 128 + it.
    static func interrupted(by signal: Int32) -> SandboxFailure {
        SandboxFailure(status: 128 + signal, message: "interrupted by signal \(signal) before the command started")
    }

    /// The throwaway keyring's password: random, so that nothing can guess it.
    lazy var password: String = Self.makePassword()

    private static func makePassword() -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        let fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            _ = read(fd, &bytes, bytes.count)
            close(fd)
        }
        return "throwaway-" + bytes.map { String($0, radix: 16) }.joined()
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
        // KeePassXC answers SIGTERM with a "Save changes?" dialog once the database changed, which
        // nobody answers: its database is thrown away, so it gets SIGKILL at once.
        if providerPID > 0 { stopGroup(providerPID, grace: options.provider == .keepassxc ? 0 : 5000) }
        if busPID > 0 { stopGroup(busPID) }
        stopStragglers()
        guard !root.isEmpty else { return }
        if options.keep {
            report("kept \(root)")
        } else {
            try? FileManager.default.removeItem(atPath: root)
        }
    }

    /// Stops every process still carrying this run's KEYRING_SANDBOX_ROOT (a daemon the command
    /// started, a service the bus activated), so nothing outlives the run.
    private func stopStragglers() {
        guard !root.isEmpty else { return }
        let marker = Array("KEYRING_SANDBOX_ROOT=\(root)".utf8)
        for signal in [SIGTERM, SIGKILL] {
            let pids = stragglers(marker)
            if pids.isEmpty { return }
            for pid in pids { kill(pid, signal) }
            for _ in 0..<100 {
                if stragglers(marker).isEmpty { break }
                _ = pause(milliseconds: 20)
            }
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

    var devNull: Int32 { Self.nullFD }
    private static let nullFD = open("/dev/null", O_WRONLY | O_CLOEXEC)

    func openLog(_ name: String) -> Int32 {
        open(root + "/logs/" + name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
    }

    func logText(_ name: String) -> String {
        let text = (try? String(contentsOfFile: root + "/logs/" + name, encoding: .utf8)) ?? ""
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? "(no output)" : String(trimmed.suffix(2000))
    }
}

/// One line to stderr: `keyring-sandbox: MESSAGE`.
func report(_ message: String) {
    FileHandle.standardError.write(Data("keyring-sandbox: \(message)\n".utf8))
}
