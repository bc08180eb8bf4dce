import Foundation
import TestSupport
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

    /// TestSupport's idtool.
    static let binary: URL? = idtoolPath.map(URL.init(fileURLWithPath:))

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

    /// Runs any program to completion (see TestSupport's ChildProcess for why not `Process`).
    static func runProgram(_ program: URL, _ arguments: [String], stdin: Data? = nil,
                           environment: [String: String]? = nil) throws -> Run {
        let result = try ChildProcess.run(program.path, arguments, stdin: stdin, environment: environment)
        return Run(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }

    /// `scripts/keyring-ctl COMMAND` against the test daemon.
    static func keyringCtl(_ command: String) throws -> Run {
        try runProgram(URL(fileURLWithPath: keyringCtlPath), [command])
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
