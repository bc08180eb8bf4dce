import Foundation
import Keyring
import Testing
import TestSupport

/// oo7 (GNOME's Rust Secret Service library, the client side of oo7-daemon) and this library read
/// each other's items over D-Bus, byte for byte and per account, under the interop contract
/// (service = identifier, username = account). oo7-client is Tests/OO7Client, built with Debian
/// 14's librust-oo7-dev 0.6 (`scripts/debian forky --build-only`); no Debian release packages an
/// oo7 program, and PyPI has no oo7-python.
@Suite("Interop with oo7, both directions", .needs(.secretService, .oo7Client))
struct OO7InteropTests {
    static var client: String { ProcessInfo.processInfo.environment["OO7_CLIENT"] ?? "oo7-client" }

    /// Bytes no text encoding keeps: a NUL, invalid UTF-8, a trailing newline.
    static func binary(_ tag: String) -> Data { Data([0, 255, 128]) + Data(tag.utf8) + Data([10]) }

    @Test("oo7 reads what SecretStore wrote, byte for byte and per account; its clear removes one account's item")
    func oo7ReadsSecretStore() throws {
        try requireTestKeyring()
        let id = uniqueID("oo7-out")
        let alice = try SecretStore(identifier: id, account: "alice"), bob = try SecretStore(identifier: id, account: "bob")
        defer {
            try? alice.reset()
            try? bob.reset()
        }
        try alice.setData(Self.binary("alice"), forKey: .valueData)
        try bob.setObject("bob's ✓ text", forKey: .valueData)
        let readAlice = try mustRun(Self.client, ["lookup", "service=\(id)", "username=alice"])
        #expect(readAlice.stdout == Self.binary("alice"))
        let readBob = try mustRun(Self.client, ["lookup", "service=\(id)", "username=bob"])
        #expect(readBob.stdout == Data("bob's ✓ text".utf8))
        try mustRun(Self.client, ["clear", "service=\(id)", "username=alice"])
        #expect(try alice.data(forKey: .valueData) == nil)
        #expect(try bob.object(forKey: .valueData) == "bob's ✓ text")
    }

    @Test("SecretStore reads what oo7 stored, byte for byte and per account, and updates oo7's item in place")
    func secretStoreReadsOO7() throws {
        try requireTestKeyring()
        let id = uniqueID("oo7-in")
        try mustRun(Self.client, ["--blob", "store", "from oo7", "service=\(id)", "username=alice"], input: Self.binary("alice"))
        try mustRun(Self.client, ["--text", "store", "from oo7", "service=\(id)", "username=bob"], input: Data("bob ✓".utf8))
        let alice = try SecretStore(identifier: id, account: "alice"), bob = try SecretStore(identifier: id, account: "bob")
        defer {
            try? alice.reset()
            try? bob.reset()
        }
        #expect(try alice.data(forKey: .valueData) == Self.binary("alice"))
        #expect(try bob.object(forKey: .valueData) == "bob ✓")
        #expect(try alice.object(forKey: .label) == "from oo7")
        // An update goes to oo7's item, which oo7 then reads: no second item beside it.
        try alice.setData(Self.binary("again"), forKey: .valueData)
        #expect(try mustRun(Self.client, ["lookup", "service=\(id)", "username=alice"]).stdout == Self.binary("again"))
        #expect(try secretToolCount(service: id) == 2)
    }
}
