import DeviceIdentity
import Foundation
import Keyring
import TestSupport
import Testing

/// Every async resolver call runs its sync twin itself (Keyring's one offload helper).
@Suite("Async resolver twins do what their sync calls do")
struct AsyncResolverTwinTests {
    @Test("every IdentifierResolver twin against the real keyring once: dryRun, resolve, identifier, refresh, migrate, reset")
    func everyTwin() async throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let resolver = try fixture.resolver()
        let sample = try await resolver.dryRun()
        #expect(sample.isDryRun)
        #expect(try fixture.keyringValue() == nil, "a dry run writes nothing")
        let value = try await resolver.resolve().value
        #expect(try fixture.keyringValue() == value)
        #expect(try await resolver.identifier() == value)
        #expect(try await resolver.refresh().value == value)
        #expect(try await resolver.dryRun().value == value)
        #expect(try await resolver.migrate(dryRun: true).resolution?.value == value)
        try await resolver.reset()
        #expect(try fixture.keyringValue() == nil)
    }
}
