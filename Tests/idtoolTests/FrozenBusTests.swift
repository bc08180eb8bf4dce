import Foundation
import TestSupport
import Testing

/// Every command that takes `--timeout` ends by it when the session bus's dbus-daemon or the
/// keyring daemon is stopped (SIGSTOP: sockets open, nothing answered), with exit 75. A fresh
/// process connected to a frozen bus with no cancellable and asked it with fixed 2 s timeouts
/// outside the deadline: `item get` and `item set` were still running after 20 s.
///
/// The watchdog (two minutes) only turns a hang into a failure; no test asserts a time.
@Suite("Frozen bus or daemon: every command keeps its timeout", .serialized, .needs(.secretService))
struct FrozenBusTests {
    /// The commands with `--timeout`, each with a 2 s one, and what it reads on stdin.
    static func commands(_ id: String) -> [(arguments: [String], stdin: Data?)] {
        [
            (["get", "--app", id], nil),
            (["show", "--app", id], nil),
            (["reset", "--app", id], nil),
            (["item", "get", id], nil),
            (["item", "set", id], Data("frozen".utf8)),
            (["item", "reset", id], nil),
            (["item", "list", id], nil),
            (["lock"], nil),
            (["unlock", "--no-prompt"], nil),
        ].map { (arguments: $0.0 + ["--timeout", "2"], stdin: $0.1) }
    }

    @Test("each command ends with exit 75 and one line", arguments: [PausedDaemon.Target.bus, .service])
    func commandsEndByTheirTimeout(_ target: PausedDaemon.Target) throws {
        try requireTestKeyring()
        let binary = try requireIdtool()
        let id = Idtool.uniqueIdentifier("frozen")
        // Each command's own state directory: the identifier commands must not find a backup to serve.
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("frozen-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: state) }
        var environment = ChildProcess.clientEnvironment(binary, Idtool.baseEnvironment)
        environment["XDG_STATE_HOME"] = state.path
        try withPausedDaemon(target) { _ in
            for (arguments, stdin) in Self.commands(id) {
                let child = try ChildProcess(binary, arguments.map { Array($0.utf8) }, stdin: stdin, environment: environment)
                let (result, killed) = try child.wait(killingAfter: .seconds(120))
                let run = Idtool.Run(status: result.status, stdout: result.stdout, stderr: result.stderr)
                let command = "idtool \(arguments.joined(separator: " ")) with the \(target.rawValue) stopped"
                #expect(!killed, "\(command) still ran after two minutes: \(run.stderr)")
                #expect(run.status == 75, "\(command): exit \(run.status), stderr: \(run.stderr)")
                if !killed { run.expectOneLineError() }
            }
        }
    }
}
