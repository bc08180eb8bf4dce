// Helpers for the file backend tests. They need no bus and no daemon: every test gets its own
// keyring file in a temporary directory, reached through libsecret's own test variables
// (SECRET_FILE_TEST_PATH, SECRET_FILE_TEST_PASSWORD), exactly as libsecret's own tests do.
import Foundation
import Keyring
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway file keyring and a private home for the processes that use it.
struct FileKeyringSandbox {
    let root: URL
    let password: String

    init(password: String = "test-password-\(UUID().uuidString)") throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("file-keyring-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        self.password = password
    }

    /// Where the keyring file lives (its directory is created by libsecret on first use).
    var keyringPath: String { root.appendingPathComponent("data/keyrings/default.keyring").path }

    /// A child's whole environment: the file backend chosen by SECRET_BACKEND=file, libsecret's test
    /// variables, a private HOME and XDG directories, and no session bus at all.
    func environment(backend: String? = "file", password: String? = nil) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "IDTOOL_APP", "SECRET_BACKEND"] { environment[name] = nil }
        environment["SECRET_BACKEND"] = backend
        environment["SECRET_FILE_TEST_PATH"] = keyringPath
        environment["SECRET_FILE_TEST_PASSWORD"] = password ?? self.password
        environment["HOME"] = root.path
        environment["XDG_DATA_HOME"] = root.appendingPathComponent("data").path
        environment["XDG_STATE_HOME"] = root.appendingPathComponent("state").path
        environment["XDG_CONFIG_HOME"] = root.appendingPathComponent("config").path
        environment["G_DEBUG"] = "fatal-criticals"
        return environment
    }

    /// Points this process's libsecret at this keyring file (`Keyring` reads the variables at every
    /// operation: its kept snapshot of the file serves only the same path and password).
    func activate(password: String? = nil) {
        setenv("SECRET_FILE_TEST_PATH", keyringPath, 1)
        setenv("SECRET_FILE_TEST_PASSWORD", password ?? self.password, 1)
    }

    func remove() { try? FileManager.default.removeItem(at: root) }

    /// Runs `idtool` in this sandbox.
    func idtool(_ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil) throws -> ChildResult {
        let binary = try requireIdtool()
        return try ChildProcess.run(binary, arguments, stdin: stdin, environment: environment ?? self.environment())
    }

    /// Runs `secret-tool` in this sandbox: the same libsecret, so the same file keyring.
    func secretTool(_ arguments: [String], stdin: Data? = nil, password: String? = nil) throws -> ChildResult {
        try ChildProcess.run("/usr/bin/secret-tool", arguments, stdin: stdin ?? Data(), environment: environment(password: password))
    }
}
