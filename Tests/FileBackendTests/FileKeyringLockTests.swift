import Foundation
import Keyring
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The file keyring's lock (`<keyring file>.lock`, one `flock` helper for every file lock):
/// a wait for it ends at the call's deadline and reports the caller's timeout, never 0; it is
/// re-entrant on one thread; huge timeouts saturate.
extension FileKeyringTests {
    @Test("a wait for the file keyring's lock held by another thread reports the caller's timeout, never 0")
    func fileLockTimeoutReportsTheTimeout() throws {
        try withSandbox { _ in
            try keyring.store(Data("v".utf8), attributes: ["service": "held"], label: "l")
            let held = DispatchSemaphore(value: 0)
            let released = DispatchSemaphore(value: 0)
            Thread.detachNewThread { [keyring] in
                try? keyring.withCreationLock(for: ["service": "held"]) { () throws(KeyringError) in
                    held.signal()
                    usleep(2_500_000)
                }
                released.signal()
            }
            held.wait()
            let short = Keyring(backend: .file, timeout: .milliseconds(700))
            #expect(keyringError { try short.withCreationLock(for: ["service": "held"]) {} } == .timedOut(seconds: 0.7))
            #expect(keyringError { try short.store(Data("w".utf8), attributes: ["service": "other"], label: "l") } == .timedOut(seconds: 0.7))
            released.wait()
            #expect(try keyring.lookup(["service": "held"]) == Data("v".utf8))
            #expect(try keyring.lookup(["service": "other"]) == nil)
        }
    }

    @Test("a wait for the file keyring's lock held by another process ends at the deadline with the caller's timeout")
    func fileLockHeldByAnotherProcess() throws {
        try withSandbox { sandbox in
            try keyring.store(Data("v".utf8), attributes: ["service": "held"], label: "l")
            let marker = sandbox.root.appendingPathComponent("held").path
            let release = sandbox.root.appendingPathComponent("release").path
            // Held until this test says so: a wait that ignored its deadline would hang, not time out.
            let hold = "touch '\(marker)'; while [ ! -e '\(release)' ]; do sleep 0.05; done"
            let holder = try ChildProcess(
                "/usr/bin/flock", [sandbox.keyringPath + ".lock", "/bin/sh", "-c", hold].map { Array($0.utf8) },
                environment: ProcessInfo.processInfo.environment)
            while access(marker, F_OK) != 0 { usleep(10_000) }
            let short = Keyring(backend: .file, timeout: .seconds(1))
            #expect(keyringError { try short.withCreationLock(for: ["service": "held"]) {} } == .timedOut(seconds: 1))
            #expect(keyringError { try short.store(Data("w".utf8), attributes: ["service": "held"], label: "l") } == .timedOut(seconds: 1))
            _ = FileManager.default.createFile(atPath: release, contents: Data())
            #expect(try holder.wait().status == 0)
            #expect(try keyring.lookup(["service": "held"]) == Data("v".utf8))
        }
    }

    @Test("the file keyring's lock is re-entrant on one thread, and huge timeouts saturate")
    func fileLockReentrantAndHugeTimeouts() throws {
        try withSandbox { _ in
            for timeout in [Duration.seconds(Int64.max), .seconds(Int64.max) * 8] {
                let huge = Keyring(backend: .file, timeout: timeout)
                try huge.withCreationLock(for: ["service": "nested"]) { () throws(KeyringError) in
                    try huge.withCreationLock(for: ["service": "nested"]) { () throws(KeyringError) in
                        try huge.store(Data("v".utf8), attributes: ["service": "nested"], label: "l")
                    }
                }
                #expect(try huge.lookup(["service": "nested"]) == Data("v".utf8))
                #expect(try huge.insertIfAbsent(Data("w".utf8), attributes: ["service": "nested"], label: "l") != .inserted)
                #expect(try huge.delete(["service": "nested"]) == 1)
            }
        }
    }
}
