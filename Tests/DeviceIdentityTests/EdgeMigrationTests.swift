// Migration edges (issue 9, item 12a): a machine-id placeholder is not an identifier.
import Foundation
import Keyring
import Testing
@testable import DeviceIdentity

@Suite("Migration edges against the real keyring", .serialized)
struct EdgeMigrationTests {
    @Test("a machine-id placeholder (\"uninitialized\", all zeros) is rejected, never adopted", arguments: [
        "uninitialized\n", String(repeating: "0", count: 32) + "\n",
    ])
    func machineIDPlaceholderRejected(content: String) throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        let path = fixture.directory + "/machine-id"
        try Data(content.utf8).write(to: URL(fileURLWithPath: path))

        let report = try fixture.resolver(migrations: [.machineID(path: path)]).migrate()
        #expect(report.outcome == .nothingToMigrate, "\(report.outcome)")
        #expect(report.resolution == nil, "nothing adopted: \(String(describing: report.resolution?.value))")
        #expect(report.rejected.map(\.source) == ["machine-id"], "the placeholder is reported as rejected")
        #expect(try fixture.keyringValue() == nil)
        #expect(!FileManager.default.fileExists(atPath: fixture.backupPath))

        // Resolving falls through to the generation policy instead.
        let resolution = try fixture.resolver(migrations: [.machineID(path: path)]).resolve()
        #expect(resolution.provenance == .generated(policy: "randomUUID"), "\(resolution.provenance)")
        #expect(isUUIDv4(resolution.value))
    }
}
