import Foundation
import Keyring
import TestSupport
import Testing

/// Unlocking on demand against the real gnome-keyring, whose unlock prompts go to gcr's mock
/// prompter (scripts/keyring-ctl prompter on): it answers with the password, dismisses, or never
/// answers, and tells whether it was asked at all.
@Suite("Unlock on demand", .needs(.mockPrompter))
struct UnlockPromptTests {
    @Test("a locked keyring is unlocked through the prompt: read, write, delete succeed")
    func answeredPromptUnlocks() throws {
        try requireTestKeyring()
        try withMockPrompter {
            let store = try SecretStore(identifier: uniqueID("unlock-ok"))
            try store.setObject("before", forKey: .valueData)

            try lockKeyring()
            try promptAnswer("ok")
            #expect(try store.object(forKey: .valueData) == "before")
            #expect(try promptStatus() == (false, 0))

            try lockKeyring()
            try promptAnswer("ok")
            try store.setObject("after", forKey: .valueData)
            #expect(try promptStatus() == (false, 0))
            #expect(try store.object(forKey: .valueData) == "after")

            try lockKeyring()
            try promptAnswer("ok")
            try store.reset()
            #expect(try promptStatus() == (false, 0))
            #expect(try store.object(forKey: .valueData) == nil)
        }
    }

    @Test("a dismissed prompt is locked (dismissed), never absent; nothing is written or deleted")
    func dismissedPromptIsLocked() throws {
        try requireTestKeyring()
        try withMockPrompter {
            let id = uniqueID("unlock-cancel")
            let store = try SecretStore(identifier: id)
            let unknown = try SecretStore(identifier: uniqueID("unlock-cancel-unknown"))
            try store.setObject("kept", forKey: .valueData)
            try lockKeyring()

            try promptAnswer("cancel")
            let readError = keyringError { try store.object(forKey: .valueData) }
            #expect(readError == .locked(itemExists: true, unlock: .dismissed))
            #expect(readError.map { "\($0)" }?.contains("unlock was dismissed") == true)
            // gnome-keyring lists a locked collection's matches: an item with none is absent, and
            // reading it asks nothing. Creating it needs the collection open: asked, and dismissed.
            #expect(try unknown.object(forKey: .valueData) == nil)
            #expect(try promptStatus() == (false, 0), "no prompt for a proven miss")
            try promptAnswer("cancel")
            #expect(keyringError { try unknown.setObject("new", forKey: .valueData) } == .locked(itemExists: false, unlock: .dismissed))
            try promptAnswer("cancel")
            #expect(keyringError { try store.setObject("overwrite", forKey: .valueData) } == .locked(itemExists: true, unlock: .dismissed))
            try promptAnswer("cancel")
            #expect(keyringError { try store.reset() } == .locked(itemExists: true, unlock: .dismissed))
            #expect(try promptStatus() == (false, 0))

            try keyringCtl("restart")
            #expect(try store.object(forKey: .valueData) == "kept")
            #expect(try items(service: id).count == 1)
        }
    }

    @Test(".never never reaches the prompter: locked at once")
    func neverPolicyDoesNotPrompt() throws {
        try requireTestKeyring()
        try withMockPrompter {
            let store = try SecretStore(identifier: uniqueID("unlock-never"), keyring: Keyring(unlock: .never))
            try store.setObject("v", forKey: .valueData)
            try lockKeyring()
            try promptAnswer("ok")
            #expect(keyringError { try store.object(forKey: .valueData) } == .locked(itemExists: true))
            #expect(keyringError { try store.setObject("w", forKey: .valueData) } == .locked(itemExists: true))
            #expect(keyringError { try store.reset() } == .locked(itemExists: true))
            #expect(keyringError { try Keyring(unlock: .never).lookup(["service": store.identifier]) } == .locked(itemExists: true))
            // The queued answer is still unused: no prompt reached the mock.
            #expect(try promptStatus() == (true, 0))
        }
    }

    @Test("a prompt nobody answers ends at the call's timeout as locked (unanswered); the daemon lives on")
    func unansweredPromptEndsAtTimeout() throws {
        try requireTestKeyring()
        try withMockPrompter {
            let store = try SecretStore(identifier: uniqueID("unlock-hang"))
            try store.setObject("v", forKey: .valueData)
            try lockKeyring()
            try promptAnswer("hang")
            let daemon = try keyringCtl("pid")
            let slow = try SecretStore(identifier: store.identifier, keyring: Keyring(timeout: .seconds(2)))
            let error = keyringError { try slow.object(forKey: .valueData) }
            #expect(error == .locked(itemExists: true, unlock: .unanswered), "\(String(describing: error))")
            // gnome-keyring's dialog is left open (dismissing it aborts the daemon): the daemon
            // lives on, still locked.
            #expect(try keyringCtl("pid") == daemon)
            #expect(keyringError { try Keyring(unlock: .never).lookup(["service": store.identifier]) } == .locked(itemExists: true))
        }
    }

    @Test("cancelling the task while the prompt is open ends the call as cancelled at once")
    func cancellationWhilePrompting() async throws {
        try requireTestKeyring()
        try await withMockPrompter {
            let store = try SecretStore(identifier: uniqueID("unlock-cancel-task"))
            try await store.setObject("v", forKey: .valueData)
            try lockKeyring()
            try promptAnswer("hang")
            let daemon = try keyringCtl("pid")
            let finished = Guarded(false)
            let task = Task {
                defer { finished.withLock { $0 = true } }
                return try await store.object(forKey: .valueData)
            }
            // Cancel once the mock holds the prompt (its queued answer is taken), or the call ended.
            while try promptStatus().expecting, !finished.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(20)) }
            task.cancel()
            let result = await task.result
            #expect(throws: KeyringError.cancelled) { try result.get() }
            #expect(try keyringCtl("pid") == daemon)
        }
    }

    @Test("without a prompter (no display) the prompt fails at once: locked (dismissed), not a hang")
    func noPrompterIsDismissed() throws {
        try requireTestKeyring()
        let store = try SecretStore(identifier: uniqueID("unlock-none"), keyring: Keyring(timeout: .seconds(20)))
        try store.setObject("v", forKey: .valueData)
        // Restart even when locking itself fails half-way, so later tests find a usable keyring.
        defer { restartKeyring() }
        try lockKeyring()
        #expect(keyringError { try store.object(forKey: .valueData) } == .locked(itemExists: true, unlock: .dismissed))
    }
}
