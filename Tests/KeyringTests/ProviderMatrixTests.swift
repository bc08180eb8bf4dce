// Behaviour that must hold on every provider (scripts/test runs these against gnome-keyring and
// KeePassXC): values kept byte for byte, one item per store, provider-added attributes ignored.
import Foundation
import Keyring
import Testing
import TestSupport

@Suite("Values and items are the same on every provider", .serialized)
struct ProviderMatrixTests {
    /// Values KeePassXC's password field would change: placeholders are resolved on read and NUL
    /// bytes dropped on save. Plus binary, empty and large values.
    static let values: [(String, Data)] = [
        ("placeholder", Data("x{TITLE}y".utf8)),
        ("reference look-alike", Data("{REF:x} and {REF:Q@I:0} and {USERNAME}".utf8)),
        ("NUL in text", Data("before\u{0}after".utf8)),
        ("binary", Data([0, 255, 1, 254, 0x7B, 0x7D])),
        ("empty", Data()),
        ("1 MiB", Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })),
    ]

    @Test("SecretStore values round-trip byte for byte, also after the provider restarts")
    func valuesRoundTripAcrossRestart() throws {
        try requireTestKeyring()
        var stores: [(String, SecretStore, Data)] = []
        for (name, value) in Self.values {
            let store = try SecretStore(identifier: uniqueID("fidelity"))
            try store.setData(value, forKey: .valueData)
            stores.append((name, store, value))
        }
        let text = try SecretStore(identifier: uniqueID("fidelity-text"))
        try text.setObject("x{TITLE}y\u{0}z", forKey: .valueData)
        defer {
            for (_, store, _) in stores { try? store.reset() }
            try? text.reset()
        }
        for (name, store, value) in stores {
            #expect(try store.data(forKey: .valueData) == value, "\(name) before the restart")
        }
        #expect(try text.object(forKey: .valueData) == "x{TITLE}y\u{0}z")
        try keyringCtl("restart")
        for (name, store, value) in stores {
            #expect(try store.data(forKey: .valueData) == value, "\(name) after the restart")
        }
        #expect(try text.object(forKey: .valueData) == "x{TITLE}y\u{0}z")
    }

    /// KeePassXC 2.7 refuses (InvalidArgs) any secret holding a field reference, whatever its
    /// content type, and a refused creation leaves an empty item behind; the library refuses first.
    @Test("a value with a {REF:…} field reference round-trips, or on KeePassXC is refused before anything is written")
    func fieldReference() throws {
        try requireTestKeyring()
        let value = Data("{REF:P@I:0123456789ABCDEF0123456789ABCDEF} and {USERNAME}".utf8)
        let store = try SecretStore(identifier: uniqueID("reference"))
        defer { try? store.reset() }
        if TestProvider.quirks.rejectsFieldReferences {
            let error = keyringError { try store.setData(value, forKey: .valueData) }
            #expect(error?.isInvalidArgument == true, "\(String(describing: error))")
            #expect(try store.storedItem() == nil, "no empty item is left behind")
            try store.setObject("before", forKey: .valueData)
            let update = keyringError { try store.setData(value, forKey: .valueData) }
            #expect(update?.isInvalidArgument == true, "\(String(describing: update))")
            #expect(try store.object(forKey: .valueData) == "before")
        } else {
            try store.setData(value, forKey: .valueData)
            #expect(try store.data(forKey: .valueData) == value)
        }
    }

    @Test("SecretStore writes values as application/octet-stream, which secret-tool and python-keyring still read as text", .needs(.secretService))
    func valueContentType() throws {
        try requireTestKeyring()
        let id = uniqueID("content-type")
        let store = try SecretStore(identifier: id)
        defer { try? store.reset() }
        try store.setObject("plain {TITLE} text", forKey: .valueData)
        try store.setObject("bob", forKey: .account)
        let lookup = try mustRun(secretTool, ["lookup", "service", id, "username", "bob"])
        #expect(lookup.text == "plain {TITLE} text")
        let viaPython = try mustRun(
            python, ["-c", "import keyring, sys; print(keyring.get_password(sys.argv[1], 'bob'), end='')", id],
            environment: pythonEnvironment)
        #expect(viaPython.text == "plain {TITLE} text")
        // gnome-keyring does not keep content types: it reports every secret as text/plain.
        #expect(try secretContentType(service: id) == (TestProvider.quirks.keepsContentType ? SecretStore.valueContentType : "text/plain"))
    }

    @Test("Keyring.store run three times leaves one item with the last secret")
    func storeThriceMakesOneItem() throws {
        try requireTestKeyring()
        let id = uniqueID("store-thrice")
        let attributes = ["service": id, "username": "u"]
        defer { _ = try? Keyring.default.delete(attributes) }
        for round in 1...3 {
            try Keyring.default.store(Data("round \(round)".utf8), attributes: attributes, label: "store thrice")
        }
        #expect(try Keyring.default.search(attributes).count == 1)
        #expect(try Keyring.default.lookup(attributes) == Data("round 3".utf8))
    }

    @Test("metadata updates keep the item, its value and other clients' attributes")
    func metadataUpdates() throws {
        try requireTestKeyring()
        let id = uniqueID("metadata")
        let store = try SecretStore(identifier: id)
        defer { try? store.reset() }
        try store.setObject("value", forKey: .valueData)
        for key in [SecretStore.Key.account, .description, .comment, .label] {
            try store.setObject("first \(key.rawValue)", forKey: key)
            try store.setObject("second \(key.rawValue)", forKey: key)
            #expect(try store.object(forKey: key) == "second \(key.rawValue)")
        }
        #expect(try store.object(forKey: .valueData) == "value")
        #expect(try Keyring.default.search(["service": id]).count == 1)
    }

    /// An update the provider answered is kept: oo7-daemon keeps `Item.SetSecret` and the item's
    /// Label and Attributes in memory only, and its restart brought the old item back.
    @Test("updates of a value, its metadata and a stored item survive the provider's restart", .needs(.secretService))
    func updatesSurviveRestart() throws {
        try requireTestKeyring()
        let id = uniqueID("update-restart")
        let store = try SecretStore(identifier: id)
        let attributes = ["service": uniqueID("update-restart-store"), "username": "u"]
        defer {
            try? store.reset()
            _ = try? Keyring.default.delete(attributes)
        }
        try store.setObject("first", forKey: .valueData)
        try store.setObject("second", forKey: .valueData)
        try store.setObject("an account", forKey: .account)
        try store.setObject("a label", forKey: .label)
        // Last: an attribute the item did not have. oo7-daemon's Delete of the old item also takes
        // from its file every item whose attributes include the old one's, the new one too.
        try store.setObject("a description", forKey: .description)
        try Keyring.default.store(Data("first".utf8), attributes: attributes, label: "stored")
        try Keyring.default.store(Data("second".utf8), attributes: attributes, label: "stored again")
        try keyringCtl("restart")
        #expect(try store.object(forKey: .valueData) == "second")
        #expect(try store.object(forKey: .account) == "an account")
        #expect(try store.object(forKey: .label) == "a label")
        #expect(try store.object(forKey: .description) == "a description")
        #expect(try store.object(forKey: .valueData) == "second", "and the value with them")
        #expect(try Keyring.default.lookup(attributes) == Data("second".utf8))
        let items = try Keyring.default.search(attributes)
        #expect(items.map(\.label) == ["stored again"], "one item, with the last label")
        #expect(try Keyring.default.search(["service": id]).count == 1, "the updates made no second item")
    }

    /// Deleting an item leaves every other one, also another client's whose attributes include its
    /// own: oo7-daemon's Delete removes all of those from its file, and its restart lost them.
    @Test("deleting an item keeps another client's item with more attributes, across the provider's restart", .needs(.secretService))
    func deleteKeepsWiderItems() throws {
        try requireTestKeyring()
        let service = uniqueID("delete-wider")
        let narrow = ["service": service]
        defer { _ = try? Keyring.default.delete(narrow) }
        try Keyring.default.store(Data("narrow".utf8), attributes: narrow, label: "narrow")
        try Keyring.default.store(Data("updated".utf8), attributes: narrow, label: "narrow")
        // Every attribute the item has (the provider's and this library's too), and one more;
        // not KeePassXC's own, which name its entry (Uuid, Path) and no client sets.
        let item = try #require(try Keyring.default.search(narrow).first)
        let keePassXCOwn: Set = ["Title", "UserName", "URL", "Notes", "Uuid", "Path"]
        let wide = item.attributes.filter { !TestProvider.isKeePassXC || !keePassXCOwn.contains($0.key) }.merging(["username": "bob"]) { $1 }
        try mustRun(secretTool, ["store", "--label", "wide"] + wide.flatMap { [$0.key, $0.value] }, input: Data("bob's".utf8))
        try Keyring.default.delete(item: item)
        try keyringCtl("restart")
        #expect(try mustRun(secretTool, ["lookup", "service", service, "username", "bob"]).text == "bob's")
        #expect(try Keyring.default.search(narrow).map(\.label) == ["wide"], "the wider item, once")
        // Both at once, the narrower made first: each is deleted, none saved again, and none back.
        #expect(try Keyring.default.delete(narrow) == 1)
        try Keyring.default.store(Data("narrow".utf8), attributes: narrow, label: "narrow")
        let again = try #require(try Keyring.default.search(narrow).first)
        let wideAgain = again.attributes.filter { !TestProvider.isKeePassXC || !keePassXCOwn.contains($0.key) }.merging(["username": "bob"]) { $1 }
        try mustRun(secretTool, ["store", "--label", "wide"] + wideAgain.flatMap { [$0.key, $0.value] }, input: Data("bob's".utf8))
        #expect(try Keyring.default.delete(narrow) == 2)
        try keyringCtl("restart")
        #expect(try Keyring.default.search(narrow).isEmpty)
    }
}
