import Foundation
import TestSupport
import Testing

/// Whether bubblewrap can make a PID namespace with its own /proc here (user namespaces allowed).
enum PIDNamespace {
    static let canMake: Bool =
        (try? ChildProcess.run("/usr/bin/bwrap", ["--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid", "/bin/true"]).status) == 0
}

/// idtool against a locked gnome-keyring whose unlock prompts go to gcr's mock prompter: it
/// prompts by default, and never with --no-prompt.
@Suite(
    "idtool unlocks on demand",
    .needs(.mockPrompter))
struct UnlockPromptCommandTests {
    static func newApp() -> String { "test.idtool-unlock.\(UUID().uuidString.lowercased())" }

    /// The app's backup file, removed so that only the keyring holds the identifier.
    static func removeBackup(app: String) throws {
        let state = ProcessInfo.processInfo.environment["XDG_STATE_HOME"]!
        try FileManager.default.removeItem(atPath: "\(state)/keyring-identity/app/\(app)/identifier")
    }

    @Test("an answered prompt: get (no backup), item get, item set, reset and item reset succeed on a locked keyring")
    func answered() throws {
        try requireTestKeyring()
        try withMockPrompter {
            let app = Self.newApp(), id = Idtool.uniqueIdentifier(), value = "v-\(UUID().uuidString)"
            let made = try Idtool.run(["get", "--app", app])
            try #require(made.status == 0, "\(made.stderr)")
            #expect(try Idtool.run(["item", "set", id], stdin: Data(value.utf8)).status == 0)
            try Self.removeBackup(app: app)

            try keyringCtl(["lock"])
            try keyringCtl(["prompt-answer", "ok"])
            let got = try Idtool.run(["get", "--app", app])
            #expect(got.status == 0, "\(got.stderr)")
            #expect(got.stdoutText == made.stdoutText)

            try keyringCtl(["lock"])
            try keyringCtl(["prompt-answer", "ok"])
            let item = try Idtool.run(["item", "get", id])
            #expect(item.status == 0, "\(item.stderr)")
            #expect(item.stdoutText == value)

            try keyringCtl(["lock"])
            try keyringCtl(["prompt-answer", "ok"])
            #expect(try Idtool.run(["item", "set", id], stdin: Data("new".utf8)).status == 0)
            #expect(try Idtool.run(["item", "get", id]).stdoutText == "new")

            try keyringCtl(["lock"])
            try keyringCtl(["prompt-answer", "ok"])
            #expect(try Idtool.run(["item", "reset", id]).status == 0)
            #expect(try Idtool.run(["item", "get", id]).status == 1)

            try keyringCtl(["lock"])
            try keyringCtl(["prompt-answer", "ok"])
            #expect(try Idtool.run(["reset", "--app", app]).status == 0)
            #expect(try keyringCtl(["prompt-status"]) == "expecting=no unexpected=0")
        }
    }

    @Test("a dismissed prompt: get (no backup) and item get exit 75 saying so, and generate nothing")
    func dismissed() throws {
        try requireTestKeyring()
        try withMockPrompter {
            let app = Self.newApp(), fresh = Self.newApp(), id = Idtool.uniqueIdentifier()
            let made = try Idtool.run(["get", "--app", app]).stdoutText
            #expect(try Idtool.run(["item", "set", id], stdin: Data("v".utf8)).status == 0)
            try Self.removeBackup(app: app)
            try keyringCtl(["lock"])

            for arguments in [["get", "--app", app], ["get", "--app", fresh], ["item", "get", id], ["reset", "--app", app]] {
                try keyringCtl(["prompt-answer", "cancel"])
                let run = try Idtool.run(arguments)
                #expect(run.status == 75, "\(arguments): \(run.stderr)")
                #expect(run.stdout.isEmpty)
                run.expectOneLineError(hiding: [made.trimmingCharacters(in: .newlines)], containing: "unlock was dismissed")
            }
            #expect(try keyringCtl(["prompt-status"]) == "expecting=no unexpected=0")

            // Nothing was generated, written or removed.
            try keyringCtl(["restart"])
            #expect(try Idtool.run(["get", "--app", app]).stdoutText == made)
            #expect(try Idtool.run(["show", "--app", fresh]).status == 1)
            #expect(try Idtool.run(["item", "get", id]).stdoutText == "v")
        }
    }

