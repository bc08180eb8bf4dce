import Foundation
import Keyring
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A watch whose signals are handled late, here by stopping the `idtool item watch` process across
/// a lock and an unlock of its item's collection. KeePassXC takes a locked database's items off the
/// bus with ItemDeleted and puts them back at the unlock with no signal per item, so a watch that
/// took a late ItemDeleted for a deletion lost an item it still had: its next update came as
/// `created`. Runs on every provider (KeePassXC is the one that sends those signals).
@Suite("idtool item watch handles a lock's signals late", .serialized)
struct ItemWatchLockTests {
    @Test(
        "stopped across a lock and an unlock, the watch reports no deletion, and the next update is a change",
        .enabled(if: !TestProvider.usesFileBackend, "the file backend has no lock state"))
    func lateLockSignals() async throws {
        try requireTestKeyring()
        let binary = try #require(Idtool.binary)
        let id = Idtool.uniqueIdentifier("watch-late")
        let store = try SecretStore(identifier: id, keyring: Keyring(timeout: .seconds(20), unlock: .never))
        defer { try? store.reset() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("watch-late-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("watch.out").path
        let watcher = try ChildProcess(
            "/bin/sh", ["-c", "exec \"$0\" item watch \"$1\" > \"$2\"", binary.path, id, output].map { Array($0.utf8) },
            environment: Idtool.baseEnvironment)
        var ended = false
        defer {
            if !ended {
                kill(watcher.pid, SIGCONT)
                kill(watcher.pid, SIGKILL)
                _ = try? watcher.wait()
            }
        }
        func lines() -> [String] {
            ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        func wait(for count: Int, tries: Int = 1000) async -> Bool {
            for _ in 0..<tries where lines().count < count { try? await Task.sleep(for: .milliseconds(20)) }
            return lines().count >= count
        }
        // The watch is on once it reports the item (created, or changed when the first write came before its first look).
        for attempt in 0..<50 where lines().isEmpty {
            try await store.setObject("first \(attempt)", forKey: .valueData)
            _ = await wait(for: 1, tries: 50)
        }
        try #require(lines().first.map(isItemLine) == true, "the watch reported nothing of the item: \(lines())")
        // One write may be reported twice (gnome-keyring signals the secret and the label apart).
        await settle()
        let mark = lines().count

        kill(watcher.pid, SIGSTOP)
        let locked = try Idtool.keyringCtl("lock")
        let unlocked = try Idtool.keyringCtl("unlock")
        kill(watcher.pid, SIGCONT)
        try #require(locked.status == 0 && unlocked.status == 0, "keyring-ctl: \(locked.stderr) \(unlocked.stderr)")

        // Another process (this one) updates the item: a change of an item the watch still has.
        try await store.setObject("second", forKey: .valueData)
        let updated = await waitForItemLine(after: mark)
        await settle()
        kill(watcher.pid, SIGINT)
        let result = try watcher.wait()
        ended = true
        let seen = Array(lines().dropFirst(mark))
        #expect(updated, "no line for the update: \(seen) \(result.stderr)")
        // Where an update replaces the item (oo7-daemon), it is reported as deleted, then created.
        let update = TestProvider.updateReport.map { "\($0) " }
        let deletions = seen.filter { $0.hasPrefix("deleted ") }.count
        #expect(deletions == update.filter { $0 == "deleted " }.count, "a lock is not a deletion: \(seen)")
        let reported = seen.filter { line in update.contains { line.hasPrefix($0) } }.suffix(update.count)
        #expect(
            zip(reported, update).allSatisfy { $0.hasPrefix($1) } && reported.count == update.count,
            "the update is a change of the item the watch had: \(seen)")
        #expect(result.status == 0, "\(result.stderr)")
        print("watch-late \(TestProvider.name): \(seen.map { $0.split(separator: " ").first ?? "" })")

        /// Until no line came for a second (at most 20 s): what the watch had queued is out.
        func settle() async {
            var count = -1
            for _ in 0..<20 where lines().count != count {
                count = lines().count
                try? await Task.sleep(for: .seconds(1))
            }
        }
        func isItemLine(_ line: String) -> Bool { line.hasPrefix("created ") || line.hasPrefix("changed ") }
        func waitForItemLine(after mark: Int) async -> Bool {
            for _ in 0..<1000 {
                if lines().dropFirst(mark).contains(where: isItemLine) { return true }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return false
        }
    }
}
