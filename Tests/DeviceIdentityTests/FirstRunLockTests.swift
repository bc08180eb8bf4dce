// The first-run lock (one flock helper, Keyring's FlockFile) against the real gnome-keyring:
// re-entrant on one thread, still exclusive between threads, and fine with huge timeouts.
import Foundation
import Keyring
import TestSupport
import Testing
@testable import DeviceIdentity

#if canImport(Glibc)
import Glibc
#endif

@Suite("First-run lock", .serialized)
struct FirstRunLockTests {
    /// Issue 20, item 8: a resolver run nested in another one's first run, on the same scope and
    /// lock directory (two resolvers sharing a backup directory), used to wait on its own lock
    /// until the timeout.
    @Test("a first run nested in another on the same scope and directory does not block on itself")
    func nestedFirstRunDoesNotBlock() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let inner = try fixture.resolver(keyring: Keyring(timeout: .seconds(25)))
        let outer = try fixture.resolver(
            policy: .custom(name: "inner resolver") { try inner.identifier() }, keyring: Keyring(timeout: .seconds(25)))
        // Blocked on its own lock, the inner run would throw .timedOut after 25 s, and so would this.
        let value = try outer.identifier()
        #expect(isUUIDv4(value))
        #expect(try inner.identifier() == value)
        #expect(try fixture.keyringValue() == value)
    }

    @Test("another thread's first run on the same scope still waits for the lock, and reports its own timeout")
    func otherThreadsStillExclude() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        // The first run holds the lock until the other has given up: an order, not a time.
        let slow = try fixture.resolver(
            policy: .custom(name: "slow") {
                inside.signal()
                release.wait()
                return UUID().uuidString.lowercased()
            }, keyring: Keyring(timeout: .seconds(120)))
        let first = Guarded<Result<String, IdentityError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let result = Result { () throws(IdentityError) -> String in try slow.identifier() }
            first.withLock { $0 = result }
            done.signal()
        }
        inside.wait()
        // Long enough for its own keyring read on a loaded machine; the lock is what it waits for.
        let other = try fixture.resolver(keyring: Keyring(timeout: .seconds(10)))
        #expect(identityError { try other.identifier() } == .lockTimedOut(seconds: 10))
        release.signal()
        done.wait()
        let value = try #require(try first.withLock { $0 }?.get())
        #expect(try fixture.resolver().identifier() == value)
    }

    @Test("a resolver with a huge timeout resolves")
    func hugeTimeout() throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let value = try fixture.resolver(keyring: Keyring(timeout: .seconds(Int64.max))).identifier()
        #expect(try fixture.resolver(keyring: Keyring(timeout: .seconds(Int64.max) * 8)).refresh().value == value)
    }
}
