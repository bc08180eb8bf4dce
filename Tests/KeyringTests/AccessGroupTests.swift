import Foundation
import Keyring
import TestSupport
import Testing

@Suite("Access groups keep items with the same identifier apart")
struct AccessGroupTests {
    @Test("nil, g1 and g2 never see each other's item; reset of one leaves the others")
    func groupsAreIsolated() throws {
        try requireTestKeyring()
        let id = uniqueID("groups")
        let none = try SecretStore(identifier: id)
        let g1 = try SecretStore(identifier: id, accessGroup: "g1")
        let g2 = try SecretStore(identifier: id, accessGroup: "g2")
        defer { for store in [none, g1, g2] { try? store.reset() } }

        try g1.setObject("one", forKey: .valueData)
        #expect(try none.object(forKey: .valueData) == nil)
        #expect(try g2.object(forKey: .valueData) == nil)
        #expect(try none.object(forKey: .account) == nil)

        try none.setObject("zero", forKey: .valueData)
        try g2.setObject("two", forKey: .valueData)
        try g2.setObject("acct2", forKey: .account)
        #expect(try none.object(forKey: .valueData) == "zero")
        #expect(try g1.object(forKey: .valueData) == "one")
        #expect(try g2.object(forKey: .valueData) == "two")
        #expect(try g1.object(forKey: .account) == "")
        #expect(try items(service: id).count == 3)

        try g1.reset()
        #expect(try g1.object(forKey: .valueData) == nil)
        #expect(try none.object(forKey: .valueData) == "zero")
        #expect(try g2.object(forKey: .valueData) == "two")

        try none.reset()
        #expect(try none.object(forKey: .valueData) == nil)
        #expect(try g2.object(forKey: .valueData) == "two")
        #expect(try items(service: id).count == 1)
        #expect(try items(service: id).first?.attributes["access-group"] == "g2")
    }
}
