import Foundation
import Keyring
import TestSupport
import Testing

@Suite("Binary values are stored byte for byte")
struct BinaryValueTests {
    static let samples: [(String, Data)] = [
        ("empty", Data()),
        ("NUL bytes", Data([0, 0, 65, 0, 66, 0])),
        ("invalid UTF-8", Data([0xC3, 0x28, 0xFF, 0xFE, 0x80])),
        ("all 256 byte values", Data((0...255).map { UInt8($0) })),
        ("1 MiB", Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })),
    ]

    @Test("data(forKey:) returns exactly what setData stored", arguments: 0..<samples.count)
    func binaryRoundTrip(index: Int) throws {
        try requireTestKeyring()
        let (name, bytes) = Self.samples[index]
        let store = try SecretStore(identifier: uniqueID("binary"))
        defer { try? store.reset() }
        try store.setData(bytes, forKey: .valueData)
        let read = try #require(try store.data(forKey: .valueData), "\(name): item not found")
        #expect(read == bytes, "\(name): \(read.count) bytes read, \(bytes.count) written")
        // Overwrite with other bytes and back again: still the same single item.
        try store.setData(Data("text".utf8), forKey: .valueData)
        try store.setData(bytes, forKey: .valueData)
        #expect(try store.data(forKey: .valueData) == bytes, "\(name)")
        #expect(try items(service: store.identifier).count == 1)
    }

    @Test("every sample survives a daemon restart byte for byte")
    func binaryAcrossRestart() throws {
        try requireTestKeyring()
        let stores = try Self.samples.map { _ in try SecretStore(identifier: uniqueID("binary-restart")) }
        defer { for store in stores { try? store.reset() } }
        for (store, (_, bytes)) in zip(stores, Self.samples) { try store.setData(bytes, forKey: .valueData) }
        try keyringCtl("restart")
        for (store, (name, bytes)) in zip(stores, Self.samples) {
            let read = try store.data(forKey: .valueData)
            #expect(read == bytes, "\(name): \(read?.count ?? -1) bytes read, \(bytes.count) written")
        }
    }

    /// KWallet stores text/* secrets as text (cut at the first NUL, invalid UTF-8 replaced) and
    /// any other content type byte for byte; gnome-keyring ignores the content type.
    @Test("Keyring.store with application/octet-stream keeps every sample byte for byte, across a daemon restart")
    func octetStreamAcrossRestart() throws {
        try requireTestKeyring()
        let ids = Self.samples.map { _ in uniqueID("octet") }
        defer { for id in ids { _ = try? Keyring.default.delete(["service": id]) } }
        for (id, (_, bytes)) in zip(ids, Self.samples) {
            try Keyring.default.store(bytes, attributes: ["service": id], label: id, contentType: "application/octet-stream")
            #expect(try Keyring.default.lookup(["service": id]) == bytes)
        }
        try keyringCtl("restart")
        for (id, (name, bytes)) in zip(ids, Self.samples) {
            let read = try Keyring.default.lookup(["service": id])
            #expect(read == bytes, "\(name): \(read?.count ?? -1) bytes read, \(bytes.count) written")
        }
    }

    // Issue 34: Keyring.store's content type was text/plain whatever the bytes, which KWallet cuts
    // at a NUL and ksecretd refuses for invalid UTF-8 (leaving an empty item behind). Red before
    // on KWallet (the bytes) and everywhere (the refusal, the type).
    @Test(
        "Keyring.store with no content type keeps every sample byte for byte, sending text/plain only for text",
        .needs(.secretService))
    func defaultContentTypeFitsTheBytes() throws {
        try requireTestKeyring()
        for (name, bytes) in Self.samples + [("text", Data("plain text, ünïcode".utf8))] {
            let id = uniqueID("default-type")
            defer { _ = try? Keyring.default.delete(["service": id]) }
            try Keyring.default.store(bytes, attributes: ["service": id], label: id)
            #expect(try Keyring.default.lookup(["service": id]) == bytes, "\(name)")
            let isText = !bytes.contains(0) && String(validating: bytes, as: UTF8.self) != nil
            let expected = isText || !TestProvider.quirks.keepsContentType ? "text/plain" : "application/octet-stream"
            #expect(try secretContentType(service: id) == expected, "\(name)")
        }
    }

    @Test("a text/* content type for bytes that are not UTF-8 text is refused before anything is written")
    func textTypeForBinaryIsRefused() throws {
        try requireTestKeyring()
        let id = uniqueID("text-binary")
        defer { _ = try? Keyring.default.delete(["service": id]) }
        for (type, bytes) in [("text/plain", Data([0xC3, 0x28, 0xFF])), ("TEXT/x-note", Data([65, 0, 66]))] {
            #expect {
                try Keyring.default.store(bytes, attributes: ["service": id], label: id, contentType: type)
            } throws: { error in
                guard case KeyringError.invalidArgument(let why) = error else { return false }
                return why.contains(type) && why.contains("application/octet-stream")
            }
            #expect(throws: KeyringError.self) {
                try Keyring.default.insertIfAbsent(bytes, attributes: ["service": id], label: id, contentType: type)
            }
        }
        #expect(try Keyring.default.search(["service": id]).isEmpty)
    }

    // Issue 34: ksecretd keeps an item whose type attribute is "map" as a KWallet map, a JSON
    // object of strings, and read other bytes back as "{}". Red before on ksecretd.
    @Test(
        "an item whose type attribute is map reads back its bytes, or is refused before anything is written; a JSON map is always kept",
        .needs(.secretService))
    func typeMapNeverChangesTheValue() throws {
        try requireTestKeyring()
        let id = uniqueID("type-map")
        defer { _ = try? Keyring.default.delete(["service": id]) }
        let other = ["service": id, "type": "map", "n": "1"], map = ["service": id, "type": "map", "n": "2"]
        var refused: KeyringError?
        do { try Keyring.default.store(Data("not a map".utf8), attributes: other, label: id) } catch { refused = error }
        if let error = refused {
            #expect("\(error)".contains("JSON object of strings"), "\(error)")
            #expect(try Keyring.default.search(other).isEmpty)
        } else {
            #expect(try Keyring.default.lookup(other) == Data("not a map".utf8))
        }
        let json = Data(#"{"user":"ann","host":"example.org"}"#.utf8)
        try Keyring.default.store(json, attributes: map, label: id)
        let read = try #require(try Keyring.default.lookup(map))
        #expect(try JSONDecoder().decode([String: String].self, from: read) == ["user": "ann", "host": "example.org"])
    }

    @Test("object(forKey: .valueData) on non-UTF-8 bytes throws valueIsNotText, not nil or garbage")
    func nonTextValueThrows() throws {
        try requireTestKeyring()
        let store = try SecretStore(identifier: uniqueID("nontext"))
        defer { try? store.reset() }
        try store.setData(Data([0x66, 0x6F, 0xFF, 0x6F]), forKey: .valueData)
        #expect(keyringError { try store.object(forKey: .valueData) } == .valueIsNotText)
        #expect(try store.data(forKey: .valueData) == Data([0x66, 0x6F, 0xFF, 0x6F]))
    }

    @Test("a value above maximumValueSize is rejected with invalidArgument and nothing is written")
    func oversizedValueRejected() throws {
        try requireTestKeyring()
        let store = try SecretStore(identifier: uniqueID("oversize"))
        defer { try? store.reset() }
        let error = keyringError { try store.setData(Data(count: SecretStore.maximumValueSize + 1), forKey: .valueData) }
        #expect(error?.isInvalidArgument == true, "\(String(describing: error))")
        #expect(try items(service: store.identifier).isEmpty)
    }

    @Test("metadata keys refuse non-UTF-8 bytes")
    func metadataMustBeText() throws {
        try requireTestKeyring()
        let store = try SecretStore(identifier: uniqueID("metabinary"))
        defer { try? store.reset() }
        for key in SecretStore.Key.allCases where key != .valueData {
            let error = keyringError { try store.setData(Data([0xFF]), forKey: key) }
            #expect(error?.isInvalidArgument == true, "\(key): \(String(describing: error))")
        }
        #expect(try items(service: store.identifier).isEmpty)
    }
}
