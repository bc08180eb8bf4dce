import Foundation
import Testing

@testable import Keyring

/// The one change rule every watch uses, as a table (pure logic). The behaviour on real daemons is
/// `ChangeNotificationTests`, on the file backend `FileChangeNotificationTests` and on the memory keyring
/// the contract suite's watch tests.
@Suite("The change rule: two looks in, the changes between them out")
struct ChangeRuleTests {
    static let login = "/org/freedesktop/secrets/collection/login"

    static func item(
        _ n: Int, label: String = "L", attributes: [String: String] = ["service": "S"], locked: Bool = false, modified: Int = 100
    ) -> KeyringItem {
        KeyringItem(
            objectPath: "\(login)/\(n)", attributes: attributes, label: label, isLocked: locked,
            created: Date(timeIntervalSince1970: 1), modified: Date(timeIntervalSince1970: TimeInterval(modified)))
    }

    static func look(_ entries: [(KeyringItem, String?)], locked: Bool? = false) -> ChangeSnapshot {
        var snapshot = ChangeSnapshot()
        for (item, digest) in entries { snapshot.items[item.objectPath] = .init(item: item, secretDigest: digest) }
        if let locked { snapshot.collections[login] = locked ? .locked : .unlocked }
        return snapshot
    }

    /// A look on a Secret Service: each item in the login collection, whose lock can hide it.
    static func service(
        _ entries: [(KeyringItem, String?)], _ state: ChangeSnapshot.CollectionState? = .unlocked, running: Bool = true,
        full: Bool = false
    ) -> ChangeSnapshot {
        var snapshot = ChangeSnapshot(isRunning: running, mayRenumber: full)
        for (item, digest) in entries { snapshot.items[item.objectPath] = .init(item: item, secretDigest: digest, collection: login) }
        if let state { snapshot.collections[login] = state }
        return snapshot
    }

    /// What gnome-keyring shows of a locked item it loaded from disk: its attributes hashed.
    static let hashed = ["gkr:compat:hashed:service": "0f1e", "xdg:schema": "org.freedesktop.Secret.Generic"]

    /// Each row: the two looks, and the kinds reported, in order.
    static let rows: [(name: String, old: ChangeSnapshot, new: ChangeSnapshot, expected: [KeyringChange.Kind])] = [
        ("nothing changed", look([(item(1), "a")]), look([(item(1), "a")]), []),
        ("a new item is created", look([]), look([(item(1), "a")]), [.created]),
        ("a gone item is deleted", look([(item(1), "a")]), look([]), [.deleted]),
        ("a new label is a change", look([(item(1), "a")]), look([(item(1, label: "M"), "a")]), [.changed]),
        ("a new modification time is a change", look([(item(1), "a")]), look([(item(1, modified: 101), "a")]), [.changed]),
        (
            "a new attribute is a change", look([(item(1), "a")]), look([(item(1, attributes: ["service": "S", "k": "v"]), "a")]),
            [.changed]
        ),
        (
            "a schema stamp a restart adds is not", look([(item(1), "a")]),
            look([(item(1, attributes: ["service": "S", "xdg:schema": "org.freedesktop.Secret.Generic"]), "a")]), []
        ),
        (
            "an attribute KeePassXC adds is not", look([(item(1), "a")]),
            look([(item(1, attributes: ["service": "S", "Uuid": "u", "Path": "/p", "Title": "T"]), "a")]), []
        ),
        ("a new secret, both read, is a change", look([(item(1), "a")]), look([(item(1), "b")]), [.changed]),
        ("a secret not read now is no change", look([(item(1), "a")]), look([(item(1, locked: true), nil)]), []),
        ("a secret not read before is no change", look([(item(1, locked: true), nil)]), look([(item(1), "b")]), []),
        ("a lock is a lock change", look([(item(1), "a")]), look([(item(1, locked: true), nil)], locked: true), [.locked]),
        ("an unlock is an unlock change", look([(item(1, locked: true), nil)], locked: true), look([(item(1), "a")]), [.unlocked]),
        ("a collection first seen now reports no lock change", look([], locked: nil), look([], locked: true), []),
        (
            "lock changes come first, then deletions, then the rest",
            look([(item(1), "a"), (item(2), "a")]), look([(item(2), "b"), (item(3), "a")], locked: true),
            [.locked, .deleted, .changed, .created]
        ),
        ("missing from a locked collection is hidden, not deleted", service([(item(1), "a")]), service([], .locked), [.locked]),
        ("missing from a collection gone from the bus is hidden", service([(item(1), "a")]), service([], .gone), []),
        ("missing from a collection no longer watched is hidden", service([(item(1), "a")]), service([], nil), []),
        (
            "missing from an unlocked collection is deleted", service([(item(1), "a")], .locked), service([], .unlocked),
            [.unlocked, .deleted]
        ),
        ("a collection that comes back is no lock change", service([], .gone), service([], .unlocked), []),
        ("missing where nothing hides items is deleted", look([(item(1), "a")], locked: true), look([], locked: true), [.deleted]),
        (
            "an item at a new path after a restart is the same item, moved", service([(item(1), "a")]),
            service([(item(7), "a")], full: true), []
        ),
        (
            "items renumbered into each other's paths are the same items",
            service([(item(2, label: "n1"), "a"), (item(3, label: "n2"), "b")]),
            service([(item(1, label: "n1"), "a"), (item(2, label: "n2"), "b")], full: true), []
        ),
        (
            "an item whose path another took, found nowhere, is deleted",
            service([(item(1, label: "n1"), "a"), (item(2, label: "n2"), "b")]), service([(item(1, label: "n2"), "b")], full: true),
            [.deleted]
        ),
        ("but not when the look is no full one", service([(item(1), "a")]), service([(item(7), "a")]), [.deleted, .created]),
        (
            "a moved item whose secret changed is changed", service([(item(1), "a")]), service([(item(7), "b")], full: true),
            [.changed]
        ),
        (
            "a locked item showing hashed attributes is what it was", service([(item(1), "a")]),
            service([(item(1, attributes: hashed, locked: true), nil)], .locked), [.locked]
        ),
        (
            "an item that became locked is no change of its own", service([(item(1), "a")]),
            service([(item(1, label: "M", locked: true), nil)], .locked), [.locked]
        ),
        (
            "the daemon going away is service-stopped", service([(item(1), "a")]), service([(item(1), "a")], running: false),
            [.serviceStopped]
        ),
        (
            "a new daemon is service-started, before what its look shows", service([(item(1), "a")], running: false),
            service([(item(2, label: "M"), "a")], running: true, full: true), [.serviceStarted, .deleted, .created]
        ),
    ]

