import Foundation
import Keyring
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `idtool item watch --account A` follows A's item only (issue 32): another account's item of
/// the same identifier, written in between, prints nothing.
@Suite("idtool item watch --account", .serialized, .needs(.secretService))
struct ItemWatchAccountTests {
    @Test("a watch of one account prints that account's changes and none of another account's")
    func oneAccount() async throws {
        try requireTestKeyring()
        let binary = try #require(Idtool.binary)
        let id = Idtool.uniqueIdentifier("watch-account")
        let alice = try SecretStore(identifier: id, account: "alice", keyring: Keyring(timeout: .seconds(20), unlock: .never))
        let bob = try SecretStore(identifier: id, account: "bob", keyring: Keyring(timeout: .seconds(20), unlock: .never))
        defer {
            try? alice.reset()
            try? bob.reset()
        }
        try await bob.setObject("bob's first", forKey: .valueData)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("watch-account-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("watch.out").path
        let watcher = try ChildProcess(
            "/bin/sh",
            ["-c", "exec \"$0\" item watch \"$1\" --account alice --json > \"$2\"", binary.path, id, output].map { Array($0.utf8) },
            environment: Idtool.baseEnvironment)
        var ended = false
        defer {
            if !ended {
                kill(watcher.pid, SIGKILL)
                _ = try? watcher.wait()
            }
        }
        func lines() -> [String] {
            ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        func wait(for count: Int, tries: Int = 2000) async -> Bool {
            for _ in 0..<tries where lines().count < count { try? await Task.sleep(for: .milliseconds(20)) }
            return lines().count >= count
        }
        // The watch is on once it reports alice's item.
        for attempt in 0..<50 where lines().isEmpty {
            try await alice.setObject("alice \(attempt)", forKey: .valueData)
            _ = await wait(for: 1, tries: 50)
        }
        try #require(!lines().isEmpty, "the watch reported nothing of alice's item")
        // bob's update, then alice's: the watch handles them in order, so once alice's is printed,
        // bob's was handled and printed nothing.
        let mark = lines().count
        try await bob.setObject("bob's second", forKey: .valueData)
        try await bob.reset()
        try await alice.setObject("alice's last", forKey: .valueData)
        #expect(await wait(for: mark + 1), "no line for alice's update: \(lines())")
        kill(watcher.pid, SIGINT)
        let result = try watcher.wait()
        ended = true
        #expect(result.status == 0, "\(result.stderr)")
        let seen = lines()
        // Every line is alice's item, or a lock or service line (no item, so null).
        #expect(
            seen.allSatisfy { $0.contains(#""account":"alice""#) || $0.contains(#""account":null"#) },
            "another account's changes printed: \(seen)")
        #expect(seen.contains { $0.contains(#""account":"alice""#) }, "alice's changes not printed: \(seen)")
    }
}
