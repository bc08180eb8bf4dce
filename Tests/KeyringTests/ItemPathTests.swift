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

    /// The item is found while its keyring is locked, and comes back locked, with its attributes;
    /// the daemon restarts (a crash, D-Bus activation) unlocked, numbering its items anew. Its old
    /// path was trusted because it was locked: it read "value 3" and deleted the fourth item.
    @Test(
        "an item found while its keyring was locked is that item after a restart, never the one now at its path",
        .needs(.locking, .listsLockedItems))
    func lockedItemSurvivesRenumbering() throws {
        try requireTestKeyring()
        let id = uniqueID("paths-locked")
        defer { _ = try? Keyring.default.delete(["service": id]) }
        for index in 0..<4 {
            try Keyring.default.store(Data("value \(index)".utf8), attributes: ["service": id, "n": "\(index)"], label: "paths \(index)")
        }
        try Keyring.default.delete(item: try #require(try Keyring.default.search(["service": id, "n": "1"]).first))
        try keyringCtl("lock")
        let third = try #require(try Keyring(unlock: .never).search(["service": id, "n": "2"]).first)
        #expect(third.isLocked, "found while locked: \(third)")
        try keyringCtl("restart")
        #expect(try Keyring.default.secret(of: third) == Data("value 2".utf8), "read through \(third.objectPath)")
        try Keyring.default.delete(item: third)
        let left = try Keyring.default.search(["service": id]).map { $0.attributes["n"] ?? "?" }.sorted()
        #expect(left == ["0", "3"], "deleting the third item through \(third.objectPath) left \(left)")
    }
}
