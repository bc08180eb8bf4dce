// Shared helpers for the Keyring tests. Every keyring-touching test calls `requireTestKeyring()`
// first: outside scripts/with-keyring it FAILS (never skips), so the user's own keyring is never used.
import CLibSecret
import Foundation
import Keyring
import Synchronization
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The repository root: Tests/KeyringTests/Support.swift, three levels up.
let repoRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Fails the test unless it runs inside scripts/with-keyring (a private bus and throwaway daemon).
func requireTestKeyring(sourceLocation: SourceLocation = #_sourceLocation) throws {
    let root = getenv("WITH_KEYRING_ROOT").map { String(cString: $0) } ?? ""
    try #require(
        !root.isEmpty,
        "This test talks to a real gnome-keyring; run it under scripts/with-keyring (WITH_KEYRING_ROOT is unset). It refuses to touch your own keyring.",
        sourceLocation: sourceLocation)
    let home = getenv("HOME").map { String(cString: $0) } ?? ""
    try #require(
        home.hasPrefix(root),
        "HOME (\(home)) is not inside WITH_KEYRING_ROOT (\(root)); refusing to touch a real keyring.",
        sourceLocation: sourceLocation)
    installCriticalCounter()
}

/// A fresh identifier no other test uses.
func uniqueID(_ tag: String = "") -> String { "test.\(tag.isEmpty ? "" : tag + ".")\(UUID().uuidString)" }

/// A random secret that can be searched for in text.
func uniqueSecret() -> String { "s3cr3t-\(UUID().uuidString)" }

// MARK: - Errors

