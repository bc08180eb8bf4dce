import Foundation
import Testing

@testable import Keyring

/// The one change rule every watch uses, as a table (pure logic). The behaviour on real daemons is
/// `ChangeNotificationTests`, on the file backend `FileChangeWatchTests` and on the memory keyring
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
        if let locked { snapshot.collections[login] = locked }
        return snapshot
    }

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
    ]

    @Test("each row's looks give its changes", arguments: rows.indices)
    func row(_ index: Int) {
        let row = Self.rows[index]
        #expect(ChangeRule.changes(from: row.old, to: row.new).map(\.kind) == row.expected, "\(row.name)")
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