    @Test("each row's looks give its changes", arguments: rows.indices)
    func row(_ index: Int) {
        let row = Self.rows[index]
        #expect(ChangeRule.changes(from: row.old, to: row.new).map(\.kind) == row.expected, "\(row.name)")
    }

    @Test("a hidden item is kept, locked, and compared at the unlock with the secret read before it")
    func hiddenThenBack() {
        let (hiding, kept) = ChangeRule.apply(from: Self.service([(Self.item(1), "a")]), to: Self.service([], .locked))
        #expect(hiding.map(\.kind) == [.locked])
        #expect(kept.items["\(Self.login)/1"]?.isHidden == true)
        #expect(kept.items["\(Self.login)/1"]?.item.isLocked == true)
        #expect(kept.items["\(Self.login)/1"]?.secretDigest == "a")
        // Listed again, locked (its secret unreadable), then unlocked with another secret.
        let (listed, stillKept) = ChangeRule.apply(from: kept, to: Self.service([(Self.item(1, locked: true), nil)], .locked))
        #expect(listed.isEmpty)
        #expect(stillKept.items["\(Self.login)/1"]?.secretDigest == "a")
        let (back, _) = ChangeRule.apply(from: stillKept, to: Self.service([(Self.item(1), "b")]))
        #expect(back.map(\.kind) == [.unlocked, .changed])
    }

    @Test("an item changed as it became locked is kept as it was, so the change shows at the unlock")
    func changedWhileLocking() {
        let (locking, kept) = ChangeRule.apply(
            from: Self.service([(Self.item(1), "a")]), to: Self.service([(Self.item(1, label: "M", locked: true), nil)], .locked))
        #expect(locking.map(\.kind) == [.locked])
        let (unlocking, _) = ChangeRule.apply(from: kept, to: Self.service([(Self.item(1, label: "M"), "a")]))
        #expect(unlocking.map(\.kind) == [.unlocked, .changed])
    }

    @Test("a moved item is reported, and kept, at its new path")
    func movedItemPath() {
        let (changes, next) = ChangeRule.apply(
            from: Self.service([(Self.item(1), "a")]), to: Self.service([(Self.item(7, label: "L"), "b")], full: true))
        #expect(changes.map(\.item?.objectPath) == ["\(Self.login)/7"])
        #expect(Set(next.items.keys) == ["\(Self.login)/7"])
        #expect(!next.mayRenumber)
    }

    @Test("a change carries the item as the newer look saw it, a deletion as the older one did")
    func itemsReported() {
        let changes = ChangeRule.changes(
            from: Self.look([(Self.item(1), "a"), (Self.item(2), "a")]), to: Self.look([(Self.item(2, label: "M"), "a")]))
        #expect(changes.map(\.kind) == [.deleted, .changed])
        #expect(changes.map(\.item?.label) == ["L", "M"])
        #expect(changes.map(\.item?.objectPath) == ["\(Self.login)/1", "\(Self.login)/2"])
    }
}