/// The KeyringError `body` throws; records an issue when it returns or throws something else.
func keyringError<T>(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T
) -> KeyringError? {
    do {
        let value = try body()
        Issue.record("expected a KeyringError, but the call returned \(value)", sourceLocation: sourceLocation)
    } catch let error as KeyringError {
        return error
    } catch {
        Issue.record("expected a KeyringError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

func keyringError<T>(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T
) async -> KeyringError? {
    do {
        let value = try await body()
        Issue.record("expected a KeyringError, but the call returned \(value)", sourceLocation: sourceLocation)
    } catch let error as KeyringError {
        return error
    } catch {
        Issue.record("expected a KeyringError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

extension KeyringError {
    var isInvalidArgument: Bool { if case .invalidArgument = self { true } else { false } }
    var isNoSessionBus: Bool { if case .noSessionBus = self { true } else { false } }
    var isLocked: Bool { if case .locked = self { true } else { false } }
    var isTimedOut: Bool { if case .timedOut = self { true } else { false } }
}

/// Asserts that no rendering of `error` contains `secret`.
func expectNoSecret(_ error: (any Error)?, _ secret: String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard let error else { return }
    for text in ["\(error)", String(describing: error), String(reflecting: error), error.localizedDescription] {
        #expect(!text.contains(secret), "error text leaks the secret: \(text)", sourceLocation: sourceLocation)
    }
}

// MARK: - GLib criticals

/// GLib criticals seen in this process (libsecret reports some bad input only this way).
let criticalCount = Atomic<Int>(0)

private let installOnce: Void = {
    _ = g_log_set_default_handler({ domain, level, message, _ in
        if level.rawValue & kr_log_level_critical().rawValue != 0 {
            criticalCount.add(1, ordering: .sequentiallyConsistent)
        }
        g_log_default_handler(domain, level, message, nil)
    }, nil)
}()

func installCriticalCounter() { installOnce }

// MARK: - Subprocesses

typealias Output = ChildResult

/// Runs `executable` with the test's environment (plus `environment`) and waits for it.
@discardableResult
func run(_ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String] = [:]) throws -> Output {
    try ChildProcess.run(
        executable, arguments, stdin: input ?? Data(),
        environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
}

/// Runs a command that must succeed; records its stderr otherwise.
@discardableResult
func mustRun(
    _ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String] = [:],
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> Output {
    var output = try run(executable, arguments, input: input, environment: environment)
    // kwalletd5 derives a wrong session key for about 1 in 256 DH sessions; outside clients
    // (secret-tool, python) cannot tell and fail once. A real interop failure fails every time.
    for _ in 0..<2 where output.status != 0 && TestProvider.isKWallet && (executable == secretTool || executable == python) {
        output = try run(executable, arguments, input: input, environment: environment)
    }
    try #require(output.status == 0, "\(executable) \(arguments) failed (\(output.status)): \(output.stderr)", sourceLocation: sourceLocation)
    return output
}

let secretTool = "/usr/bin/secret-tool"
let python = "/usr/bin/python3"   // Debian's, with python3-keyring and python3-secretstorage
let pythonEnvironment = ["PYTHON_KEYRING_BACKEND": "keyring.backends.SecretService.Keyring"]

/// scripts/keyring-ctl COMMAND (lock, restart, pid, ...).
@discardableResult
func keyringCtl(_ command: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
    let output = try mustRun(repoRoot.appendingPathComponent("scripts/keyring-ctl").path, [command], sourceLocation: sourceLocation)
    return output.text.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// scripts/keyring-ctl with arguments (`lock second`, `second-db`) and extra environment.
@discardableResult
func keyringCtl(
    _ arguments: [String], environment: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation
) throws -> String {
    let output = try mustRun(
        repoRoot.appendingPathComponent("scripts/keyring-ctl").path, arguments, environment: environment, sourceLocation: sourceLocation)
    return output.text.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// How many items `secret-tool search --all service ID` lists (an independent client's view).
func secretToolCount(service: String) throws -> Int {
    let output = try run(secretTool, ["search", "--all", "service", service])
    // One header line per item: its object path, or "[no path]" on libsecret's file backend.
    return output.text.split(separator: "\n").filter { $0.hasPrefix("[/") || $0 == "[no path]" }.count
}

/// Items with `service` = id as the lower-level Keyring sees them.
func items(service: String) throws -> [KeyringItem] {
    try Keyring.default.search(["service": service])
}

/// Locks the default collection; the returned closure restarts the daemon unlocked.
func lockKeyring(sourceLocation: SourceLocation = #_sourceLocation) throws {
    try keyringCtl("lock", sourceLocation: sourceLocation)
}

func restartKeyring() {
    do { try keyringCtl("restart") } catch { Issue.record("could not restart the test keyring: \(error)") }
}

/// The blocking status() (inside async functions the async overload would be chosen).
func blockingStatus(_ keyring: Keyring = .default) -> ServiceStatus { keyring.status() }

// MARK: - Unlock prompts

/// scripts/keyring-ctl with arguments (prompter on, prompt-answer ok, ...).
@discardableResult
func keyringCtl(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
    let output = try mustRun(repoRoot.appendingPathComponent("scripts/keyring-ctl").path, arguments, sourceLocation: sourceLocation)
    return output.text.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// The test provider's name (scripts/with-keyring --provider).
var testProvider: String { ProcessInfo.processInfo.environment["KEYRING_PROVIDER"] ?? "gnome-keyring" }

/// Only gnome-keyring can hand its unlock prompts to gcr's mock prompter (GNOME_KEYRING_TEST_PROMPTER).
let mockPrompterNote: Comment = "needs gnome-keyring: only it sends unlock prompts to gcr's mock prompter"

/// Runs `body` with gcr's mock prompter answering the daemon's unlock prompts, on a keyring
/// that `body` locks itself; afterwards the daemon runs unlocked and without the mock again.
func withMockPrompter(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) throws {
    try keyringCtl(["prompter", "on"], sourceLocation: sourceLocation)
    defer {
        do { try keyringCtl(["prompter", "off"]) } catch { Issue.record("could not stop the mock prompter: \(error)") }
    }
    try body()
}

func withMockPrompter(sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async throws {
    try keyringCtl(["prompter", "on"], sourceLocation: sourceLocation)
    defer {
        do { try keyringCtl(["prompter", "off"]) } catch { Issue.record("could not stop the mock prompter: \(error)") }
    }
    try await body()
}

/// Queues the mock's answer to the next unlock prompt: "ok" (the keyring's password), "cancel" or "hang".
func promptAnswer(_ answer: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    try keyringCtl(["prompt-answer", answer], sourceLocation: sourceLocation)
}

/// What the mock saw: whether a queued answer is still unused, and prompts that came unexpected.
func promptStatus(sourceLocation: SourceLocation = #_sourceLocation) throws -> (expecting: Bool, unexpected: Int) {
    let text = try keyringCtl(["prompt-status"], sourceLocation: sourceLocation)
    let fields = Dictionary(uniqueKeysWithValues: text.split(separator: " ").compactMap { field -> (String, String)? in
        let parts = field.split(separator: "=", maxSplits: 1)
        return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
    })
    return (fields["expecting"] == "yes", Int(fields["unexpected"] ?? "") ?? -1)
}