    @Test("--no-prompt never reaches the prompter: 75 at once, nothing generated")
    func noPrompt() throws {
        try requireTestKeyring()
        try withMockPrompter {
            let app = Self.newApp(), fresh = Self.newApp(), id = Idtool.uniqueIdentifier()
            let made = try Idtool.run(["get", "--app", app]).stdoutText
            #expect(try Idtool.run(["item", "set", id], stdin: Data("v".utf8)).status == 0)
            try Self.removeBackup(app: app)
            try keyringCtl(["lock"])
            try keyringCtl(["prompt-answer", "ok"])

            let commands: [([String], Data?)] = [
                (["get", "--app", app, "--no-prompt"], nil), (["get", "--app", fresh, "--no-prompt"], nil),
                (["show", "--app", app, "--no-prompt"], nil), (["reset", "--app", app, "--no-prompt"], nil),
                (["item", "get", id, "--no-prompt"], nil), (["item", "set", id, "--no-prompt"], Data("x".utf8)),
                (["item", "reset", id, "--no-prompt"], nil),
            ]
            for (arguments, input) in commands {
                let run = try Idtool.run(arguments, stdin: input)
                #expect(run.status == 75, "\(arguments): \(run.stderr)")
                run.expectOneLineError(hiding: [made.trimmingCharacters(in: .newlines)], containing: "locked")
            }
            // The queued answer is unused: no prompt reached the mock.
            #expect(try keyringCtl(["prompt-status"]) == "expecting=yes unexpected=0")

            try keyringCtl(["restart"])
            #expect(try Idtool.run(["get", "--app", app]).stdoutText == made)
            #expect(try Idtool.run(["show", "--app", fresh]).status == 1)
            #expect(try Idtool.run(["item", "get", id]).stdoutText == "v")
        }
    }

    @Test("a prompt nobody answers: --timeout ends the command with 75, saying so")
    func unanswered() throws {
        try requireTestKeyring()
        try withMockPrompter {
            let id = Idtool.uniqueIdentifier()
            #expect(try Idtool.run(["item", "set", id], stdin: Data("v".utf8)).status == 0)
            try keyringCtl(["lock"])
            try keyringCtl(["prompt-answer", "hang"])
            let run = try Idtool.run(["item", "get", id, "--timeout", "1"])
            #expect(run.status == 75, "\(run.stderr)")
            #expect(run.stdout.isEmpty)
            run.expectOneLineError(containing: "nobody answered the unlock dialog")
        }
    }

    /// Runs idtool in a PID namespace with its own /proc, as in Flatpak or bubblewrap: the
    /// provider's process cannot be seen there, only what the bus says.
    static func runInPIDNamespace(_ arguments: [String]) throws -> Idtool.Run {
        let binary = try #require(Idtool.binary, "idtool was not built next to the tests; run `swift build --build-tests` first")
        return try Idtool.runProgram(
            URL(fileURLWithPath: "/usr/bin/bwrap"), ["--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid", binary.path] + arguments,
            environment: Idtool.baseEnvironment)
    }

    @Test(
        "inside a PID namespace gnome-keyring is still known: a prompt nobody answers is left open, and the daemon lives on",
        .enabled(if: PIDNamespace.canMake, "needs bubblewrap able to make a PID namespace with its own /proc (scripts/bootstrap installs it)"))
    func unansweredInPIDNamespace() throws {
        try requireTestKeyring()
        // The namespace hides the daemon's process: its name comes from the bus alone.
        let doctor = try Self.runInPIDNamespace(["doctor"])
        #expect(doctor.stdoutText.contains("provided by gnome-keyring-daemon"), "\(doctor.stdoutText) \(doctor.stderr)")
        try withMockPrompter {
            let id = Idtool.uniqueIdentifier()
            #expect(try Idtool.run(["item", "set", id], stdin: Data("v".utf8)).status == 0)
            try keyringCtl(["lock"])
            try keyringCtl(["prompt-answer", "hang"])
            let daemon = try keyringCtl(["pid"])
            let run = try Self.runInPIDNamespace(["item", "get", id, "--timeout", "1"])
            #expect(run.status == 75, "\(run.stderr)")
            run.expectOneLineError(containing: "nobody answered the unlock dialog")
            // A Dismiss would have aborted gnome-keyring 42 (gkd-secret-unlock.c): a new daemon, or none.
            #expect(try keyringCtl(["pid"]) == daemon)
        }
    }
}
