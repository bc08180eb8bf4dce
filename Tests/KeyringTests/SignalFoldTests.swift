import Testing

@testable import Keyring

/// Which signals a watch may fold into one already pending (pure logic; the real-daemon test is
/// `ChangeNotificationTests.ownWritesRounds` on KeePassXC).
@Suite("A watch folds repeated signals, never a different one")
struct SignalFoldTests {
    static let collection = "/org/freedesktop/secrets/collection/login"
    static let alias = "/org/freedesktop/secrets/aliases/default"

    static func item(_ member: String, _ item: String, from path: String = collection) -> ServiceSignals.Signal {
        ServiceSignals.Signal(interface: "org.freedesktop.Secret.Collection", member: member, path: path, object: item, newOwner: nil)
    }

    static func owner(_ name: String) -> ServiceSignals.Signal {
        ServiceSignals.Signal(
            interface: "org.freedesktop.DBus", member: "NameOwnerChanged", path: "/org/freedesktop/DBus", object: nil, newOwner: name)
    }

    @Test("the same signal about the same item, from the collection or its alias, is folded")
    func repeatsFold() {
        let pending = [Self.item("ItemCreated", "/i/1"), Self.item("ItemChanged", "/i/1")]
        #expect(ServiceChangeSource.repeatsPending(Self.item("ItemChanged", "/i/1"), pending))
        #expect(ServiceChangeSource.repeatsPending(Self.item("ItemChanged", "/i/1", from: Self.alias), pending))
    }

    @Test("a signal that differs from the latest one about its item is kept: order matters")
    func changesAreKept() {
        // Created, deleted, created again at a reused path (gnome-keyring numbers its items).
        let pending = [Self.item("ItemCreated", "/i/1"), Self.item("ItemDeleted", "/i/1")]
        #expect(!ServiceChangeSource.repeatsPending(Self.item("ItemCreated", "/i/1"), pending))
        #expect(!ServiceChangeSource.repeatsPending(Self.item("ItemChanged", "/i/2"), pending))
        #expect(!ServiceChangeSource.repeatsPending(Self.item("ItemChanged", "/i/1"), []))
    }

    @Test("nothing is folded across a change of owner, and an owner change is never folded")
    func ownerChangesSeparate() {
        let pending = [Self.item("ItemCreated", "/i/1"), Self.owner(":1.9")]
        #expect(!ServiceChangeSource.repeatsPending(Self.item("ItemCreated", "/i/1"), pending))
        #expect(!ServiceChangeSource.repeatsPending(Self.owner(":1.9"), pending))
    }
}
