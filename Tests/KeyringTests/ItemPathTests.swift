import Foundation
import Keyring
import TestSupport
import Testing

/// An item from a search keeps naming that item after the daemon restarts. KWallet numbers its
/// items' paths anew on every start: after a deletion and a restart, an earlier search's path
/// named the next item, so `secret(of:)` read another item's value and `delete(item:)` deleted
/// another item (issue 34).
@Suite("An item from a search is the same item after a restart", .serialized, .needs(.secretService))
struct ItemPathTests {
    @Test("after a deletion and a restart, secret(of:) and delete(item:) act on the item searched, never on another")
    func itemSurvivesRenumbering() throws {
        try requireTestKeyring()
        let id = uniqueID("paths")
        defer { _ = try? Keyring.default.delete(["service": id]) }
        for index in 0..<4 {
            try Keyring.default.store(Data("value \(index)".utf8), attributes: ["service": id, "n": "\(index)"], label: "paths \(index)")
        }
        func found(_ index: Int) throws -> KeyringItem {
            try #require(try Keyring.default.search(["service": id, "n": "\(index)"]).first)
        }
        let third = try found(2), fourth = try found(3)
        try Keyring.default.delete(item: try found(1))
        try keyringCtl("restart")
        #expect(try Keyring.default.secret(of: third) == Data("value 2".utf8), "read through \(third.objectPath)")
        #expect(try Keyring.default.secret(of: fourth) == Data("value 3".utf8), "read through \(fourth.objectPath)")
        try Keyring.default.delete(item: third)
        let left = try Keyring.default.search(["service": id]).map { $0.attributes["n"] ?? "?" }.sorted()
        #expect(left == ["0", "3"], "deleting the third item through \(third.objectPath) left \(left)")
    }
}
