// The one order of items (ItemOrder): a strict weak order whatever the paths look like, and the
// same winner for the resolver's identity items as for Keyring's own reads. Pure; no keyring.
import Foundation
import Keyring
import Testing

@Suite("One order of items (no keyring)")
struct ItemOrderTests {
    /// Object paths that mix numeric and non-numeric elements, equal numbers spelled differently,
    /// huge numbers and different depths.
    static let elements = ["1", "2", "10", "01", "007", "a", "b", "login", "session", "i1", "18446744073709551616",
                           "99999999999999999999", ""]

    static func paths(count: Int, seed: UInt64) -> [String] {
        var state = seed
        func next() -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(truncatingIfNeeded: state >> 33)
        }
        return (0..<count).map { _ in
            let depth = 1 + next() % 4
            return "/org/freedesktop/secrets/collection/" + (0..<depth).map { _ in elements[next() % elements.count] }.joined(separator: "/")
        }
    }

    @Test("the object-path order is a strict weak order when numeric and non-numeric elements meet", arguments: 0..<8)
    func pathOrderIsStrictWeak(_ seed: Int) {
        let paths = Self.paths(count: 24, seed: UInt64(seed) + 1)
        let less = ItemOrder.pathOrder
        var violations: [String] = []
        for a in paths {
            if less(a, a) { violations.append("not irreflexive: \(a)") }
            for b in paths {
                if less(a, b) && less(b, a) { violations.append("not asymmetric: \(a) \(b)") }
                // Distinct paths are never equivalent, so every process picks the same item.
                if a != b && !less(a, b) && !less(b, a) { violations.append("not total: \(a) \(b)") }
                for c in paths where less(a, b) && less(b, c) && !less(a, c) {
                    violations.append("not transitive: \(a) < \(b) < \(c)")
                }
            }
        }
        #expect(violations.isEmpty, "\(violations.prefix(5))")
    }

    @Test("numbers before other elements, numbers by value")
    func pathOrderExamples() {
        #expect(ItemOrder.pathOrder("/c/2", "/c/10"))
        #expect(ItemOrder.pathOrder("/c/10", "/c/a"))
        #expect(!ItemOrder.pathOrder("/c/a", "/c/10"))
        #expect(ItemOrder.pathOrder("/c/01", "/c/1") != ItemOrder.pathOrder("/c/1", "/c/01"))
        #expect(ItemOrder.pathOrder("/c/1", "/c/1/2"))
    }

    static func item(_ path: String, created: Double?, firstMade: String? = nil) -> KeyringItem {
        KeyringItem(objectPath: path, attributes: firstMade.map { ["identity-created": $0] } ?? [:], label: "", isLocked: false,
                    created: created.map { Date(timeIntervalSince1970: $0) }, modified: nil)
    }

    @Test("identity items: by the second first made, ours first within it, then Created, then path; the standard order ignores the attribute")
    func identityOrder() {
        let order = ItemOrder(firstMadeAttribute: "identity-created")
        // Created first but made later: the first made wins for identities; Created for the standard order.
        let younger = Self.item("/c/1", created: 100, firstMade: "5000.5")
        let older = Self.item("/c/2", created: 200, firstMade: "50.25")
        #expect(order.sorted([younger, older]) == [older, younger])
        #expect(ItemOrder.standard.sorted([younger, older]) == [younger, older])
        #expect(KeyringItem.isOlder(younger, older), "isOlder is the standard order")
        // Within one second a foreign item loses to ours.
        let foreign = Self.item("/c/1", created: 50, firstMade: nil)
        #expect(order.sorted([foreign, older]) == [older, foreign])
        // An attribute that does not parse counts as absent; nil times come first.
        let unparsable = Self.item("/c/3", created: 10, firstMade: "soon")
        #expect(order.firstMade(unparsable) == Date(timeIntervalSince1970: 10))
        #expect(order.sorted([older, Self.item("/c/9", created: nil)]).first?.objectPath == "/c/9")
    }

    // Review of issue 20, bug 1: the whole second of the stamp ranks first, so a value stamped at
    // 0.98 s but written after one stamped (and handed out) at 1.01 s would win. A stamp taken at
    // the write never comes before the stamp of an item that write could already see.
    @Test("a stamp taken before a wait outranks one made meanwhile across a second; the stamp format round-trips")
    func stampAcrossSecondBoundary() {
        let order = ItemOrder(firstMadeAttribute: "identity-created")
        func item(_ path: String, stamp: Date, created: Date) -> KeyringItem {
            KeyringItem(objectPath: path, attributes: ["identity-created": ItemOrder.stamp(stamp)], label: "", isLocked: false,
                        created: created, modified: created)
        }
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        let handedOut = item("/c/1", stamp: base.addingTimeInterval(1.01), created: base.addingTimeInterval(1.03))
        let earlyStamp = item("/c/2", stamp: base.addingTimeInterval(0.98), created: base.addingTimeInterval(1.05))
        let stampedAtWrite = item("/c/2", stamp: base.addingTimeInterval(1.049), created: base.addingTimeInterval(1.05))
        #expect(order.precedes(earlyStamp, handedOut), "why the stamp must not be taken before the wait")
        #expect(order.precedes(handedOut, stampedAtWrite), "stamped at the write, the item handed out stays the winner")
        #expect(ItemOrder.stamp(base.addingTimeInterval(1.5)) == "1700000001.500")
    }
}
