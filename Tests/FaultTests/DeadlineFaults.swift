// One deadline per call (issue 20, item 5), in the library: the rows `deadline.*`. The fuller
// cases (every call kind, the file keyring, an open prompt) are in KeyringTests' CallDeadlineTests,
// FileBackendTests' FileKeyringLockTests and DeviceIdentityTests' FirstRunLockTests.
import DeviceIdentity
import Foundation
import Keyring
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
        init(_ body: @escaping @Sendable () throws -> Void) {
            Thread.detachNewThread { [self] in
                do { try body() } catch { self.error = error }
                done.signal()
            }
        }
        @discardableResult
        func join() -> (any Error)? {
            done.wait()
            return error
        }
    }


    static func elapsed(since start: ContinuousClock.Instant) -> Double { start.duration(to: .now) / .seconds(1) }

    @Test("daemon hung: a 1 s read ends in about 1 s while another thread's 6 s read waits")
    func twoThreadsOnHungDaemon() throws {
        try Fault.requireTestKeyring()
        _ = FaultTable["deadline.hung-daemon.two-threads"]
        let attributes = ["service": Fault.newApp("deadline-threads")]
        try Keyring.default.store(Data("v".utf8), attributes: attributes, label: "l")
        defer { _ = try? Keyring.default.delete(attributes) }
        let paused = try PausedDaemon()
        defer { paused.resume() }

        let long = Worker { _ = try Keyring(timeout: .seconds(6)).lookup(attributes) }
        usleep(300_000)
        let start = ContinuousClock.now
        #expect(throws: KeyringError.timedOut(seconds: 1)) { try Keyring(timeout: .seconds(1)).lookup(attributes) }
        #expect(Self.elapsed(since: start) < 3)
        paused.resume()
        long.join()
    }

    @Test("daemon hung: a 4 s write that waits 3.9 s for another thread's creation lock ends after about 4 s")
    func creationLockWaitSharesTheDeadline() throws {
        try Fault.requireTestKeyring()
        _ = FaultTable["deadline.creation-lock.one-timeout"]
        let attributes = ["service": Fault.newApp("deadline-create")]
        defer { _ = try? Keyring.default.delete(attributes) }
        _ = try Keyring.default.search(attributes)
        let held = DispatchSemaphore(value: 0)
        let holder = Worker {
            try Keyring(timeout: .seconds(20)).withCreationLock(for: attributes) { () throws(KeyringError) in
                held.signal()
                usleep(3_900_000)
            }
        }
        held.wait()
        let paused = try PausedDaemon()
        defer { paused.resume() }
        let start = ContinuousClock.now
        #expect(throws: KeyringError.timedOut(seconds: 4)) {
            try Keyring(timeout: .seconds(4)).store(Data("w".utf8), attributes: attributes, label: "l")
        }
        #expect(Self.elapsed(since: start) < 6.5)
        paused.resume()
        holder.join()
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
                scope: .app(app), policy: policy, keyring: Keyring(timeout: .seconds(3)), backup: .directory(box.backupDirectory(app)),
                lockDirectories: [box.runtimeDir])
        }
        let inner = try resolver(.randomUUID)
        let outer = try resolver(.custom(name: "inner resolver") { try inner.identifier() })
        let start = ContinuousClock.now
        let id = try outer.identifier()
        #expect(Self.elapsed(since: start) < 2.5)
        #expect(try Fault.keyringValue(app: app) == id)
        #expect(try Fault.keyringItemCount(app: app) == 1)
    }
}
