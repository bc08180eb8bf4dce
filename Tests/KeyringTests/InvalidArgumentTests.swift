import Foundation
import Keyring
import TestSupport
import Testing

/// Bad input is refused in Swift with invalidArgument. The suite runs with
/// G_DEBUG=fatal-criticals, and a log handler counts criticals too, so libsecret never sees it.
@Suite("Invalid arguments")
struct InvalidArgumentTests {
    static func expectInvalid<T>(
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T
    ) {
        let before = criticalCount.load(ordering: .sequentiallyConsistent)
        let error = keyringError(sourceLocation: sourceLocation, body)
        #expect(error?.isInvalidArgument == true, "\(what): \(String(describing: error))", sourceLocation: sourceLocation)
        #expect(criticalCount.load(ordering: .sequentiallyConsistent) == before, "\(what) logged a GLib critical",
                sourceLocation: sourceLocation)
    }

    static let manyAttributes = Dictionary(uniqueKeysWithValues: (0..<33).map { ("a\($0)", "v") })

    @Test("SecretStore refuses an empty identifier, an empty group and NUL bytes")
    func secretStoreArguments() throws {
        try requireTestKeyring()
        Self.expectInvalid("empty identifier") { try SecretStore(identifier: "") }
        Self.expectInvalid("empty access group") { try SecretStore(identifier: uniqueID(), accessGroup: "") }
        Self.expectInvalid("NUL in identifier") { try SecretStore(identifier: "a\0b") }
        Self.expectInvalid("NUL in access group") { try SecretStore(identifier: uniqueID(), accessGroup: "g\0") }

        let store = try SecretStore(identifier: uniqueID("invalid"))
        defer { try? store.reset() }
        Self.expectInvalid("NUL in .account") { try store.setObject("al\0ice", forKey: .account) }
        Self.expectInvalid("NUL in .label") { try store.setObject("la\0bel", forKey: .label) }
        Self.expectInvalid("NUL in .comment") { try store.setObject("\0", forKey: .comment) }
        Self.expectInvalid("NUL in .account bytes") { try store.setData(Data([0x61, 0]), forKey: .account) }
        #expect(try items(service: store.identifier).isEmpty)
        // A NUL in the value itself is fine: the value is binary-safe.
        try store.setObject("a\0b", forKey: .valueData)
        #expect(try store.object(forKey: .valueData) == "a\0b")
    }

    @Test("Keyring refuses empty, reserved, NUL-carrying and too many attributes")
    func keyringAttributes() throws {
        try requireTestKeyring()
        let keyring = Keyring.default
        let secret = Data("x".utf8)
        Self.expectInvalid("lookup([:])") { try keyring.lookup([:]) }
        Self.expectInvalid("delete([:])") { try keyring.delete([:]) }
        Self.expectInvalid("store with [:]") { try keyring.store(secret, attributes: [:], label: "l") }
        Self.expectInvalid("firstItem([:])") { try keyring.firstItem([:]) }
        let cases: [(String, [String: String])] = [
            ("empty attribute name", ["": "v"]),
            ("xdg:foo", ["xdg:foo": "v"]),
            ("NUL in attribute value", ["service": "a\0b"]),
            ("NUL in attribute name", ["ser\0vice": "v"]),
            ("33 attributes", Self.manyAttributes),
        ]
        for (what, attributes) in cases {
            Self.expectInvalid("search: \(what)") { try keyring.search(attributes) }
            Self.expectInvalid("lookup: \(what)") { try keyring.lookup(attributes) }
            Self.expectInvalid("store: \(what)") { try keyring.store(secret, attributes: attributes, label: "l") }
            Self.expectInvalid("delete: \(what)") { try keyring.delete(attributes) }
        }
        Self.expectInvalid("NUL in label") { try keyring.store(secret, attributes: ["service": uniqueID()], label: "a\0") }
        Self.expectInvalid("NUL in content type") {
            try keyring.store(secret, attributes: ["service": uniqueID()], label: "l", contentType: "text/\0plain")
        }
    }

    @Test("secret(of:) and delete(item:) refuse an item whose path is no D-Bus object path", .needs(.secretService))
    func itemPathIsNoObjectPath() throws {
        try requireTestKeyring()
        let id = uniqueID("invalid-path")
        let keyring = Keyring.default
        defer { _ = try? keyring.delete(["service": id]) }
        try keyring.store(Data("kept".utf8), attributes: ["service": id], label: "l")
        let real = try #require(try keyring.search(["service": id]).first)
        // A file-backend item's name, and strings GLib's object-path builders refuse.
        for path in ["file:0123abcd", "", "relative/path", "/trailing/", "/double//slash", "/bad-char", "/\0"] {
            let item = KeyringItem(
                objectPath: path, attributes: real.attributes, label: real.label, isLocked: false, created: real.created,
                modified: real.modified)
            Self.expectInvalid("secret(of: \(path))") { try keyring.secret(of: item) }
            Self.expectInvalid("delete(item: \(path))") { try keyring.delete(item: item) }
        }
        #expect(try keyring.lookup(["service": id]) == Data("kept".utf8))
    }

    @Test("async variants refuse bad attributes the same way")
    func asyncAttributes() async throws {
        try requireTestKeyring()
        let before = criticalCount.load(ordering: .sequentiallyConsistent)
        #expect(await keyringError { try await Keyring.default.lookup([:]) }?.isInvalidArgument == true)
        #expect(await keyringError { try await Keyring.default.search(["xdg:foo": "v"]) }?.isInvalidArgument == true)
        #expect(await keyringError { try await Keyring.default.store(Data(), attributes: Self.manyAttributes, label: "l") }?.isInvalidArgument == true)
        let store = try SecretStore(identifier: uniqueID("invalid-async"))
        #expect(await keyringError { try await store.setObject("a\0", forKey: .account) }?.isInvalidArgument == true)
        #expect(criticalCount.load(ordering: .sequentiallyConsistent) == before)
    }
}
