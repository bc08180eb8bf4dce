import Foundation
import Keyring
import TestSupport
import Testing

/// `idtool lock` and `idtool unlock` against the real providers. gnome-keyring's unlock prompts go
/// to gcr's mock prompter; KWallet's complete without a dialog (the harness's empty-password
/// wallet); KeePassXC's is its own dialog, which nobody answers headless; the file backend has no
/// locked state.
@Suite("idtool lock and unlock", .serialized)
struct LockCommandTests {
    static var usesFileBackend: Bool { ProcessInfo.processInfo.environment["SECRET_BACKEND"] == "file" }

    @Test("lock, then unlock through the answered prompt; --no-prompt exits 75 without prompting",
          .needs(.mockPrompter))
    func lockAndUnlockGnomeKeyring() throws {
        try requireTestKeyring()
        try withMockPrompter {
            let locked = try Idtool.run(["lock"])
            #expect(locked.status == 0, "\(locked.stderr)")
            #expect(locked.stdout.isEmpty)
            #expect(try Keyring.default.isLocked())
            #expect(try Idtool.run(["lock", "--timeout", "25"]).status == 0, "locking a locked keyring succeeds")

            try keyringCtl(["prompt-answer", "ok"])
            let refused = try Idtool.run(["unlock", "--no-prompt"])
            #expect(refused.status == 75)
            refused.expectOneLineError(containing: "locked")
            #expect(try keyringCtl(["prompt-status"]) == "expecting=yes unexpected=0", "no prompt reached the mock")

            let unlocked = try Idtool.run(["unlock"])
            #expect(unlocked.status == 0, "\(unlocked.stderr)")
            #expect(try !Keyring.default.isLocked())
            #expect(try Idtool.run(["unlock"]).status == 0, "unlocking an unlocked keyring succeeds")
            #expect(try keyringCtl(["prompt-status"]) == "expecting=no unexpected=0")

            try keyringCtl(["lock"])
            try keyringCtl(["prompt-answer", "cancel"])
            let dismissed = try Idtool.run(["unlock"])
            #expect(dismissed.status == 75)
            dismissed.expectOneLineError(containing: "unlock was dismissed")

            try keyringCtl(["prompt-answer", "hang"])
            let unanswered = try Idtool.run(["unlock", "--timeout", "10"])
            #expect(unanswered.status == 75)
            unanswered.expectOneLineError(containing: "nobody answered the unlock dialog")
        }
    }

    @Test("KWallet and KeePassXC: lock locks; unlock succeeds (KWallet) or its dialog goes unanswered (KeePassXC)",
          .enabled(if: TestProvider.unansweredUnlock != .dismissed && !usesFileBackend, "KWallet and KeePassXC"))
    func lockAndUnlockOtherProviders() throws {
        try requireTestKeyring()
        // KeePassXC refuses to lock again after an unanswered unlock dialog until it restarts (LockStateTests).
        defer { _ = try? keyringCtl([TestProvider.unansweredUnlock == .unanswered ? "restart" : "unlock"]) }
        let locked = try Idtool.run(["lock"])
        #expect(locked.status == 0, "\(locked.stderr)")
        #expect(try Keyring.default.isLocked())
        #expect(try Idtool.run(["unlock", "--no-prompt"]).status == 75)
        let unlocked = try Idtool.run(["unlock", "--timeout", "10"])
        if TestProvider.unansweredUnlock == .completes {
            #expect(unlocked.status == 0, "\(unlocked.stderr)")
            #expect(try !Keyring.default.isLocked())
        } else {
            #expect(unlocked.status == 75)
            unlocked.expectOneLineError(containing: "nobody answered the unlock dialog")
        }
    }

    @Test("the file backend: lock exits 69 saying it has no locked state; unlock succeeds",
          .enabled(if: usesFileBackend, "runs with SECRET_BACKEND=file"))
    func fileBackend() throws {
        let locked = try Idtool.run(["lock"])
        #expect(locked.status == 69)
        locked.expectOneLineError(containing: "no locked state")
        #expect(try Idtool.run(["unlock"]).status == 0)
    }

    @Test("lock and unlock are in --help and reject stray arguments")
    func usage() throws {
        let help = try Idtool.run(["--help"])
        #expect(help.stdoutText.contains("\n  idtool lock ") && help.stdoutText.contains("\n  idtool unlock "))
        #expect(try Idtool.run(["unlock", "--help"]).stdoutText.contains("--no-prompt"))
        #expect(try Idtool.run(["lock", "extra"]).status == 64)
        #expect(try Idtool.run(["unlock", "--timeout", "0"]).status == 64)
    }
}
