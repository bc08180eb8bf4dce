// One deadline per call (issue 20, item 5), in the library: the rows `deadline.*`. The fuller
// cases (every call kind, the file keyring, an open prompt) are in KeyringTests' CallDeadlineTests,
// FileBackendTests' FileKeyringLockTests and DeviceIdentityTests' FirstRunLockTests.
import DeviceIdentity
import Foundation
import Keyring
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Faults: one deadline per call", .serialized, .needs(.secretService))
struct DeadlineFaults {
    /// Runs `body` on a thread of its own; `join` waits for it.
    final class Worker: @unchecked Sendable {
        // Written once by the worker before `done` is signalled, read only after.
        private var error: (any Error)?
        private let done = DispatchSemaphore(value: 0)
        private let returned = Atomic<Bool>(false)
        init(_ body: @escaping @Sendable () throws -> Void) {
            Thread.detachNewThread { [self] in
                do { try body() } catch { self.error = error }
                returned.store(true, ordering: .sequentiallyConsistent)
                done.signal()
            }
        }
        /// Whether `body` has returned (or thrown) yet; does not wait.
        var hasReturned: Bool { returned.load(ordering: .sequentiallyConsistent) }
        @discardableResult
        func join() -> (any Error)? {
            done.wait()
            return error
        }
    }

    @Test("daemon hung: a 1 s read ends at its deadline while another thread's 25 s read waits")
    func twoThreadsOnHungDaemon() throws {
        try Fault.requireTestKeyring()
        _ = FaultTable["deadline.hung-daemon.two-threads"]
        let attributes = ["service": Fault.newApp("deadline-threads")]
        try Keyring.default.store(Data("v".utf8), attributes: attributes, label: "l")
        defer { _ = try? Keyring.default.delete(attributes) }
        let paused = try PausedDaemon()
        defer { paused.resume() }

        // 25 s: the long call outlives the short one under any load, until the resume below.
        let long = Worker { _ = try Keyring(timeout: .seconds(25)).lookup(attributes) }
        usleep(300_000)
        #expect(throws: KeyringError.timedOut(seconds: 1)) { try Keyring(timeout: .seconds(1)).lookup(attributes) }
        // Held up by the long call, it would end only once that one gave up the gate.
        #expect(!long.hasReturned, "the 1 s call ended only after the 25 s call")
        paused.resume()
        long.join()
    }

    @Test("daemon hung: an 8 s write that waits 6 s for another thread's creation lock ends at its own deadline")
    func creationLockWaitSharesTheDeadline() throws {
        try Fault.requireTestKeyring()
        _ = FaultTable["deadline.creation-lock.one-timeout"]
        let attributes = ["service": Fault.newApp("deadline-create")]
        defer { _ = try? Keyring.default.delete(attributes) }
        _ = try Keyring.default.search(attributes)
        let held = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        let released = Guarded<ContinuousClock.Instant?>(nil)
        let holder = Worker {
            try Keyring(timeout: .seconds(20)).withCreationLock(for: attributes) { () throws(KeyringError) in
                held.signal()
                go.wait()
                usleep(6_000_000)
                released.withLock { $0 = ContinuousClock.now }
            }
        }
        held.wait()
        let paused: PausedDaemon
        do { paused = try PausedDaemon() } catch {
            go.signal()  // the holder would wait forever
            throw error
        }
        defer { paused.resume() }
        // Freed 6 s into the write's 8 s: a write that then had its whole 8 s again would end 8 s after the release.
        go.signal()
        #expect(throws: KeyringError.timedOut(seconds: 8)) {
            try Keyring(timeout: .seconds(8)).store(Data("w".utf8), attributes: attributes, label: "l")
        }
        let ended = ContinuousClock.now
        paused.resume()
        holder.join()
        let release = try #require(released.withLock { $0 })
        #expect(ended < release + .seconds(8), "the 8 s write ended \(ended - release) after the lock's release")
    }

    @Test("Keyring(timeout: .seconds(Int64.max)) and a resolver with it work")
    func hugeTimeout() throws {
        try Fault.requireTestKeyring()
        _ = FaultTable["deadline.huge-timeout"]
        let box = try Sandbox()
        let app = Fault.newApp("deadline-huge")
        let keyring = Keyring(timeout: .seconds(Int64.max))
        let resolver = try IdentifierResolver(
            scope: .app(app), keyring: keyring, backup: .directory(box.backupDirectory(app)), lockDirectories: [box.runtimeDir])
        let id = try resolver.identifier()
        #expect(try Fault.keyringValue(app: app) == id)
        #expect(try keyring.search(["identity-name": app]).count == 1)
    }

    @Test("a first run nested in another on the same scope and lock directory resolves at once")
    func nestedFirstRun() throws {
        try Fault.requireTestKeyring()
        _ = FaultTable["deadline.first-run.nested"]
        let box = try Sandbox()
        let app = Fault.newApp("deadline-nested")
        func resolver(_ policy: GenerationPolicy) throws -> IdentifierResolver {
            try IdentifierResolver(
                scope: .app(app), policy: policy, keyring: Keyring(), backup: .directory(box.backupDirectory(app)),
                lockDirectories: [box.runtimeDir])
        }
        let inner = try resolver(.randomUUID)
        let outer = try resolver(.custom(name: "inner resolver") { try inner.identifier() })
        // Blocked on its own lock, the inner run would throw .timedOut, and so would this.
        let id = try outer.identifier()
        #expect(try Fault.keyringValue(app: app) == id)
        #expect(try Fault.keyringItemCount(app: app) == 1)
    }
}
