import Foundation
import Keyring
import TestSupport
import Testing

/// `Keyring.store` and `insertIfAbsent` share `SecretStore`'s cap on a secret's size: a larger
/// one is a clear typed error before anything reaches the daemon, and nothing is created.
@Suite("One size cap for every write")
struct SecretSizeCapTests {
    @Test("store and insertIfAbsent refuse a secret over SecretStore.maximumValueSize with invalidArgument, creating nothing")
    func storeRefusesOversizedSecret() async throws {
        try requireTestKeyring()
        let keyring = Keyring(timeout: .seconds(60))
        let attributes = ["service": uniqueID("size-cap")]
        defer { _ = try? keyring.delete(attributes) }
        let big = Data(count: SecretStore.maximumValueSize + 1)
        let expected = "the secret is \(big.count) bytes; at most \(SecretStore.maximumValueSize) are allowed"
        #expect(keyringError { try keyring.store(big, attributes: attributes, label: "big") } == .invalidArgument(expected))
        #expect(keyringError { try keyring.insertIfAbsent(big, attributes: attributes, label: "big") } == .invalidArgument(expected))
        #expect(await keyringError { try await keyring.store(big, attributes: attributes, label: "big") } == .invalidArgument(expected))
        #expect(try blocking { () throws(KeyringError) in try keyring.search(attributes) }.isEmpty, "nothing was created")
        // The same cap, in the same words, as SecretStore's.
        let store = try SecretStore(identifier: attributes["service"]!, keyring: keyring)
        #expect(
            keyringError { try store.setData(big, forKey: .valueData) }
                == .invalidArgument("the value is \(big.count) bytes; at most \(SecretStore.maximumValueSize) are allowed"))
        try blocking { () throws(KeyringError) in try keyring.store(Data("small".utf8), attributes: attributes, label: "small") }
        #expect(try blocking { () throws(KeyringError) in try keyring.lookup(attributes) } == Data("small".utf8))
    }
}
