import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs the built `idtool` binary as a subprocess and collects what it did.
enum Idtool {
    struct Run {
        var status: Int32
        var stdout: Data
        var stderr: String
        var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        var stderrLines: [Substring] { stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast(stderr.hasSuffix("\n") ? 1 : 0).map { $0 } }
    }

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The idtool next to the test bundle (works with any --scratch-path), else `.build/debug/idtool`.
    /// `IDTOOL_BINARY` overrides both.
    static let binary: URL? = {
        let fm = FileManager.default
        if let path = ProcessInfo.processInfo.environment["IDTOOL_BINARY"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        var candidates: [URL] = []
        if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            // …/debug/KeyringIdentityPackageTests.xctest → …/debug/idtool
            candidates.append(URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("idtool"))
        }
        if let bundle = Bundle.main.executableURL {
            candidates.append(bundle.deletingLastPathComponent().appendingPathComponent("idtool"))
        }
        candidates.append(packageRoot.appendingPathComponent(".build/debug/idtool"))
        return candidates.first { fm.isExecutableFile(atPath: $0.path) }
    }()

    /// The environment the tests run in, with G_DEBUG=fatal-criticals so any GLib critical in
    /// idtool crashes it (and fails the test), and without IDTOOL_APP.
    static var baseEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["G_DEBUG"] = "fatal-criticals"
        environment["IDTOOL_APP"] = nil
        return environment
    }

    /// Runs idtool with `arguments`, feeding `stdin` (or /dev/null).
    static func run(_ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil,
                    sourceLocation: SourceLocation = #_sourceLocation) throws -> Run {
        let binary = try #require(binary, "idtool was not built next to the tests; run `swift build --build-tests` first",
                                  sourceLocation: sourceLocation)
        return try runProgram(binary, arguments, stdin: stdin, environment: environment ?? baseEnvironment)
    }

    /// Runs any program, with stdin from a file and stdout/stderr to files (so large data never
    /// deadlocks a pipe), and waits with waitpid.
    ///
    /// Not Foundation's `Process`: with it, `waitUntilExit` after `keyring-ctl restart` never
    /// returned (the restarted gnome-keyring-daemon outlives the script and the exit went
    /// unnoticed; the script stayed a zombie), so this spawns and reaps with waitpid itself.
    static func runProgram(_ program: URL, _ arguments: [String], stdin: Data? = nil,
                           environment: [String: String]? = nil) throws -> Run {
        let fm = FileManager.default
        let dir = fm.temporaryDirectory.appendingPathComponent("idtool-test-\(UUID().uuidString)")
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: dir) }
        let inURL = dir.appendingPathComponent("in"), outURL = dir.appendingPathComponent("out"), errURL = dir.appendingPathComponent("err")
        try (stdin ?? Data()).write(to: inURL)

        let inFD = open(stdin == nil ? "/dev/null" : inURL.path, O_RDONLY | O_CLOEXEC)
        let outFD = open(outURL.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let errFD = open(errURL.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { for fd in [inFD, outFD, errFD] where fd >= 0 { close(fd) } }
        guard inFD >= 0, outFD >= 0, errFD >= 0 else { throw SpawnError(what: "open", code: errno) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, inFD, 0)
        posix_spawn_file_actions_adddup2(&actions, outFD, 1)
        posix_spawn_file_actions_adddup2(&actions, errFD, 2)

        let argv = ([program.path] + arguments).map { strdup($0) } + [nil]
        let env = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + env { free(p) } }

        // Test threads (libdispatch workers) block most signals, and a spawned child inherits the
        // mask: a daemon started by `keyring-ctl restart` would then ignore the final SIGTERM.
        // Give the child an empty mask and default handlers.
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

        var pid = pid_t()
        let spawned = posix_spawn(&pid, program.path, &actions, &attributes, argv, env)
        guard spawned == 0 else { throw SpawnError(what: "posix_spawn \(program.lastPathComponent)", code: spawned) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw SpawnError(what: "waitpid", code: errno) }
        }
        let signal = status & 0x7F
        let code = signal == 0 ? (status >> 8) & 0xFF : 128 + signal
        return Run(status: code, stdout: try Data(contentsOf: outURL),
                   stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

    struct SpawnError: Error, CustomStringConvertible {
        var what: String
        var code: Int32
        var description: String { "\(what) failed: \(String(cString: strerror(code)))" }
    }

    /// `scripts/keyring-ctl COMMAND` against the test daemon.
    static func keyringCtl(_ command: String) throws -> Run {
        try runProgram(packageRoot.appendingPathComponent("scripts/keyring-ctl"), [command])
    }

    /// Fails the calling test unless it runs under scripts/with-keyring: these tests never skip quietly.
    static func requireTestKeyring(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let root = ProcessInfo.processInfo.environment["WITH_KEYRING_ROOT"] ?? ""
        try #require(
            !root.isEmpty,
            "this test needs the throwaway keyring: run it as `scripts/with-keyring swift test --no-parallel ...`",
            sourceLocation: sourceLocation)
    }

    /// A fresh identifier no other test uses.
    static func uniqueIdentifier(_ tag: String = #function) -> String {
        "idtool-test.\(tag.prefix { $0 != "(" }).\(UUID().uuidString)"
    }
}

extension Idtool.Run {
    /// A failure report: exactly one line, `idtool: …`, with none of `secrets` in it, and no trap or GLib noise.
    func expectOneLineError(hiding secrets: [String] = [], containing fragment: String? = nil,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(stderrLines.count == 1, "stderr is one line: \(stderr)", sourceLocation: sourceLocation)
        #expect(stderr.hasPrefix("idtool: "), "stderr: \(stderr)", sourceLocation: sourceLocation)
        if let fragment {
            #expect(stderr.contains(fragment), "stderr: \(stderr)", sourceLocation: sourceLocation)
        }
        expectClean(hiding: secrets, sourceLocation: sourceLocation)
    }

    /// No secret or identifier in stderr, and no sign of a crash.
    func expectClean(hiding secrets: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) {
        for secret in secrets where !secret.isEmpty {
            #expect(!stderr.contains(secret), "stderr leaks a stored value or identifier", sourceLocation: sourceLocation)
        }
        for noise in ["CRITICAL", "Fatal error", "Trace/breakpoint", "Stack dump", "WARNING **", "libsecret-"] {
            #expect(!stderr.contains(noise), "stderr has \(noise): \(stderr)", sourceLocation: sourceLocation)
        }
        #expect(status < 128, "idtool died from signal \(status - 128)", sourceLocation: sourceLocation)
    }
}
