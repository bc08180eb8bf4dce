import Foundation
import TestSupport
import Testing

/// KWallet's session check (Providers/KWallet+SessionCheck.swift) must not write on read-only calls: a
/// fresh process's `doctor` (Keyring.status) and reads leave no check item; only a write makes one.
@Suite("KWallet session check: reads never write", .serialized)
struct SessionCheckReadOnlyTests {
    static let secretTool = URL(fileURLWithPath: "/usr/bin/secret-tool")

    static func checkItems() throws -> Int {
        let run = try Idtool.runProgram(secretTool, ["search", "--all", "keyring-identity", "session-check"])
        return run.stdoutText.split(separator: "\n").filter { $0.hasPrefix("[/") }.count
    }

    @Test(
        "doctor, a miss and a read in fresh processes create no session-check item; a write does",
        .needs(.checkedSessions))
    func readsDoNotWrite() throws {
        try requireTestKeyring()
        let id = Idtool.uniqueIdentifier("session-check")
        _ = try Idtool.runProgram(Self.secretTool, ["store", "--label=x", "service", id, "username", ""], stdin: Data("value".utf8))
        defer { _ = try? Idtool.runProgram(Self.secretTool, ["clear", "service", id]) }
        _ = try Idtool.runProgram(Self.secretTool, ["clear", "keyring-identity", "session-check"])
        try #require(try Self.checkItems() == 0)

        let doctor = try Idtool.run(["doctor"])
        #expect(doctor.stdoutText.contains("secret service"), "\(doctor.stdoutText)\(doctor.stderr)")
        let miss = try Idtool.run(["item", "get", id + ".missing"])
        #expect(miss.status == 1, "\(miss.stderr)")
        let read = try Idtool.run(["item", "get", id])
        #expect(read.status == 0 && read.stdoutText == "value", "\(read.stderr)")
        #expect(try Self.checkItems() == 0, "a read-only call created the session-check item")

        let write = try Idtool.run(["item", "set", id], stdin: Data("new".utf8))
        #expect(write.status == 0, "\(write.stderr)")
        #expect(try Self.checkItems() == 1)
    }
}
