import Foundation
import TestSupport
import Testing

/// libsecret's file backend (a sandboxed app's keyring) and oo7's file keyring API
/// (`oo7::file`, which Flatpak apps built on oo7 use) read and write one keyring file, both
/// directions, byte for byte and per account. idtool runs the library under SECRET_BACKEND=file;
/// oo7-client is Tests/OO7Client (`scripts/debian forky --build-only`).
@Suite("oo7 and the file backend share one keyring file", .needs(.oo7Client))
struct OO7FileInteropTests {
    @Test("oo7 reads what idtool item set wrote to the file, and idtool reads what oo7 wrote, per account")
    func bothDirections() throws {
        let client = URL(fileURLWithPath: try #require(ProcessInfo.processInfo.environment["OO7_CLIENT"]))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oo7-file-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("default.keyring").path
        var environment = Idtool.baseEnvironment
        environment["SECRET_BACKEND"] = "file"
        environment["SECRET_FILE_TEST_PATH"] = path
        environment["SECRET_FILE_TEST_PASSWORD"] = "oo7-interop-\(UUID().uuidString)"
        let id = uniqueID("oo7-file")
        let ours = Data([0, 255, 128]) + Data("from idtool\n".utf8)
        let theirs = Data([1, 254]) + Data("from oo7 ✓".utf8)

        let set = try Idtool.run(["item", "set", id, "--account", "alice"], stdin: ours, environment: environment)
        #expect(set.status == 0, "\(set.stderr)")
        let read = try Idtool.runProgram(client, ["file-lookup", path, "service=\(id)", "username=alice"], environment: environment)
        #expect(read.status == 0, "\(read.stderr)")
        #expect(read.stdout == ours)

        let stored = try Idtool.runProgram(
            client, ["--blob", "file-store", path, "from oo7", "service=\(id)", "username=bob"], stdin: theirs, environment: environment)
        #expect(stored.status == 0, "\(stored.stderr)")
        let got = try Idtool.run(["item", "get", id, "--account", "bob"], environment: environment)
        #expect(got.status == 0, "\(got.stderr)")
        #expect(got.stdout == theirs)
        // oo7 rewrote the file: the library still reads its own item, unchanged.
        #expect(try Idtool.run(["item", "get", id, "--account", "alice"], environment: environment).stdout == ours)
    }
}
