import Foundation
import Keyring
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The bus name behind `withCreationLock` is released when the body ends, even while another
/// thread of this process holds the service gate (a read against a hung daemon): otherwise the
/// process owns the name until it exits, and every other process's first creation times out.
@Suite("creation lock release", .serialized, .needs(.secretService))
struct CreationLockReleaseTests {
    /// RequestName(DO_NOT_QUEUE) from another process; its reply code (1: PRIMARY_OWNER, 3: EXISTS).
    static func requestNameElsewhere(_ name: String) throws -> String {
        let script = """
            import sys
            from jeepney.bus_messages import message_bus
            from jeepney.io.blocking import open_dbus_connection
            conn = open_dbus_connection(bus="SESSION")
            print(conn.send_and_get_reply(message_bus.RequestName(sys.argv[1], 4)).body[0])
            """
        return try mustRun(python, ["-c", script, name]).stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `io.keyringidentity.Create.h<sha256 of "service=<id>">`, as the library names the lock.
    static func lockName(service id: String) throws -> String {
        let script = "import hashlib, sys; print('io.keyringidentity.Create.h' + hashlib.sha256(sys.argv[1].encode()).hexdigest()[:40])"
        return try mustRun(python, ["-c", script, "service=\(id)"]).stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("withCreationLock releases its bus name while another thread's call waits on a hung daemon")
    func releasedWhileGateHeld() throws {
        try requireTestKeyring()
        let id = uniqueID("lock-release")
        let attributes = ["service": id]
        let name = try Self.lockName(service: id)
        let keyring = Keyring(timeout: .seconds(60))
        _ = try keyring.search(attributes)   // connected, session open

        let paused = try PausedDaemon()
        defer { paused.resume() }

        let reader = DispatchGroup()
        try keyring.withCreationLock(for: attributes) { () throws(KeyringError) in
            // Holds the service gate until SIGCONT: its timeout outlasts the whole test.
            DispatchQueue.global().async(group: reader) { _ = try? Keyring(timeout: .seconds(60)).search(attributes) }
            usleep(500_000)   // let the read take the gate; not an assertion
        }
        #expect(try Self.requestNameElsewhere(name) == "1", "the creation lock \(name) is still owned by this process")

        paused.resume()
        #expect(reader.wait(timeout: .now() + 30) == .success)
    }

    /// The bus daemon itself stopped (SIGSTOP) makes RequestName time out on this side; the bus
    /// grants the name once it runs again, and without a ReleaseName this process would own it until exit.
    @Test("a RequestName that timed out on this side leaves the name free once the bus catches up")
    func timedOutRequestReleased() throws {
        try requireTestKeyring()
        let id = uniqueID("lock-timeout")
        let attributes = ["service": id]
        let name = try Self.lockName(service: id)
        let patient = Keyring(timeout: .seconds(60))
        _ = try patient.search(attributes)   // connected, session open: the next call's first message is RequestName
        let paused = try PausedDaemon(.bus)
        defer { paused.resume() }
        let error = keyringError { try Keyring(timeout: .seconds(1)).withCreationLock(for: attributes) {} }
        paused.resume()
        #expect(error == .timedOut(seconds: 1))

        _ = try patient.search(attributes)   // a round trip after the bus handled this connection's earlier messages
        #expect(try Self.requestNameElsewhere(name) == "1", "the creation lock \(name) is still owned by this process")
    }
}

extension Output {
    fileprivate var stdoutString: String { String(decoding: stdout, as: UTF8.self) }
}
