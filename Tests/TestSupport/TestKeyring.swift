// The throwaway keyring every keyring-touching suite runs against (scripts/with-keyring and its
// siblings), and its control (scripts/keyring-ctl): one home for what five Support.swift files repeated.
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The repository root: Tests/TestSupport/TestKeyring.swift, three levels up.
public let repoRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Fails the test unless it runs inside scripts/with-keyring (a private bus and a throwaway daemon
/// or keyring file, HOME inside it). It fails, never skips, so the user's own keyring is never used.
public func requireTestKeyring(sourceLocation: SourceLocation = #_sourceLocation) throws {
    let environment = ProcessInfo.processInfo.environment
    let root = environment["WITH_KEYRING_ROOT"] ?? ""
    try #require(
        !root.isEmpty,
        "This test talks to a real keyring; run it under scripts/with-keyring (WITH_KEYRING_ROOT is unset). It refuses to touch your own keyring.",
        sourceLocation: sourceLocation)
    let home = environment["HOME"] ?? ""
    try #require(
        home.hasPrefix(root),
        "HOME (\(home)) is not inside WITH_KEYRING_ROOT (\(root)); refusing to touch a real keyring.",
        sourceLocation: sourceLocation)
}

/// A fresh identifier no other test uses.
public func uniqueID(_ tag: String = "") -> String { "test.\(tag.isEmpty ? "" : tag + ".")\(UUID().uuidString)" }

/// A random secret that can be searched for in text.
public func uniqueSecret() -> String { "s3cr3t-\(UUID().uuidString)" }

/// True when `text` is a lowercase version-4 UUID, as the resolver's default policy makes.
public func isUUIDv4(_ text: String) -> Bool {
    text.range(of: "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", options: .regularExpression) != nil
}

// MARK: - scripts/keyring-ctl

/// The path of scripts/keyring-ctl.
public let keyringCtlPath = repoRoot.appendingPathComponent("scripts/keyring-ctl").path

