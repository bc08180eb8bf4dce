import Foundation
import TestSupport
import Testing

/// A daemon that acknowledged a reset and then lost it: it restarted from a keyring file written
/// before the reset (the write was acknowledged but never saved, or the file came back from an
/// older copy). The reset identifier is back in the keyring, and its reset record is gone. The
/// environment that reset knows it, and must never hand that identifier out again.
@Suite(
    "A reset the daemon lost stays a reset", .serialized, .needs(.secretService),
    .enabled(if: TestProvider.isGnomeKeyring, "gnome-keyring, whose keyring files the test puts back"))
struct LostResetTests {
    static var keyrings: URL {
        URL(fileURLWithPath: ProcessInfo.processInfo.environment["XDG_DATA_HOME"] ?? "/nonexistent").appendingPathComponent("keyrings")
    }

    /// Copies the daemon's keyring files to `saved`, or puts them back from it (the daemon stopped).
    static func copyKeyrings(from source: URL, to target: URL) throws {
        let fm = FileManager.default
        try? fm.removeItem(at: target)
        try fm.copyItem(at: source, to: target)
    }

    @Test("get after the daemon lost a reset gives a new identifier, never the reset one, and keeps it")
    func lostResetStaysReset() throws {
        try requireTestKeyring()
        let app = "test.idtool.lost-reset.\(UUID().uuidString.lowercased())"
        let saved = FileManager.default.temporaryDirectory.appendingPathComponent("keyrings-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: saved) }

        let old = try Idtool.run(["get", "--app", app])
        try #require(old.status == 0, "\(old.stderr)")
        try Self.copyKeyrings(from: Self.keyrings, to: saved)  // gnome-keyring writes each change at once
        let reset = try Idtool.run(["reset", "--app", app])
        try #require(reset.status == 0, "\(reset.stderr)")

        // The daemon loses the reset: it starts again from the files as they were before it.
        try #require(try Idtool.keyringCtl("stop").status == 0)
        try Self.copyKeyrings(from: saved, to: Self.keyrings)
        try #require(try Idtool.keyringCtl("start").status == 0)

        let next = try Idtool.run(["get", "--app", app])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(next.stdoutText != old.stdoutText, "the reset identifier came back")
        let again = try Idtool.run(["get", "--app", app])
        #expect(again.stdoutText == next.stdoutText, "the new identifier changed: \(again.stderr)")
        _ = try Idtool.run(["reset", "--app", app])
    }
}
