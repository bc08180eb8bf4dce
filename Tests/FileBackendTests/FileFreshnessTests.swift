import Foundation
import Keyring
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// This process as a warm reader of libsecret's real file backend (it keeps the file's snapshot
/// between calls) while other processes write the file: secret-tool, libsecret's own client, and
/// `cp`/`touch` rewriting it in place. Every write must show on the reader's next call. Serialized:
/// the keyring file is named by process-wide environment variables.
@Suite("file backend: a warm reader sees every write of another process", .serialized, .needs(.providerFree))
struct FileFreshnessTests {
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

    /// Another process stores `value` under the SecretStore item's attributes (a new file renamed over the old one).
    func writeElsewhere(_ sandbox: FileKeyringSandbox, _ id: String, _ value: String) throws {
        let stored = try sandbox.secretTool(["store", "--label", id, "service", id, "username", ""], stdin: Data(value.utf8))
        try #require(stored.status == 0, "\(stored.stderr)")
    }

    /// Another process runs `script` (sh) with `arguments` as $1, $2, ...
    func shell(_ sandbox: FileKeyringSandbox, _ script: String, _ arguments: [String]) throws {
        let result = try ChildProcess.run("/bin/sh", ["-c", script, "sh"] + arguments, environment: sandbox.environment())
        try #require(result.status == 0, "\(result.stderr)")
    }

    /// Waits until the file's last change is older than the reader's margin for coarse timestamps
    /// (3 s, `FileIdentity.settleMargin`), then reads once: from then on `stat` alone must tell a
    /// change. Not a timed assertion.
    func settle(_ store: SecretStore, expecting value: String) throws {
        usleep(3_200_000)
        #expect(try store.object(forKey: .valueData) == value)
    }

    func identity(_ path: String) -> (inode: UInt64, size: Int64) {
        var info = stat()
        guard stat(path, &info) == 0 else { return (0, -1) }
        return (UInt64(info.st_ino), Int64(info.st_size))
    }

    @Test("writes by secret-tool within the same second, of the same size, each renamed over the file, show on the next read")
    func sameSecondSameSize() throws {
        try withSandbox { sandbox in
            let id = uniqueID("fresh")
            let store = try SecretStore(identifier: id, keyring: keyring)
            try store.setObject("value-000", forKey: .valueData)
            var sizes = Set<Int64>()
            for round in 1...12 {
                #expect(try store.object(forKey: .valueData) == String(format: "value-%03d", round - 1))  // warm
                let before = identity(sandbox.keyringPath)
                let value = String(format: "value-%03d", round)
                try writeElsewhere(sandbox, id, value)
                let after = identity(sandbox.keyringPath)
                #expect(after.inode != before.inode, "secret-tool replaces the file by rename")
                sizes.insert(after.size)
                #expect(try store.object(forKey: .valueData) == value, "round \(round): the reader missed another process's write")
            }
            #expect(sizes.count == 1, "every write left the file the same size: \(sizes)")
        }
    }

    @Test("with a settled file (stat alone decides): a rename, a rewrite in place of the same size, and one with the old mtime put back")
    func settledFile() throws {
        try withSandbox { sandbox in
            let id = uniqueID("settled")
            let store = try SecretStore(identifier: id, keyring: keyring)
            let path = sandbox.keyringPath
            let copies = sandbox.root.appendingPathComponent("copies").path
            try FileManager.default.createDirectory(atPath: copies, withIntermediateDirectories: true)
            // Two versions of the file, of the same size: value-A and value-B (the same salt and key).
            try store.setObject("value-A", forKey: .valueData)
            try shell(sandbox, "cp -p \"$1\" \"$2/A\"", [path, copies])
            try store.setObject("value-B", forKey: .valueData)
            try shell(sandbox, "cp -p \"$1\" \"$2/B\"", [path, copies])
            try #require(identity(copies + "/A").size == identity(copies + "/B").size)

            // Replaced by rename, same size.
            try settle(store, expecting: "value-B")
            try writeElsewhere(sandbox, id, "value-C")
            #expect(try store.object(forKey: .valueData) == "value-C", "missed a file renamed over the settled one")

            // Rewritten in place (same inode), same size: only the times tell.
            try settle(store, expecting: "value-C")
            let inode = identity(path).inode
            try shell(sandbox, "cat \"$2/A\" > \"$1\"", [path, copies])
            #expect(identity(path).inode == inode)
            #expect(try store.object(forKey: .valueData) == "value-A", "missed a rewrite in place of the same size")

            // In place, same size, and the old mtime put back: only the ctime tells.
            try settle(store, expecting: "value-A")
            try shell(sandbox, "cp -p \"$1\" \"$2/now\" && cat \"$2/B\" > \"$1\" && touch -m -r \"$2/now\" \"$1\"", [path, copies])
            #expect(try store.object(forKey: .valueData) == "value-B", "missed a rewrite in place that kept the mtime")
        }
    }

