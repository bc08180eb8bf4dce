import Foundation
import Keyring
import Testing
import TestSupport

/// An item that another client deletes after our search has vanished: each provider says so in its
/// own way (gnome-keyring: UnknownMethod "Object does not exist at path"; KeePassXC: UnknownObject;
/// KWallet: InvalidArgs), and the typed call must read each as "gone", not as a failure.
@Suite("items deleted after the search")
struct VanishedItemTests {
    @Test(
        "secret(of:) of a vanished item is nil and delete(item:) of one succeeds, on every provider",
        .enabled(if: !TestProvider.usesFileBackend, "object paths are a Secret Service matter"))
    func vanished() throws {
        try requireTestKeyring()
        let id = uniqueID("vanished")
        let store = try SecretStore(identifier: id)
        defer { try? store.reset() }
        try store.setObject("value", forKey: .valueData)
        let item = try #require(try items(service: id).first)
        try mustRun(secretTool, ["clear", "service", id])
        #expect(try Keyring.default.secret(of: item) == nil)
        try Keyring.default.delete(item: item)
    }
}
