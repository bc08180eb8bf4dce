import Foundation
import Keyring
import Testing
import TestSupport

@Suite("The lower-level Keyring: items by attribute dictionary")
struct KeyringAttributeTests {
    @Test("store, lookup, search and delete by attributes; storing the same attributes replaces the one item")
    func storeLookupSearchDelete() throws {
        try requireTestKeyring()
        let keyring = Keyring.default
        let id = uniqueID("kr")
        let attributes = ["service": id, "username": "u", "extra": "1"]
        defer { _ = try? keyring.delete(["service": id]) }

        #expect(try keyring.lookup(attributes) == nil)
        #expect(try keyring.search(attributes).isEmpty)

        try keyring.store(Data("one".utf8), attributes: attributes, label: "first label")
        try keyring.store(Data("two".utf8), attributes: attributes, label: "second label")
        let found = try keyring.search(attributes)
        #expect(found.count == 1)
        #expect(found.first?.label == "second label")
        #expect(found.first?.isLocked == false)
        #expect(found.first?.attributes["extra"] == "1")
        #expect(found.first?.created != nil)
        #expect(try keyring.lookup(attributes) == Data("two".utf8))
        #expect(try keyring.lookup(["service": id]) == Data("two".utf8))   // a subset matches
        #expect(try secretToolCount(service: id) == 1)
        let first = try #require(try keyring.firstItem(["service": id]))
        #expect(first.secret == Data("two".utf8))
        #expect(first.item.attributes["username"] == "u")

        // Different attributes make a second item; a search by the shared subset sees both.
        try keyring.store(Data([0, 1, 2]), attributes: ["service": id, "username": "v"], label: "other", contentType: "application/octet-stream")
        #expect(try keyring.search(["service": id]).count == 2)
        #expect(try keyring.lookup(["service": id, "username": "v"]) == Data([0, 1, 2]))

        #expect(try keyring.delete(["service": id, "username": "u"]) == 1)
        #expect(try keyring.lookup(attributes) == nil)
        #expect(try keyring.search(["service": id]).count == 1)
        #expect(try keyring.delete(["service": id]) == 1)
        #expect(try keyring.delete(["service": id]) == 0)
        #expect(try keyring.search(["service": id]).isEmpty)
    }

    /// oo7-daemon keeps each item's content type as an attribute, `xdg:content-type` (read in its
    /// source): a store of the same attributes must still update that item, never make a twin.
    @Test("a provider's own xdg:content-type attribute (oo7-daemon's) is left out of a store's comparison: no twin", .needs(.secretService))
    func providerContentTypeAttribute() throws {
        try requireTestKeyring()
        let id = uniqueID("kr-oo7")
        defer { _ = try? Keyring.default.delete(["service": id]) }
        // The item as oo7-daemon keeps it: the client's attributes and its content type.
        try mustRun(secretTool, ["store", "--label", "oo7-like", "service", id, "username", "u", "xdg:content-type", "text/plain"], input: Data("one".utf8))
        try Keyring.default.store(Data("two".utf8), attributes: ["service": id, "username": "u"], label: "updated")
        #expect(try Keyring.default.search(["service": id]).count == 1)
        #expect(try Keyring.default.lookup(["service": id, "username": "u"]) == Data("two".utf8))
    }

    @Test("lookup of a miss returns nil, not an error")
    func lookupMissIsNil() throws {
        try requireTestKeyring()
        #expect(try Keyring.default.lookup(["service": uniqueID("miss")]) == nil)
        #expect(try Keyring.default.firstItem(["service": uniqueID("miss")]) == nil)
    }

    @Test("status names the provider's process, with an unlocked default collection", .needs(.secretService))
    func statusIsHealthy() async throws {
        try requireTestKeyring()
        let status = blockingStatus()
        #expect(status.isReachable)
        #expect(status.provider == TestProvider.processName)
        #expect(status.hasDefaultCollection)
        #expect(!status.isLocked)
        #expect(status.problem == nil)
        #expect(status.defaultCollectionLabel != nil)
        #expect(await Keyring.default.status() == status)
    }

    @Test("async Keyring calls store, look up, search and delete")
    func asyncKeyring() async throws {
        try requireTestKeyring()
        let keyring = Keyring.default
        let id = uniqueID("kr-async")
        try await keyring.store(Data("a".utf8), attributes: ["service": id], label: "l")
        try await keyring.store(Data("b".utf8), attributes: ["service": id], label: "l")
        #expect(try await keyring.lookup(["service": id]) == Data("b".utf8))
        #expect(try await keyring.search(["service": id]).count == 1)
        #expect(try await keyring.delete(["service": id]) == 1)
        #expect(try await keyring.lookup(["service": id]) == nil)
    }

    @Test("async SecretStore calls round-trip every key, bytes, and reset")
    func asyncSecretStore() async throws {
        try requireTestKeyring()
        let store = try SecretStore(identifier: uniqueID("store-async"))
        for key in SecretStore.Key.allCases {
            try await store.setObject("v-\(key.rawValue)", forKey: key)
        }
        for key in SecretStore.Key.allCases {
            #expect(try await store.object(forKey: key) == "v-\(key.rawValue)")
        }
        try await store.setData(Data([0, 0xFF]), forKey: .valueData)
        #expect(try await store.data(forKey: .valueData) == Data([0, 0xFF]))
        #expect(try items(service: store.identifier).count == 1)
        try await store.reset()
        #expect(try await store.object(forKey: .valueData) == nil)
        #expect(try await store.data(forKey: .account) == nil)
    }
}
