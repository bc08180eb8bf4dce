// Helpers for the DeviceIdentity tests. Keyring-touching tests call `requireTestKeyring()`:
// outside scripts/with-keyring it fails (never skips), so the user's own keyring is never used.
import Foundation
import Keyring
import Testing
@testable import DeviceIdentity

#if canImport(Glibc)
import Glibc
#endif

let repoRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

func requireTestKeyring(sourceLocation: SourceLocation = #_sourceLocation) throws {
    let root = ProcessInfo.processInfo.environment["WITH_KEYRING_ROOT"] ?? ""
    try #require(
        !root.isEmpty,
        "This test talks to a real gnome-keyring; run it under scripts/with-keyring. It refuses to touch your own keyring.",
        sourceLocation: sourceLocation)
}

/// A unique app ID, a private backup/lock directory for it, and a resolver factory.
struct Fixture {
    let appID = "test.app.\(UUID().uuidString.lowercased())"
    let directory: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("di-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    var backupDirectory: String { directory + "/state/" + appID }
    var backupPath: String { backupDirectory + "/identifier" }

    func resolver(
        scope: IdentifierScope? = nil, policy: GenerationPolicy = .randomUUID, migrations: [MigrationSource] = [],
        keyring: Keyring? = Keyring(timeout: .seconds(5)), backup: Bool = true
    ) throws -> IdentifierResolver {
        try IdentifierResolver(
            scope: scope ?? .app(appID), policy: policy, migrations: migrations, keyring: keyring,
            backup: backup ? .directory(backupDirectory) : .none, lockDirectories: [directory + "/lock"])
    }

    /// The scope's identifier as an independent client (secret-tool) sees it in the keyring.
    func keyringValue(kind: String = "app", name: String? = nil) throws -> String? {
        let out = try run("/usr/bin/secret-tool", ["lookup", "identity-scope", kind, "identity-name", name ?? appID])
        return out.status == 0 ? out.text : nil
    }

    /// Deletes the scope's keyring item with an independent client.
    func deleteKeyringItem(kind: String = "app", name: String? = nil) throws {
        try run("/usr/bin/secret-tool", ["clear", "identity-scope", kind, "identity-name", name ?? appID])
    }
}

struct Output {
    var status: Int32
    var stdout: Data
    var stderr: String
    var text: String { String(decoding: stdout, as: UTF8.self) }
}

/// Runs a program to completion with posix_spawn and waitpid, capturing output through files.
/// Not Foundation's `Process`: its waitUntilExit can miss the exit of a script whose child
/// (a restarted daemon) lives on. The child gets an empty signal mask and default handlers,
/// since test threads block signals and a restarted daemon must still obey SIGTERM.
@discardableResult
func run(_ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String?] = [:]) throws -> Output {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("di-run-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let inPath = directory.appendingPathComponent("in").path
    let outPath = directory.appendingPathComponent("out").path
    let errPath = directory.appendingPathComponent("err").path
    try (input ?? Data()).write(to: URL(fileURLWithPath: inPath))
    let fds = [open(inPath, O_RDONLY | O_CLOEXEC), open(outPath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600),
               open(errPath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)]
    defer { for fd in fds where fd >= 0 { close(fd) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for (index, fd) in fds.enumerated() { posix_spawn_file_actions_adddup2(&actions, fd, Int32(index)) }

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t(), all = sigset_t()
    sigemptyset(&empty)
    sigfillset(&all)
    sigdelset(&all, SIGKILL)
    sigdelset(&all, SIGSTOP)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for pointer in argv + envp { free(pointer) } }
    var pid = pid_t()
    let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }
    let signal = status & 0x7F
    return Output(
        status: signal == 0 ? (status >> 8) & 0xFF : 128 + signal,
        stdout: try Data(contentsOf: URL(fileURLWithPath: outPath)),
        stderr: String(decoding: try Data(contentsOf: URL(fileURLWithPath: errPath)), as: UTF8.self))
}

/// Runs scripts/keyring-ctl inside the test session (lock, restart, kill, start, stop).
func keyringCtl(_ command: String) throws {
    let out = try run(repoRoot.appendingPathComponent("scripts/keyring-ctl").path, [command])
    #expect(out.status == 0, "keyring-ctl \(command) failed: \(out.stderr)")
}

/// Runs `body` with the session bus hidden from this process (GLib's own connection stays
/// cached, so the library's pre-check is what sees "no bus" — as a process without a bus would).
func withoutSessionBus<T>(_ body: () throws -> T) rethrows -> T {
    let address = getenv("DBUS_SESSION_BUS_ADDRESS").map { String(cString: $0) }
    let runtime = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) }
    let empty = FileManager.default.temporaryDirectory.appendingPathComponent("nobus-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
    unsetenv("DBUS_SESSION_BUS_ADDRESS")
    setenv("XDG_RUNTIME_DIR", empty, 1)
    defer {
        if let address { setenv("DBUS_SESSION_BUS_ADDRESS", address, 1) }
        if let runtime { setenv("XDG_RUNTIME_DIR", runtime, 1) } else { unsetenv("XDG_RUNTIME_DIR") }
    }
    return try body()
}

/// The IdentityError `body` throws; records an issue otherwise.
func identityError<T>(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T) -> IdentityError? {
    do {
        let value = try body()
        Issue.record("expected an IdentityError, got a result: \(value)", sourceLocation: sourceLocation)
    } catch let error as IdentityError {
        return error
    } catch {
        Issue.record("expected an IdentityError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

func isUUIDv4(_ text: String) -> Bool {
    text.range(of: "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", options: .regularExpression) != nil
}
