// Uses SecretStore's four calls against the real keyring (run it under scripts/with-keyring),
// prints one line, and exits nonzero on any mismatch.
import Foundation
import Keyring

func fail(_ message: String) -> Never {
    print("consumer: FAIL: \(message)")
    exit(1)
}

guard let root = ProcessInfo.processInfo.environment["WITH_KEYRING_ROOT"], !root.isEmpty else {
    fail("run me under scripts/with-keyring; I will not touch your own keyring")
}

do {
    let identifier = "consumer.\(UUID().uuidString)"
    let secret = "consumer-secret-\(UUID().uuidString)"
    let store = try SecretStore(identifier: identifier)
    if let stale = try store.object(forKey: .valueData) { fail("new item already holds \(stale.count) bytes") }
    try store.setObject(secret, forKey: .valueData)
    try store.setObject("consumer", forKey: .account)
    guard try store.object(forKey: .valueData) == secret else { fail("value read back differs") }
    guard try store.object(forKey: .account) == "consumer" else { fail("account read back differs") }
    try store.reset()
    guard try store.object(forKey: .valueData) == nil else { fail("value still present after reset") }
    print("consumer: OK: SecretStore init/setObject/object/reset round trip on \(identifier)")
} catch {
    fail("\(error)")
}
