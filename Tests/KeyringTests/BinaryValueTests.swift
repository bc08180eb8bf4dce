import Foundation
import Keyring
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