/// `scripts/keyring-ctl ARGUMENT...` (lock, restart, pid, prompter on, ...) with extra `environment`;
/// its stdout, trimmed. Fails the test unless it exits 0.
@discardableResult
public func keyringCtl(
    _ arguments: [String], environment: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation
) throws -> String {
    let output = try ChildProcess.run(
        keyringCtlPath, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
    try #require(
        output.status == 0, "keyring-ctl \(arguments.joined(separator: " ")) failed (\(output.status)): \(output.stderr)",
        sourceLocation: sourceLocation)
    return output.text.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// `scripts/keyring-ctl COMMAND`; its stdout, trimmed. Fails the test unless it exits 0.
@discardableResult
public func keyringCtl(_ command: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
    try keyringCtl([command], sourceLocation: sourceLocation)
}

/// The test provider's pid (`keyring-ctl pid`).
public func testDaemonPID(sourceLocation: SourceLocation = #_sourceLocation) throws -> pid_t {
    let text = try keyringCtl("pid", sourceLocation: sourceLocation)
    return try #require(pid_t(text), "keyring-ctl pid printed \(text.debugDescription)", sourceLocation: sourceLocation)
}

// MARK: - No session bus

/// Runs `body` with the session bus hidden from this process (GLib's own connection stays
/// cached, so the library's pre-check is what sees "no bus" — as a process without a bus would).
public func withoutSessionBus<T>(_ body: () throws -> T) rethrows -> T {
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

// MARK: - A hung daemon

/// The test keyring's provider, or its bus, stopped by `scripts/keyring-ctl pause`: it keeps its
/// bus name and sockets and answers nothing, which is what a hung keyring is. ``resume()`` lets it
/// run again; `withPausedDaemon` resumes it on every way out.
public final class PausedDaemon: Sendable {
    /// What is paused.
    public enum Target: String, Sendable {
        /// The process that owns org.freedesktop.secrets.
        case service
        /// The session bus's dbus-daemon: every call on the bus waits.
        case bus
    }

    /// What this pause stopped.
    public let target: Target
    private let resumed = Atomic<Bool>(false)

    /// Pauses `target` (`keyring-ctl pause TARGET`).
    public init(_ target: Target = .service, sourceLocation: SourceLocation = #_sourceLocation) throws {
        self.target = target
        try keyringCtl(["pause", target.rawValue], sourceLocation: sourceLocation)
    }

    /// Lets it run again (`keyring-ctl resume TARGET`); later calls do nothing.
    public func resume(sourceLocation: SourceLocation = #_sourceLocation) {
        guard !resumed.exchange(true, ordering: .sequentiallyConsistent) else { return }
        do { try keyringCtl(["resume", target.rawValue], sourceLocation: sourceLocation) } catch {
            Issue.record("could not resume the paused \(target.rawValue): \(error)", sourceLocation: sourceLocation)
        }
    }
}

/// Runs `body` with `target` paused; resumes it afterwards unless `body` already did.
public func withPausedDaemon<T>(
    _ target: PausedDaemon.Target = .service, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (PausedDaemon) throws -> T
) throws -> T {
    let paused = try PausedDaemon(target, sourceLocation: sourceLocation)
    defer { paused.resume(sourceLocation: sourceLocation) }
    return try body(paused)
}

/// Runs `body` with `target` paused; resumes it afterwards unless `body` already did.
public func withPausedDaemon<T>(
    _ target: PausedDaemon.Target = .service, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (PausedDaemon) async throws -> T
) async throws -> T {
    let paused = try PausedDaemon(target, sourceLocation: sourceLocation)
    defer { paused.resume(sourceLocation: sourceLocation) }
    return try await body(paused)
}

// MARK: - Unlock prompts

/// Runs `body` with gcr's mock prompter answering the daemon's unlock prompts, on a keyring that
/// `body` locks itself; afterwards the daemon runs unlocked and without the mock again.
public func withMockPrompter(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) throws {
    try keyringCtl(["prompter", "on"], sourceLocation: sourceLocation)
    defer {
        do { try keyringCtl(["prompter", "off"]) } catch { Issue.record("could not stop the mock prompter: \(error)") }
    }
    try body()
}

/// Runs `body` with gcr's mock prompter answering the daemon's unlock prompts (see the synchronous form).
public func withMockPrompter(sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async throws {
    try keyringCtl(["prompter", "on"], sourceLocation: sourceLocation)
    defer {
        do { try keyringCtl(["prompter", "off"]) } catch { Issue.record("could not stop the mock prompter: \(error)") }
    }
    try await body()
}

/// Queues the mock's answer to the next unlock prompt: "ok" (the keyring's password), "cancel" or "hang".
public func promptAnswer(_ answer: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    try keyringCtl(["prompt-answer", answer], sourceLocation: sourceLocation)
}

/// What the mock saw: whether a queued answer is still unused, and prompts that came unexpected.
public func promptStatus(sourceLocation: SourceLocation = #_sourceLocation) throws -> (expecting: Bool, unexpected: Int) {
    let text = try keyringCtl(["prompt-status"], sourceLocation: sourceLocation)
    let fields = Dictionary(
        uniqueKeysWithValues: text.split(separator: " ").compactMap { field -> (String, String)? in
            let parts = field.split(separator: "=", maxSplits: 1)
            return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
        })
    return (fields["expecting"] == "yes", Int(fields["unexpected"] ?? "") ?? -1)
}

// MARK: - idtool

/// The idtool built next to the test bundle (any --scratch-path), else `.build/debug/idtool`;
/// `IDTOOL_BINARY` overrides both. Nil when none is built.
public let idtoolPath: String? = {
    let fm = FileManager.default
    if let path = ProcessInfo.processInfo.environment["IDTOOL_BINARY"], !path.isEmpty { return path }
    var candidates: [String] = []
    if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        // …/debug/KeyringIdentityPackageTests.xctest → …/debug/idtool
        candidates.append(URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("idtool").path)
    }
    if let bundle = Bundle.main.executableURL {
        candidates.append(bundle.deletingLastPathComponent().appendingPathComponent("idtool").path)
    }
    candidates.append(repoRoot.appendingPathComponent(".build/debug/idtool").path)
    return candidates.first { fm.isExecutableFile(atPath: $0) }
}()

/// ``idtoolPath``, or a failed test saying how to build it.
public func requireIdtool(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
    try #require(
        idtoolPath, "idtool was not built next to the tests; run `swift build --build-tests` first", sourceLocation: sourceLocation)
}

/// A debug build's `KEYRINGIDENTITY_TEST_PAUSE` in this process: the library stops at `stage` until
/// `go()`, so a test can act at that exact point (another process's unlock between a watch's
/// search and its lock read). The tests run one at a time, so one process-wide variable is enough.
public final class TestPausePoint: Sendable {
    /// Where the library writes `reached` and waits for `go`.
    public let directory: String

    /// Arms the pause at `stage` (a `TestPause.at` name in the library).
    public init(_ stage: String) throws {
        directory = NSTemporaryDirectory() + "keyring-pause-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        setenv("KEYRINGIDENTITY_TEST_PAUSE", stage + ":" + directory, 1)
    }

    /// Waits until the library stopped at the stage; false if it did not within `seconds`.
    public func reached(within seconds: Double = 30) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if FileManager.default.fileExists(atPath: directory + "/reached") { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    /// Disarms the pause and lets the library go on (also from every later pass of the stage).
    public func go() {
        unsetenv("KEYRINGIDENTITY_TEST_PAUSE")
        _ = FileManager.default.createFile(atPath: directory + "/go", contents: Data())
    }

    /// Lets the library go, and removes the directory once it has.
    public func end() {
        go()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
