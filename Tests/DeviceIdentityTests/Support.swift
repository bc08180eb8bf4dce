// Helpers for the DeviceIdentity tests. Keyring-touching tests call `requireTestKeyring()`:
// outside scripts/with-keyring it fails (never skips), so the user's own keyring is never used.
import Foundation
import Keyring
import TestSupport
import Testing
@testable import DeviceIdentity

#if canImport(Glibc)
import Glibc
#endif

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
    /// The "a Secret Service served this user" marker of a resolver with this backup directory.
    var keyringSeenMarker: String { backupDirectory + "/keyring-seen" }
    /// Makes this fixture look like a user no keyring ever served (an SSH box, a container).
    func forgetKeyring() { unlink(keyringSeenMarker) }

    func resolver(
        scope: IdentifierScope? = nil, policy: GenerationPolicy = .randomUUID, migrations: [MigrationSource] = [],
        keyring: Keyring? = Keyring(timeout: .seconds(25)), backup: Bool = true
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

typealias Output = ChildResult

/// Runs a program to completion with the test's environment, changed by `environment`
/// (a nil value removes a variable).
@discardableResult
func run(_ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String?] = [:]) throws -> Output {
    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    return try ChildProcess.run(executable, arguments, stdin: input ?? Data(), environment: env)
}

/// Why a test that takes the keyring away by hiding the session bus is off under libsecret's
/// file backend (scripts/test's SECRET_BACKEND=file run): that backend needs no bus, so the
/// keyring stays reachable and the test's premise does not hold.
let hidesTheKeyringByHidingTheBus: Comment =
    "hides the session bus to take the keyring away; libsecret's file backend needs no bus"

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
