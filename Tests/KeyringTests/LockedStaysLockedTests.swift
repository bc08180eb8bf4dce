import Foundation
import Keyring
import Testing
import TestSupport

/// An item or collection that reports Locked is never trusted: KWallet answers GetSecret on a
/// locked wallet with an empty secret, ignores SetSecret and "deletes" by hiding the item until
/// the wallet opens again. Each call below uses an item found while the keyring was unlocked,
/// so only the call itself can notice the lock.
@Suite("Locked stays locked", .needs(.locking))
struct LockedStaysLockedTests {
    @Test("secret(of:) an item found before the keyring locked throws locked, never an empty value")
    func staleItemSecretIsLocked() throws {
        try requireTestKeyring()
        let id = uniqueID("stale-read")
        try Keyring.default.store(Data("value".utf8), attributes: ["service": id], label: id)
        let item = try #require(try Keyring.default.search(["service": id]).first)
        #expect(!item.isLocked)
        // Restart even when locking itself fails half-way, so later tests find a usable keyring.
        defer { restartKeyring() }
        try lockKeyring()
        #expect(keyringError { try Keyring(unlock: .never).secret(of: item) }?.isLocked == true)  // .never: the locked path itself
        try keyringCtl("unlock")
        #expect(try Keyring.default.secret(of: item) == Data("value".utf8))
        try Keyring.default.delete(["service": id])
    }

    @Test("delete(item:) of an item found before the keyring locked throws locked and deletes nothing")
    func staleItemDeleteIsLocked() throws {
        try requireTestKeyring()
        let id = uniqueID("stale-delete")
        try Keyring.default.store(Data("value".utf8), attributes: ["service": id], label: id)
        let item = try #require(try Keyring.default.search(["service": id]).first)
        // Restart even when locking itself fails half-way, so later tests find a usable keyring.
        defer { restartKeyring() }
        try lockKeyring()
        #expect(keyringError { try Keyring(unlock: .never).delete(item: item) }?.isLocked == true)  // .never: the locked path itself
        try keyringCtl("unlock")
        #expect(try Keyring.default.lookup(["service": id]) == Data("value".utf8))
        try Keyring.default.delete(["service": id])
    }

    @Test("an empty secret stays a value when the item is unlocked")
    func emptySecretOfUnlockedItem() throws {
        try requireTestKeyring()
        let id = uniqueID("empty")
        try Keyring.default.store(Data(), attributes: ["service": id], label: id, contentType: "application/octet-stream")
        defer { _ = try? Keyring.default.delete(["service": id]) }
        let item = try #require(try Keyring.default.search(["service": id]).first)
        #expect(try Keyring.default.secret(of: item) == Data())
        #expect(try Keyring.default.lookup(["service": id]) == Data())
    }
}
