// Uses SecretStore's four calls against the real keyring (run it under scripts/with-keyring),
// then runs the getting-started articles of both libraries' DocC catalogs and checks what
// their comments promise. It prints one line per part, and exits nonzero on any mismatch.
//
// Each `docs-snippet` region below is a Swift code block of an article, byte for byte, in the
// article's order; `scripts/docs` fails when they differ. Edit both together.
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

// MARK: Keyring getting-started article

// docs-snippet begin: Sources/Keyring/Documentation.docc/GettingStarted.md #1
import Foundation
import Keyring

// One keyring item per (identifier, access group). Nothing is read or written yet.
let store = try SecretStore(identifier: "com.example.app")

// The first write creates the item; later writes update that same item.
try store.setObject("s3cr3t-token", forKey: .valueData)   // the secret, encrypted at rest
try store.setObject("alice", forKey: .account)            // plain-text metadata

// Every read goes through to the keyring, so changes by other processes are seen.
let token = try store.object(forKey: .valueData)          // "s3cr3t-token"
let account = try store.object(forKey: .account)          // "alice"

// Binary secrets round-trip byte for byte through the Data API.
try store.setData(Data([0x00, 0xFF, 0x10]), forKey: .valueData)
let bytes = try store.data(forKey: .valueData)            // 3 bytes: 00 ff 10

// reset() deletes the item: every key reads nil again.
try store.reset()
let afterReset = try store.object(forKey: .valueData)     // nil
// docs-snippet end

guard token == "s3cr3t-token" else { fail("article: token read back differs") }
guard account == "alice" else { fail("article: account read back differs") }
guard bytes == Data([0x00, 0xFF, 0x10]) else { fail("article: binary value read back differs") }
guard afterReset == nil else { fail("article: value still present after reset") }

// docs-snippet begin: Sources/Keyring/Documentation.docc/GettingStarted.md #2
func signInState(of store: SecretStore) -> String {
    do {
        return try store.object(forKey: .valueData) == nil ? "signed out" : "signed in"
    } catch .locked {
        return "locked: log in to unlock the keyring, then retry"
    } catch .noSessionBus, .noSecretService {
        return "no keyring here, e.g. a headless box or a container"
    } catch {
        return "keyring error: \(error)"   // descriptions never contain a secret
    }
}
print(signInState(of: store))   // signed out
// docs-snippet end

guard signInState(of: store) == "signed out" else { fail("article: sign-in state is not \"signed out\"") }
print("consumer: OK: Keyring getting-started article")

// MARK: DeviceIdentity getting-started article

// docs-snippet begin: Sources/DeviceIdentity/Documentation.docc/GettingStarted.md #1
import DeviceIdentity

// The identifier of one app. Nothing is read or written yet.
let resolver = try IdentifierResolver(appID: "com.example.editor")

// The first call looks in the keyring and the backup file, then tries migrations, and only
// when every store answered "absent" generates a new identifier and stores it in both.
let id = try resolver.identifier()   // e.g. "3f0c7a52-8d1e-4c1b-9a57-1f4f0e1c2b9d"

// Any other resolver for the same app, in this process or another, gets the same value.
let again = try IdentifierResolver(appID: "com.example.editor").identifier()   // == id

// resolve() reads the stores again and says where the value came from.
let resolution = try resolver.resolve()
print(resolution.provenance)   // keyring
print(resolution)              // the value itself is redacted in descriptions
// docs-snippet end

guard !id.isEmpty, again == id, resolution.value == id else { fail("article: identifier is not stable") }
guard resolution.provenance == .keyring else { fail("article: provenance is \(resolution.provenance), not keyring") }
guard resolution.storedIn == [.keyring, .backup], !resolution.isDegraded else { fail("article: not stored in both stores") }
guard !"\(resolution)".contains(id) else { fail("article: description shows the identifier") }

// docs-snippet begin: Sources/DeviceIdentity/Documentation.docc/GettingStarted.md #2
let editor = try IdentifierResolver(appID: "com.example.editor", vendorGroup: "com.example")
let viewer = try IdentifierResolver(appID: "com.example.viewer", vendorGroup: "com.example")
let vendorID = try editor.identifier()
let sameVendorID = try viewer.identifier()   // == vendorID, and != id
// docs-snippet end

guard sameVendorID == vendorID, vendorID != id else { fail("article: vendor identifier is not shared, or equals the app's") }

// docs-snippet begin: Sources/DeviceIdentity/Documentation.docc/GettingStarted.md #3
try resolver.reset()
let fresh = try IdentifierResolver(appID: "com.example.editor").identifier()   // != id
// docs-snippet end

guard fresh != id else { fail("article: reset did not lead to a new identifier") }
guard try IdentifierResolver(appID: "com.example.viewer", vendorGroup: "com.example").identifier() == vendorID else {
    fail("article: resetting the app scope changed the vendor identifier")
}
print("consumer: OK: DeviceIdentity getting-started article")
