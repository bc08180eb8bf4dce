import Foundation
import Keyring
import TestSupport
import Testing

/// Lock state against the real providers: `isLocked()`, `lockCollection()` and
/// `unlockCollection()` on the default collection, and `SecretStore.isLocked()`.
///
/// Where unlocking needs a dialog nobody can answer headless, the test shows what happens instead:
/// gnome-keyring's prompts go to gcr's mock prompter (scripts/keyring-ctl prompter on); KWallet's
/// unlock prompt completes without a dialog for the harness's empty-password wallet; KeePassXC's
/// always opens its own dialog, so there an unlock ends unanswered at the timeout. The file backend
/// has no locked state.
@Suite("Lock state", .serialized)
struct LockStateTests {

    /// Puts the provider back unlocked after a test that may leave it locked.
    static func restoreUnlocked() {
        guard !TestProvider.usesFileBackend else { return }
        do { try keyringCtl("unlock") } catch { Issue.record("could not unlock the test keyring again: \(error)") }
    }

    @Test("the file backend is never locked: lockCollection is unsupported, unlockCollection succeeds",
          .enabled(if: TestProvider.usesFileBackend, "runs with SECRET_BACKEND=file"))
    func fileBackendHasNoLock() throws {
        let store = try SecretStore(identifier: uniqueID("lock-file"))
        try store.setObject("v", forKey: .valueData)
        defer { try? store.reset() }
        #expect(try Keyring.default.isLocked() == false)
        #expect(try store.isLocked() == false)
        let error = keyringError { try Keyring.default.lockCollection() }
        #expect(error == .unsupported("the file backend has no locked state, so it cannot be locked; its file is always encrypted"))
        try Keyring.default.unlockCollection()
        #expect(try Keyring.default.isLocked() == false)
        #expect(try store.object(forKey: .valueData) == "v")
    }

    @Test("lockCollection locks (twice is fine), isLocked says so without prompting, unlockCollection unlocks",
          .enabled(
              if: !TestProvider.usesFileBackend && TestProvider.unansweredUnlock != .unanswered,
              "not the file backend (no lock), not KeePassXC (its unlock is its own dialog: see below)"))
    func lockThenUnlock() throws {
        try requireTestKeyring()
        let store = try SecretStore(identifier: uniqueID("lock-cycle"))
        let empty = try SecretStore(identifier: uniqueID("lock-cycle-empty"))
        try store.setObject("kept", forKey: .valueData)
        defer { try? store.reset() }
        let body = {
            #expect(try Keyring.default.isLocked() == false)
            #expect(try store.isLocked() == false)
            #expect(try empty.isLocked() == false)

            try Keyring.default.lockCollection()
            #expect(try Keyring.default.isLocked() == true)
            #expect(try store.isLocked() == true)
            #expect(try empty.isLocked() == true, "no item: the default collection is reported")
            try Keyring.default.lockCollection()  // already locked: succeeds, changes nothing
            #expect(try Keyring.default.isLocked() == true)
            #expect(keyringError { try Keyring(unlock: .never).lookup(["service": store.identifier]) }?.isLocked == true)

            if TestConfiguration.current.offers(.mockPrompter) { try promptAnswer("ok") }
            try Keyring.default.unlockCollection()
            #expect(try Keyring.default.isLocked() == false)
            #expect(try store.isLocked() == false)
            #expect(try store.object(forKey: .valueData) == "kept")
            try Keyring.default.unlockCollection()  // already unlocked: no prompt
        }
        if TestConfiguration.current.offers(.mockPrompter) {
            try withMockPrompter {
                try body()
                #expect(try promptStatus() == (false, 0), "one prompt, for the one unlock of a locked collection")
            }
        } else {
            defer { Self.restoreUnlocked() }
            try body()
        }
    }

    @Test("the async twins lock and report the same", .enabled(if: !TestProvider.usesFileBackend, "the file backend cannot lock"))
    func asyncTwins() async throws {
        try requireTestKeyring()
        let store = try SecretStore(identifier: uniqueID("lock-async"))
        try await store.setObject("v", forKey: .valueData)
        defer {
            Self.restoreUnlocked()
            try? store.reset()
        }
        #expect(try await Keyring.default.isLocked() == false)
        try await Keyring.default.lockCollection()
        #expect(try await Keyring.default.isLocked() == true)
        #expect(try await store.isLocked() == true)
        let error = await keyringError { try await Keyring(unlock: .never).unlockCollection() }
        #expect(error == .locked(itemExists: false))
        if TestProvider.unansweredUnlock == .completes {
            try await Keyring.default.unlockCollection()
            #expect(try await Keyring.default.isLocked() == false)
        }
    }

