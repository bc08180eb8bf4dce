import Foundation
import Keyring
import TestSupport
import Testing

@Suite("Error descriptions never contain the secret")
struct ErrorDescriptionTests {
    @Test("errors raised around a stored secret never repeat it")
    func descriptionsDoNotLeakSecret() throws {
        try requireTestKeyring()
        let secret = uniqueSecret()
        let store = try SecretStore(identifier: uniqueID("leak"))
        defer { try? store.reset() }
        try store.setObject(secret, forKey: .valueData)

        var errors: [KeyringError?] = []
        // The secret followed by an invalid byte: readable as data, not as text.
        try store.setData(Data(secret.utf8) + Data([0xFF]), forKey: .valueData)
        errors.append(keyringError { try store.object(forKey: .valueData) })
        #expect(errors.last == .valueIsNotText)
        errors.append(keyringError { try store.setObject(secret + "\0", forKey: .account) })
        errors.append(keyringError { try store.setObject(secret + "\0", forKey: .label) })
        errors.append(keyringError { try store.setObject(String(repeating: secret, count: 200), forKey: .comment) })
        errors.append(keyringError { try store.setData(Data(secret.utf8) + Data([0xFF]), forKey: .generic) })
        errors.append(keyringError {
            try store.setData(Data(String(repeating: secret, count: SecretStore.maximumValueSize / secret.utf8.count + 1).utf8), forKey: .valueData)
        })
        errors.append(keyringError { try Keyring.default.store(Data(secret.utf8), attributes: ["service": secret + "\0"], label: "l") })
        errors.append(keyringError { try Keyring.default.store(Data(secret.utf8), attributes: ["service": "x"], label: secret + "\0") })
        errors.append(keyringError { try Keyring.default.lookup(["service": String(repeating: secret, count: 200)]) })
        errors.append(keyringError { try SecretStore(identifier: secret + "\0") })
        errors.append(keyringError { try SecretStore(identifier: "x", accessGroup: secret + "\0") })

        #expect(errors.count == 11)
        for error in errors {
            #expect(error != nil)
            expectNoSecret(error, secret)
        }
        // Every case's description, given the secret wherever a payload could carry it.
        let all: [KeyringError] = [
            .noSessionBus(detail: "x"), .noSecretService, .locked(itemExists: true), .locked(itemExists: false),
            .noDefaultCollection, .timedOut(seconds: 1.5), .cancelled, .valueIsNotText, .unsupported("x"),
            .valueLost(path: "/org/freedesktop/secrets/collection/kdewallet/1"),
        ]
        for error in all { expectNoSecret(error, secret) }
    }
}
