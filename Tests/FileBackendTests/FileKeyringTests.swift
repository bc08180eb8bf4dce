import Foundation
import Keyring
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `Keyring(backend: .file)` and `SecretStore` in this process, against libsecret's real file
/// backend. Serialized: the keyring file is named by process-wide environment variables.
@Suite("file backend: Keyring and SecretStore in process", .serialized, .needs(.providerFree))
struct FileKeyringTests {
    let keyring = Keyring(backend: .file, timeout: .seconds(20))

    /// Runs `body` with this process's libsecret pointed at a fresh keyring file; restores the environment after.
    func withSandbox(_ body: (FileKeyringSandbox) throws -> Void) throws {
        let names = ["SECRET_FILE_TEST_PATH", "SECRET_FILE_TEST_PASSWORD"]
        let saved = names.map { name in (name, getenv(name).map { String(cString: $0) }) }
        let sandbox = try FileKeyringSandbox()
        sandbox.activate()
        defer {
            for (name, value) in saved {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
            sandbox.remove()
        }
        try body(sandbox)
    }

    @Test("store then lookup round-trips, and the file is where libsecret's test variable says")
    func roundTrip() throws {
        try withSandbox { sandbox in
            let attributes = ["service": uniqueID("fb"), "username": "alice"]
            try keyring.store(Data("hello".utf8), attributes: attributes, label: "greeting")
            #expect(try keyring.lookup(attributes) == Data("hello".utf8))
            #expect(FileManager.default.fileExists(atPath: sandbox.keyringPath))
            let items = try keyring.search(attributes)
            #expect(items.count == 1)
            #expect(items.first?.label == "greeting")
            #expect(items.first?.isLocked == false)
            #expect(try keyring.lookup(["service": uniqueID("fb")]) == nil)
        }
    }

    @Test("values are byte-exact: empty, NUL bytes, invalid UTF-8, 1 MiB")
    func fidelity() throws {
        try withSandbox { _ in
            var big = Data(count: 1 << 20)
            for index in big.indices { big[index] = UInt8(truncatingIfNeeded: index &* 31 &+ 7) }
            let values = [Data(), Data([0]), Data([0x61, 0, 0x62, 0]), Data([0xff, 0xfe, 0xc3, 0x28]), big]
            for (index, value) in values.enumerated() {
                let attributes = ["service": uniqueID("fidelity"), "n": String(index)]
                try keyring.store(value, attributes: attributes, label: "v", contentType: "application/octet-stream")
                #expect(try keyring.lookup(attributes) == value, "value \(index)")
                let store = try SecretStore(identifier: uniqueID("store"), keyring: keyring)
                try store.setData(value, forKey: .valueData)
                #expect(try store.data(forKey: .valueData) == value, "SecretStore value \(index)")
            }
        }
    }

    @Test("repeated stores keep one item per attribute set, with the newest secret and label")
    func oneItem() throws {
        try withSandbox { _ in
            let attributes = ["service": uniqueID("fb"), "username": "bob"]
            for round in 0..<5 { try keyring.store(Data("v\(round)".utf8), attributes: attributes, label: "L\(round)") }
            let items = try keyring.search(attributes)
            #expect(items.count == 1)
            #expect(items.first?.label == "L4")
            #expect(try keyring.lookup(attributes) == Data("v4".utf8))
        }
    }

    @Test("a store updates only the item with exactly these attributes; delete(item:) removes only that item")
    func exactAttributes() throws {
        try withSandbox { _ in
            let service = uniqueID("fb")
            let base = ["service": service, "username": "carol"]
            let wider = base.merging(["extra": "x"]) { $1 }
            try keyring.store(Data("base".utf8), attributes: base, label: "base")
            try keyring.store(Data("wider".utf8), attributes: wider, label: "wider")
            try keyring.store(Data("base2".utf8), attributes: base, label: "base")
            let all = try keyring.readAll(["service": service])
            #expect(all.count == 2)
            #expect(all.first { $0.item.attributes == wider }?.secret == Data("wider".utf8))
            #expect(all.first { $0.item.attributes == base }?.secret == Data("base2".utf8))
            let baseItem = try #require(all.first { $0.item.attributes == base }?.item)
            try keyring.delete(item: baseItem)
            let left = try keyring.readAll(["service": service])
            #expect(left.map(\.item.attributes) == [wider])
            #expect(left.first?.secret == Data("wider".utf8))
            #expect(try keyring.secret(of: baseItem) == nil)
            #expect(try keyring.delete(["service": service]) == 1)
            #expect(try keyring.search(["service": service]).isEmpty)
        }
    }

    @Test("insertIfAbsent creates once and then returns the existing item unchanged")
    func insertIfAbsent() throws {
        try withSandbox { _ in
            let attributes = ["identity-scope": "app", "identity-name": uniqueID("fb")]
            #expect(try keyring.insertIfAbsent(Data("first".utf8), attributes: attributes, label: "id") == .inserted)
            guard case .existing(_, let secret) = try keyring.insertIfAbsent(Data("second".utf8), attributes: attributes, label: "id")
            else {
                Issue.record("the second insert did not find the first item")
                return
            }
            #expect(secret == Data("first".utf8))
            #expect(try keyring.search(attributes).count == 1)
        }
    }

    @Test("a wrong key is a typed error, never an empty keyring, and a write with it changes nothing")
    func wrongKey() throws {
        try withSandbox { sandbox in
            let attributes = ["service": uniqueID("fb"), "username": "dave"]
            try keyring.store(Data("kept".utf8), attributes: attributes, label: "x")
            let before = try Data(contentsOf: URL(fileURLWithPath: sandbox.keyringPath))
            sandbox.activate(password: "not-the-password")
            #expect(keyringError { try keyring.lookup(attributes) } == .wrongKey(path: sandbox.keyringPath))
            #expect(keyringError { try keyring.search([:]) } == .wrongKey(path: sandbox.keyringPath))
            #expect(
                keyringError { try keyring.store(Data("new".utf8), attributes: attributes, label: "x") }
                    == .wrongKey(path: sandbox.keyringPath))
            #expect(try Data(contentsOf: URL(fileURLWithPath: sandbox.keyringPath)) == before)
            #expect(keyring.status().problem == .wrongKey(path: sandbox.keyringPath))
            sandbox.activate()
            #expect(try keyring.lookup(attributes) == Data("kept".utf8))
        }
    }

