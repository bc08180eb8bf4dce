// Shared helpers for the Keyring tests. Every keyring-touching test calls `requireTestKeyring()`
// first: outside scripts/with-keyring it FAILS (never skips), so the user's own keyring is never used.
import CLibSecret
import KeyringShim
import Foundation
import Keyring
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// TestSupport's check that this runs against the throwaway keyring, and the GLib critical counter.
func requireTestKeyring(sourceLocation: SourceLocation = #_sourceLocation) throws {
    try TestSupport.requireTestKeyring(sourceLocation: sourceLocation)
    installCriticalCounter()
}

// MARK: - Errors

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

/// How many items `secret-tool search --all service ID` lists (an independent client's view).
func secretToolCount(service: String) throws -> Int {
    let output = try run(secretTool, ["search", "--all", "service", service])
    // One header line per item: its object path, or "[no path]" on libsecret's file backend.
    return output.text.split(separator: "\n").filter { $0.hasPrefix("[/") || $0 == "[no path]" }.count
}

/// The content type the Secret Service reports for the item of `service`, as secretstorage (an
/// outside client) reads it. gnome-keyring keeps none: it reports every secret as `text/plain`.
func secretContentType(service: String) throws -> String {
    try mustRun(python, ["-c", """
        import sys, secretstorage
        conn = secretstorage.dbus_init()
        items = list(secretstorage.get_default_collection(conn).search_items({"service": sys.argv[1]}))
        print(items[0].get_secret_content_type(), end="")
        """, service]).text
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