    @Test("a warm writer keeps another process's write: it reads the file again before changing it")
    func warmWriterKeepsOtherWrites() throws {
        try withSandbox { sandbox in
            let ours = try SecretStore(identifier: uniqueID("ours"), keyring: keyring)
            try ours.setObject("ours-1", forKey: .valueData)
            let theirs = uniqueID("theirs")
            for round in 1...5 {
                try writeElsewhere(sandbox, theirs, "theirs-\(round)")
                try ours.setObject("ours-\(round + 1)", forKey: .valueData)
                let lookup = try sandbox.secretTool(["lookup", "service", theirs, "username", ""])
                #expect(lookup.text == "theirs-\(round)", "round \(round): our write dropped another process's item")
                #expect(try ours.object(forKey: .valueData) == "ours-\(round + 1)")
            }
        }
    }

    @Test("removed by another process, and written again: the reader sees absence, then the new value")
    func removedAndBack() throws {
        try withSandbox { sandbox in
            let id = uniqueID("gone")
            let store = try SecretStore(identifier: id, keyring: keyring)
            try store.setObject("here", forKey: .valueData)
            #expect(try store.object(forKey: .valueData) == "here")
            try shell(sandbox, "rm -f \"$1\"", [sandbox.keyringPath])
            #expect(try store.object(forKey: .valueData) == nil)
            try writeElsewhere(sandbox, id, "back")
            #expect(try store.object(forKey: .valueData) == "back")
        }
    }

    @Test("a file made anew (another salt, same password) or with another key, renamed over a warm reader's: the new value, or wrongKey")
    func otherSaltOrKey() throws {
        try withSandbox { sandbox in
            let id = uniqueID("salt")
            let store = try SecretStore(identifier: id, keyring: keyring)
            try store.setObject("first", forKey: .valueData)
            #expect(try store.object(forKey: .valueData) == "first")
            // secret-tool makes a new file elsewhere (a new salt), then it is renamed over ours.
            let other = try FileKeyringSandbox(password: sandbox.password)
            defer { other.remove() }
            let made = try other.secretTool(["store", "--label", id, "service", id, "username", ""], stdin: Data("anew".utf8))
            try #require(made.status == 0, "\(made.stderr)")
            try shell(sandbox, "cp \"$1\" \"$2.new\" && mv \"$2.new\" \"$2\"", [other.keyringPath, sandbox.keyringPath])
            #expect(try store.object(forKey: .valueData) == "anew", "missed a file with another salt")
            // The same, keyed by another password: a wrong key, never the old value or absent.
            let foreign = try FileKeyringSandbox()
            defer { foreign.remove() }
            let locked = try foreign.secretTool(["store", "--label", id, "service", id, "username", ""], stdin: Data("other key".utf8))
            try #require(locked.status == 0, "\(locked.stderr)")
            try shell(sandbox, "cp \"$1\" \"$2.new\" && mv \"$2.new\" \"$2\"", [foreign.keyringPath, sandbox.keyringPath])
            let error = keyringError { try store.object(forKey: .valueData) }
            guard case .wrongKey = error else {
                Issue.record("expected wrongKey, got \(String(describing: error))")
                return
            }
        }
    }

    @Test("a file another process is creating under the file lock (GLib writes a new file in place) reads once that change is done")
    func fileBeingCreated() throws {
        try withSandbox { sandbox in
            let id = uniqueID("create")
            let made = try FileKeyringSandbox(password: sandbox.password)
            defer { made.remove() }
            let stored = try made.secretTool(["store", "--label", id, "service", id, "username", ""], stdin: Data("made".utf8))
            try #require(stored.status == 0, "\(stored.stderr)")
            let path = sandbox.keyringPath
            let ready = sandbox.root.appendingPathComponent("ready").path
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            // Holds the lock while the file is empty, as a first change does between GLib's create and its write.
            let writer = try ChildProcess(
                "/usr/bin/flock",
                [path + ".lock", "/bin/sh", "-c", ": > \"$0\"; : > \"$1\"; sleep 1; cat \"$2\" > \"$0\"", path, ready, made.keyringPath]
                    .map { Array($0.utf8) }, environment: sandbox.environment())
            while access(ready, F_OK) != 0 { usleep(10_000) }
            let store = try SecretStore(identifier: id, keyring: keyring)
            #expect(try store.object(forKey: .valueData) == "made", "a file being created read as damaged")
            #expect(try writer.wait().status == 0)
        }
    }

    @Test("threads of one process share the snapshot: every one reads its own latest value")
    func threads() throws {
        try withSandbox { _ in
            let stores = try (0..<6).map { try SecretStore(identifier: uniqueID("thread\($0)"), keyring: keyring) }
            let failures = Guarded(0)
            DispatchQueue.concurrentPerform(iterations: stores.count) { index in
                for round in 0..<8 {
                    do {
                        try stores[index].setObject("t\(index)-\(round)", forKey: .valueData)
                        if try stores[index].object(forKey: .valueData) != "t\(index)-\(round)" { failures.withLock { $0 += 1 } }
                    } catch {
                        failures.withLock { $0 += 1 }
                    }
                }
            }
            #expect(failures.withLock { $0 } == 0)
        }
    }
}