    @Test("a truncated or foreign keyring file is a typed error, not a crash (libsecret 0.20 aborts on some)")
    func damagedFile() throws {
        try withSandbox { sandbox in
            let attributes = ["service": uniqueID("fb")]
            try keyring.store(Data("x".utf8), attributes: attributes, label: "x")
            let whole = try Data(contentsOf: URL(fileURLWithPath: sandbox.keyringPath))
            for length in [40, 18, 10, whole.count - 1] {
                try whole.prefix(length).write(to: URL(fileURLWithPath: sandbox.keyringPath))
                guard case .keyringFileDamaged(let path, _)? = keyringError({ try keyring.lookup(attributes) }) else {
                    Issue.record("a file cut to \(length) bytes was not reported as damaged")
                    continue
                }
                #expect(path == sandbox.keyringPath)
                // Nothing is written over it.
                #expect(keyringError { try keyring.store(Data("y".utf8), attributes: attributes, label: "y") } != nil)
                #expect(try Data(contentsOf: URL(fileURLWithPath: sandbox.keyringPath)) == whole.prefix(length))
            }
            try Data("not a keyring".utf8).write(to: URL(fileURLWithPath: sandbox.keyringPath))
            guard case .keyringFileDamaged? = keyringError({ try keyring.search(attributes) }) else {
                Issue.record("a foreign file was not reported as damaged")
                return
            }
        }
    }

    @Test("no key (no portal, no SECRET_FILE_TEST_PASSWORD) and an unreadable path are typed errors")
    func unavailable() throws {
        try withSandbox { sandbox in
            unsetenv("SECRET_FILE_TEST_PASSWORD")
            guard case .keyringFileUnavailable(_, let detail)? = keyringError({ try keyring.lookup(["service": "s"]) }) else {
                Issue.record("a missing key was not reported as unavailable")
                return
            }
            #expect(detail.contains("SECRET_FILE_TEST_PASSWORD"))
            sandbox.activate()
            // A directory where the file should be: unreadable as a file.
            try FileManager.default.createDirectory(atPath: sandbox.keyringPath, withIntermediateDirectories: true)
            guard case .keyringFileUnavailable? = keyringError({ try keyring.lookup(["service": "s"]) }) else {
                Issue.record("an unreadable keyring file was not reported as unavailable")
                return
            }
            // A directory nobody can create files in (procfs): the write fails with a typed error.
            setenv("SECRET_FILE_TEST_PATH", "/proc/keyring-identity-test/default.keyring", 1)
            guard
                case .keyringFileUnavailable? = keyringError({ try keyring.store(Data("x".utf8), attributes: ["service": "s"], label: "x") }
                )
            else {
                Issue.record("an unwritable directory was not reported as unavailable")
                return
            }
        }
    }

