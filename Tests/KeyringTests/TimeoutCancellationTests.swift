import Foundation
import Keyring
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A stopped (SIGSTOP) daemon keeps its bus name but never answers: the real "hung keyring".
@Suite("Timeout and cancellation against a stopped daemon", .needs(.secretService))
struct TimeoutCancellationTests {

    @Test("a hung daemon gives timedOut within the configured timeout, then works again after SIGCONT")
    func hungDaemonTimesOut() throws {
        try requireTestKeyring()
        let id = uniqueID("timeout")
        // Connected, session open; with the default timeout, since only the calls to the hung
        // daemon are meant to time out.
        try SecretStore(identifier: id).setObject("before", forKey: .valueData)
        let store = try SecretStore(identifier: id, keyring: Keyring(timeout: .seconds(1)))

        let paused = try PausedDaemon()
        defer { paused.resume() }

        #expect(keyringError { try store.object(forKey: .valueData) } == .timedOut(seconds: 1))
        #expect(keyringError { try store.setObject("during", forKey: .valueData) } == .timedOut(seconds: 1))
        #expect(keyringError { try Keyring(timeout: .milliseconds(500)).search(["service": id]) } == .timedOut(seconds: 0.5))
        let status = Keyring(timeout: .seconds(1)).status()
        #expect(status.problem == .timedOut(seconds: 1))

        // Working again is the point, not within 1 s: the resumed daemon first answers the calls
        // that timed out, and with nine test runs on two cores (.ci/run's third stage) that once
        // took more than 1 s. So the same identifier through a wrapper with the default timeout.
        paused.resume()
        let resumed = try SecretStore(identifier: id)
        #expect(try resumed.object(forKey: .valueData) != nil)
        try resumed.setObject("after", forKey: .valueData)
        #expect(try resumed.object(forKey: .valueData) == "after")
        #expect(try items(service: id).count == 1)
        try resumed.reset()
    }

    @Test("cancelling the task of an async call to a hung daemon throws cancelled")
    func cancellationEndsHungCall() async throws {
        try requireTestKeyring()
        let id = uniqueID("cancel")
        let store = try SecretStore(identifier: id)   // default 25 s timeout: only cancellation can end the call early
        try await store.setObject("before", forKey: .valueData)

        let paused = try PausedDaemon()
        defer { paused.resume() }

        let read = Task { try await store.object(forKey: .valueData) }
        let write = Task { try await store.setObject("during", forKey: .valueData) }
        try? await Task.sleep(for: .milliseconds(300))   // let the calls start; not an assertion
        read.cancel()
        write.cancel()
        #expect(await keyringError { try await read.value } == .cancelled)
        #expect(await keyringError { try await write.value } == .cancelled)

        // A task cancelled before it starts never reaches the daemon.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await store.object(forKey: .valueData)
        }
        #expect(await keyringError { try await early.value } == .cancelled)

        paused.resume()
        #expect(try await store.object(forKey: .valueData) == "before")
        try await store.setObject("after", forKey: .valueData)
        #expect(try await store.object(forKey: .valueData) == "after")
        try await store.reset()
    }

    /// Keyring's async variants (unlike SecretStore's) ignore Offload's cancellation token and run
    /// the blocking call with its own, so cancelling the task does nothing until the timeout.
    @Test("cancelling the task of an async Keyring call to a hung daemon throws cancelled, not timedOut")
    func cancellationEndsHungKeyringCall() async throws {
        try requireTestKeyring()
        let id = uniqueID("cancel-kr")
        let keyring = Keyring(timeout: .seconds(5))
        try await keyring.store(Data("v".utf8), attributes: ["service": id], label: "l")
        defer { _ = try? Keyring.default.delete(["service": id]) }

        let paused = try PausedDaemon()
        defer { paused.resume() }

        let search = Task { try await keyring.search(["service": id]) }
        let lookup = Task { try await keyring.lookup(["service": id]) }
        try? await Task.sleep(for: .milliseconds(300))   // let the calls start; not an assertion
        search.cancel()
        lookup.cancel()
        let searchError = await keyringError { try await search.value }
        #expect(searchError == .cancelled, "\(String(describing: searchError))")
        let lookupError = await keyringError { try await lookup.value }
        #expect(lookupError == .cancelled, "\(String(describing: lookupError))")

        paused.resume()
        #expect(try await keyring.search(["service": id]).count == 1)
    }
}
