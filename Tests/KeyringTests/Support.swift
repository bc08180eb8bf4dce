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
        if level.rawValue & G_LOG_LEVEL_CRITICAL.rawValue != 0 {
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
    let output = try run(executable, arguments, input: input, environment: environment)
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
    return output.text.split(separator: "\n").filter { $0.hasPrefix("[/") }.count
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