    @Test("a full disk fails a change with a typed error and leaves the keyring file as it was (needs root: mounts a 64 KiB tmpfs)")
    func fullDisk() throws {
        try #require(geteuid() == 0, "this test mounts a small tmpfs to fill it, which needs root")
        try withSandbox { sandbox in
            let mountPoint = sandbox.root.appendingPathComponent("small").path
            try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
            let mounted = try ChildProcess.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", mountPoint])
            try #require(mounted.status == 0, "mount failed: \(mounted.stderr)")
            defer { _ = try? ChildProcess.run("/usr/bin/umount", [mountPoint]) }
            setenv("SECRET_FILE_TEST_PATH", mountPoint + "/keyrings/default.keyring", 1)
            let attributes = ["service": uniqueID("full")]
            try keyring.store(Data("kept".utf8), attributes: attributes, label: "kept")
            let before = try Data(contentsOf: URL(fileURLWithPath: mountPoint + "/keyrings/default.keyring"))
            // Fill the rest of the file system.
            let filler = open(mountPoint + "/filler", O_WRONLY | O_CREAT, 0o600)
            let block = [UInt8](repeating: 0, count: 1024)
            while write(filler, block, block.count) > 0 {}
            close(filler)
            let big = Data(repeating: 0x41, count: 20_000)
            guard
                case .keyringFileUnavailable(_, let detail)? = keyringError({
                    try keyring.store(big, attributes: ["service": uniqueID("big")], label: "big")
                })
            else {
                Issue.record("a full disk was not reported as an unusable keyring file")
                return
            }
            #expect(detail.contains("space"), "\(detail)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: mountPoint + "/keyrings/default.keyring")) == before)
            #expect(try keyring.lookup(attributes) == Data("kept".utf8))
        }
    }

    @Test("a read-only data directory: reads work, a change is a typed error (needs root: mounts a tmpfs read-only)")
    func readOnlyDirectory() throws {
        try #require(geteuid() == 0, "this test mounts a tmpfs and remounts it read-only, which needs root")
        try withSandbox { sandbox in
            let mountPoint = sandbox.root.appendingPathComponent("ro").path
            try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
            let mounted = try ChildProcess.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint])
            try #require(mounted.status == 0, "mount failed: \(mounted.stderr)")
            defer { _ = try? ChildProcess.run("/usr/bin/umount", [mountPoint]) }
            setenv("SECRET_FILE_TEST_PATH", mountPoint + "/keyrings/default.keyring", 1)
            let attributes = ["service": uniqueID("ro")]
            try keyring.store(Data("kept".utf8), attributes: attributes, label: "kept")
            let remounted = try ChildProcess.run("/usr/bin/mount", ["-o", "remount,ro", mountPoint])
            try #require(remounted.status == 0, "remount failed: \(remounted.stderr)")
            #expect(try keyring.lookup(attributes) == Data("kept".utf8))
            guard case .keyringFileUnavailable? = keyringError({ try keyring.store(Data("new".utf8), attributes: attributes, label: "x") })
            else {
                Issue.record("a read-only directory was not reported as an unusable keyring file")
                return
            }
            #expect(try keyring.lookup(attributes) == Data("kept".utf8))
        }
    }

    @Test("a change waits for another process's lock and times out with a typed error")
    func lockTimeout() throws {
        try withSandbox { sandbox in
            try keyring.store(Data("x".utf8), attributes: ["service": "s"], label: "x")
            // util-linux flock(1) holds the same flock a change takes, until it is killed.
            let holder = try ChildProcess(
                "/usr/bin/flock", [Array((sandbox.keyringPath + ".lock").utf8), Array("sleep".utf8), Array("60".utf8)],
                environment: ProcessInfo.processInfo.environment)
            defer {
                kill(holder.pid, SIGKILL)
                _ = try? holder.wait()
            }
            // Wait until the holder has the lock (a non-blocking flock of our own fails).
            let fd = open(sandbox.keyringPath + ".lock", O_RDWR | O_CREAT, 0o600)
            defer { close(fd) }
            while flock(fd, LOCK_EX | LOCK_NB) == 0 {
                flock(fd, LOCK_UN)
                usleep(10_000)
            }
            let quick = Keyring(backend: .file, timeout: .milliseconds(300))
            guard case .timedOut? = keyringError({ try quick.store(Data("y".utf8), attributes: ["service": "s"], label: "y") }) else {
                Issue.record("a held lock did not time out")
                return
            }
            // Reads do not need the lock (under the default timeout: 300 ms is a load-dependent bound for a read).
            #expect(try keyring.lookup(["service": "s"]) == Data("x".utf8))
        }
    }

    @Test("SecretStore: set, read each key, change the account, reset; status has no locked state")
    func secretStore() throws {
        try withSandbox { _ in
            let identifier = uniqueID("store")
            let store = try SecretStore(identifier: identifier, keyring: keyring)
            #expect(try store.object(forKey: .valueData) == nil)
            try store.setObject("v1", forKey: .valueData)
            try store.setObject("alice", forKey: .account)
            try store.setObject("My label", forKey: .label)
            try store.setObject("v2", forKey: .valueData)
            #expect(try store.object(forKey: .valueData) == "v2")
            #expect(try store.object(forKey: .account) == "alice")
            #expect(try store.object(forKey: .label) == "My label")
            #expect(try keyring.search(["service": identifier]).count == 1)
            try store.reset()
            #expect(try store.object(forKey: .valueData) == nil)
            #expect(try keyring.search(["service": identifier]).isEmpty)
            let status = keyring.status()
            #expect(status.isReachable && !status.isLocked && status.problem == nil)
        }
    }

    @Test("an explicit backend wins over the environment's choice")
    func explicitChoice() {
        #expect(Keyring(backend: .file).backend.resolved == .file)
        #expect(Keyring(backend: .secretService).backend.resolved == .secretService)
    }
}