    @Test("isLocked never prompts, whatever the unlock policy", .needs(.mockPrompter))
    func isLockedNeverPrompts() throws {
        try requireTestKeyring()
        try withMockPrompter {
            let store = try SecretStore(identifier: uniqueID("lock-noprompt"))
            try store.setObject("v", forKey: .valueData)
            try lockKeyring()
            try promptAnswer("ok")
            #expect(try Keyring.default.isLocked() == true)
            #expect(try store.isLocked() == true)
            // The queued answer is still unused: no prompt reached the mock.
            #expect(try promptStatus() == (true, 0))
        }
    }

    @Test("a dismissed unlock prompt is locked (dismissed) and stays locked", .needs(.mockPrompter))
    func dismissedUnlock() throws {
        try requireTestKeyring()
        try withMockPrompter {
            try Keyring.default.lockCollection()
            try promptAnswer("cancel")
            #expect(keyringError { try Keyring.default.unlockCollection() } == .locked(itemExists: false, unlock: .dismissed))
            #expect(try promptStatus() == (false, 0))
            #expect(try Keyring.default.isLocked() == true)
        }
    }

    @Test("unlock: .never throws locked without prompting", .needs(.mockPrompter))
    func neverPolicyDoesNotPrompt() throws {
        try requireTestKeyring()
        try withMockPrompter {
            try Keyring.default.lockCollection()
            try promptAnswer("ok")
            #expect(keyringError { try Keyring(unlock: .never).unlockCollection() } == .locked(itemExists: false))
            #expect(try promptStatus() == (true, 0), "the queued answer is unused")
            #expect(try Keyring.default.isLocked() == true)
        }
    }

    @Test("an unlock prompt nobody answers ends at the timeout as locked (unanswered)", .needs(.mockPrompter))
    func unansweredUnlock() throws {
        try requireTestKeyring()
        try withMockPrompter {
            try Keyring.default.lockCollection()
            try promptAnswer("hang")
            // 10 s: the prompt must reach the mock before the deadline, under any load; only the deadline ends it.
            let error = keyringError { try Keyring(timeout: .seconds(10)).unlockCollection() }
            #expect(error == .locked(itemExists: false, unlock: .unanswered), "\(String(describing: error))")
            #expect(try Keyring.default.isLocked() == true)
        }
    }

    // KeePassXC opens its own unlock dialog for Unlock, which nobody answers headless: the test
    // shows the call ends at its timeout as locked (unanswered), and the database stays locked.
    @Test("KeePassXC: lockCollection locks; unlockCollection's dialog goes unanswered headless",
          .enabled(if: TestProvider.isKeePassXC && !TestProvider.usesFileBackend, "KeePassXC only"))
    func keePassXCUnlockIsItsDialog() throws {
        try requireTestKeyring()
        let store = try SecretStore(identifier: uniqueID("lock-kpx"))
        try store.setObject("v", forKey: .valueData)
        defer {
            Self.restoreUnlocked()
            try? store.reset()
        }
        #expect(try Keyring.default.isLocked() == false)
        #expect(try store.isLocked() == false)
        try Keyring.default.lockCollection()
        #expect(try Keyring.default.isLocked() == true)
        #expect(try store.isLocked() == true, "a locked database hides the item: the default collection is reported")
        try Keyring.default.lockCollection()
        #expect(keyringError { try Keyring(unlock: .never).unlockCollection() } == .locked(itemExists: false))
        // 10 s: the dialog must open before the deadline, under any load; only the deadline ends it.
        let error = keyringError { try Keyring(timeout: .seconds(10)).unlockCollection() }
        #expect(error == .locked(itemExists: false, unlock: .unanswered), "\(String(describing: error))")
        #expect(try Keyring.default.isLocked() == true)

        // KeePassXC 2.7.4 keeps the unanswered dialog's state: once its database is open again
        // (KeePassXC's own openDatabase), it dismisses every Lock prompt until it restarts. That
        // is a typed failure that says what to do, never a success. 2.7.10 (Debian 13) locks.
        try keyringCtl("unlock")
        var refused: KeyringError?
        do throws(KeyringError) { try Keyring.default.lockCollection() } catch { refused = error }
        if case .serviceFailure(_, _, let message)? = refused {
            #expect(message.contains("refused to lock"), "\(message)")
        } else if refused == nil {
            #expect(try Keyring.default.isLocked() == true, "lockCollection returned but the database is not locked")
        } else {
            Issue.record("KeePassXC's lock after an unanswered unlock dialog: \(String(describing: refused))")
        }
        try keyringCtl("restart")
        try Keyring.default.lockCollection()
        #expect(try Keyring.default.isLocked() == true)
    }
}
