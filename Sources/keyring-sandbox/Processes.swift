// Starting, signalling and reaping the sandbox's children, with posix_spawn and waitpid (not
// Foundation's Process, which waits on an inherited descriptor that a daemon keeps open).
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The signals the sandbox forwards to the command; blocked in every thread of this process and
/// taken with sigtimedwait, so no handler runs and none is ever missed. One this process started
/// with ignored (`nohup`, a shell's background job) stays ignored, here and in the command, as it
/// would be without the sandbox. Read at the first use, before anything changes a disposition.
let forwardedSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT].filter { !startedIgnored($0) }

private func startedIgnored(_ signal: Int32) -> Bool {
    var current = sigaction()
    guard sigaction(signal, nil, &current) == 0 else { return false }
    return unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
}

/// The set the main loop waits on: the forwarded signals and SIGCHLD.
func waitedSignals() -> sigset_t {
    var set = sigset_t()
    sigemptyset(&set)
    for signal in forwardedSignals + [SIGCHLD] { sigaddset(&set, signal) }
    return set
}

/// Blocks the waited signals before any thread exists; children get an empty mask back.
func blockWaitedSignals() {
    var set = waitedSignals()
    pthread_sigmask(SIG_BLOCK, &set, nil)
}

/// Waits up to `milliseconds` for a signal; returns a forwarded signal that arrived, else nil
/// (SIGCHLD or the time running out).
func pause(milliseconds: Int) -> Int32? {
    var set = waitedSignals()
    var timeout = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
    let signal = sigtimedwait(&set, nil, &timeout)
    return forwardedSignals.contains(signal) ? signal : nil
}

/// A child that failed to start.
struct SpawnError: Error {
    var program: String
    var code: Int32
}

/// What to connect a child's standard descriptors to.
struct ChildIO {
    var stdin: Int32 = -1  // -1: /dev/null
    var stdout: Int32 = -1  // -1: inherit
    var stderr: Int32 = -1  // -1: inherit
}

/// Starts `program` (an absolute path, or a name looked up in this process's PATH when `search`).
/// - Parameters:
///   - newGroup: puts the child in a process group of its own, so that a terminal's Ctrl-C reaches
///     only the command, and the sandbox stops its daemons itself, after the command.
/// - Returns: the child's pid.
func spawn(
    _ program: String, _ arguments: [String], environment: [String: String], io: ChildIO = ChildIO(), newGroup: Bool,
    search: Bool = false
) throws(SpawnError) -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if io.stdin >= 0 {
        posix_spawn_file_actions_adddup2(&actions, io.stdin, 0)
    } else {
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    }
    if io.stdout >= 0 { posix_spawn_file_actions_adddup2(&actions, io.stdout, 1) }
    if io.stderr >= 0 { posix_spawn_file_actions_adddup2(&actions, io.stderr, 2) }

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    var defaults = sigset_t()
    sigemptyset(&none)
    sigemptyset(&defaults)
    for signal in forwardedSignals + [SIGCHLD, SIGPIPE] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
    if newGroup {
        flags |= POSIX_SPAWN_SETPGROUP
        posix_spawnattr_setpgroup(&attributes, 0)
    }
    posix_spawnattr_setflags(&attributes, Int16(flags))

    let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
    let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for pointer in argv + envp { free(pointer) } }
    var pid = pid_t()
    let result =
        search
        ? posix_spawnp(&pid, program, &actions, &attributes, argv, envp)
        : posix_spawn(&pid, program, &actions, &attributes, argv, envp)
    guard result == 0 else { throw SpawnError(program: program, code: result) }
    return pid
}

/// The exit status of a reaped child: its code, or 128 + the signal that killed it.
func exitStatus(_ status: Int32) -> Int32 {
    let signal = status & 0x7F
    return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
}

/// Makes the sandbox the parent of the daemons its children detach (gnome-keyring --daemonize,
/// keyring-ctl's setsid): it reaps them, where a container's init may never reap a stopped one.
/// prctl is variadic in C, which Swift cannot call; its arguments are an int and unsigned longs.
func becomeSubreaper() {
    typealias Prctl = @convention(c) (Int32, UInt) -> Int32
    let setChildSubreaper: Int32 = 36  // PR_SET_CHILD_SUBREAPER, from linux/prctl.h (not imported)
    guard let prctl = dlsym(nil, "prctl") else { return }
    _ = unsafeBitCast(prctl, to: Prctl.self)(setChildSubreaper, 1)
}

/// Exit statuses of reaped children not asked for yet; the main thread's alone.
nonisolated(unsafe) private var ended: [pid_t: Int32] = [:]

/// Reaps every child that has ended, keeping its status; true when no child is left.
@discardableResult
func reapEnded() -> Bool {
    var status: Int32 = 0
    while true {
        let child = waitpid(-1, &status, WNOHANG)
        guard child > 0 else { return child < 0 && errno == ECHILD }
        ended[child] = exitStatus(status)
    }
}

/// Reaps the children that have ended (adopted daemons too: keyring-ctl waits until a stopped one
/// is gone); returns `pid`'s exit status once it has ended, else nil.
func reapIfEnded(_ pid: pid_t) -> Int32? {
    reapEnded()
    return ended.removeValue(forKey: pid)
}

/// Stops a daemon the sandbox started in its own process group: SIGTERM to the group, then
/// SIGKILL after `grace` milliseconds, and reaps it.
func stopGroup(_ pid: pid_t, grace: Int = 5000) {
    kill(-pid, SIGTERM)
    var waited = 0
    while reapIfEnded(pid) == nil {
        if waited >= grace {
            kill(-pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            break
        }
        _ = pause(milliseconds: 20)
        waited += 20
    }
    // Anything else left in its group (a service the bus activated).
    kill(-pid, SIGKILL)
}

/// The absolute path of `name` in `path` (a PATH value), if an executable file is there.
func lookUp(_ name: String, in path: String) -> String? {
    for directory in path.split(separator: ":") where !directory.isEmpty {
        let candidate = "\(directory)/\(name)"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}

/// A pipe whose ends are closed on exec (posix_spawn's dup2 gives a child the end it needs).
func makePipe(_ fds: inout [Int32]) -> Bool {
    guard pipe(&fds) == 0 else { return false }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    return true
}

/// Reads one line from `fd` (without the newline), waiting up to `milliseconds`; nil on EOF or time-out.
func readLine(_ fd: Int32, milliseconds: Int32) -> String? {
    var bytes: [UInt8] = []
    var byte: UInt8 = 0
    while true {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, milliseconds)
        if ready < 0 && errno == EINTR { continue }
        guard ready > 0 else { return nil }
        let count = read(fd, &byte, 1)
        if count < 0 && errno == EINTR { continue }
        guard count == 1 else { return nil }
        if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
        bytes.append(byte)
    }
}
