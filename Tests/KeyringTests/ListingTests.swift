import Foundation
import Keyring
import Testing
import TestSupport

/// `SecretStore.items(identifier:accessGroup:keyring:)` on every provider and the file backend.
@Suite("Listing an identifier's or access group's items: metadata, never secrets; locked is never empty", .serialized)
struct ListingTests {
    @Test("lists every account's item of an identifier with its metadata and writer, never a secret")
    func listsIdentifier() throws {
        try requireTestKeyring()
        let service = uniqueID("list"), group = uniqueID("list-group"), secrets = [uniqueSecret(), uniqueSecret(), uniqueSecret()]
        defer { _ = try? Keyring.default.delete(["service": service]) }
        try SecretStore(identifier: service, account: "alice").setObject(secrets[0], forKey: .valueData)
        try mustRun(secretTool, ["store", "--label=bob's", "service", service, "username", "bob"], input: Data(secrets[1].utf8))
        try SecretStore(identifier: service, account: "carol", accessGroup: group).setObject(secrets[2], forKey: .valueData)

        let listed = try SecretStore.items(identifier: service)
        #expect(listed.map(\.account).sorted { ($0 ?? "") < ($1 ?? "") } == ["alice", "bob", "carol"])
        let byAccount = Dictionary(uniqueKeysWithValues: listed.map { ($0.account ?? "", $0) })
        let alice = try #require(byAccount["alice"]), bob = try #require(byAccount["bob"]), carol = try #require(byAccount["carol"])
        #expect(listed.allSatisfy { $0.identifier == service && !$0.isLocked })
        #expect(alice.label == service && bob.label == "bob's")
        #expect(alice.accessGroup == nil && carol.accessGroup == group)
        // Oldest first, in the one item order.
        #expect(listed.map(\.item) == listed.map(\.item).sorted(by: KeyringItem.isOlder))
        // Every provider reports both times (KWallet too, for items of this daemon's run).
        #expect(listed.allSatisfy { $0.created != nil && $0.modified != nil }, "\(listed.map { ($0.created, $0.modified) })")
        // The file backend's SecretStore items carry no schema (a schema would keep secret-tool store from updating them).
        #expect(alice.writer == (TestProvider.usesFileBackend ? .otherClient(schema: nil) : .secretStore))
        // secret-tool sets no schema; gnome-keyring reports its items as the generic schema.
        #expect(bob.writer != .secretStore)
        if case .otherClient(let schema) = bob.writer, let schema { #expect(schema == "org.freedesktop.Secret.Generic") }
        // KeePassXC adds its own attributes (Title, Uuid, Path, ...) to every item; the listing's fields are the client's.
        if TestProvider.isKeePassXC { #expect(alice.item.attributes["Uuid"] != nil) }
        for secret in secrets { #expect(!"\(listed)".contains(secret), "a listing never holds a secret") }

        #expect(try SecretStore.items(accessGroup: group).map(\.account) == ["carol"])
        #expect(try SecretStore.items(identifier: service, accessGroup: group).map(\.account) == ["carol"])
        #expect(try SecretStore.items(identifier: uniqueID("list-none")).isEmpty)
    }

    @Test("await items(identifier:accessGroup:keyring:) lists what the sync call lists")
    func asyncTwin() async throws {
        try requireTestKeyring()
        let service = uniqueID("list-async")
        defer { _ = try? Keyring.default.delete(["service": service]) }
        try blocking { () throws(KeyringError) in try SecretStore(identifier: service, account: "a").setObject("v", forKey: .valueData) }
        let sync = try blocking { () throws(KeyringError) in try SecretStore.items(identifier: service) }
        #expect(sync.count == 1)
        #expect(try await SecretStore.items(identifier: service) == sync)
    }

    @Test("bad arguments are refused before the keyring is asked", arguments: [(nil, nil), ("", nil), (nil, ""), ("a\u{0}", nil)] as [(String?, String?)])
    func badArguments(identifier: String?, group: String?) {
        #expect(keyringError { try SecretStore.items(identifier: identifier, accessGroup: group) }?.isInvalidArgument == true)
    }

    // gnome-keyring and KWallet list a locked collection's items, marked locked, so a listing that
    // finds none proves there are none; KeePassXC hides a locked database's items, so a listing
    // there is `.locked` whatever matches.
    @Test("a locked keyring is never \"no items\" by mistake: listed items are marked locked, a hiding provider's miss is .locked",
          .enabled(if: !TestProvider.usesFileBackend, "the file backend has no locked state"))
    func lockedKeyring() throws {
        try requireTestKeyring()
        let service = uniqueID("list-locked"), keyring = Keyring(unlock: .never)
        try SecretStore(identifier: service, account: "alice").setObject("v", forKey: .valueData)
        try lockKeyring()
        defer {
            restartKeyring()
            _ = try? Keyring.default.delete(["service": service])
        }
        if TestProvider.listsLockedItems {
            #expect(try SecretStore.items(identifier: uniqueID("list-absent"), keyring: keyring).isEmpty)
            let listed = try SecretStore.items(identifier: service, keyring: keyring)
            #expect(listed.map(\.account) == ["alice"])
            #expect(listed.allSatisfy { $0.isLocked })
        } else {
            #expect(keyringError { try SecretStore.items(identifier: uniqueID("list-absent"), keyring: keyring) }?.isLocked == true)
            #expect(keyringError { try SecretStore.items(identifier: service, keyring: keyring) } == .locked(itemExists: false))
        }
    }
}
