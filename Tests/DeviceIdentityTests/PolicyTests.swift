// Pure decision logic: policies, UUID formats, value rules. No keyring needed.
import Foundation
import TestSupport
import Testing
@testable import DeviceIdentity

@Suite("Generation policies")
struct PolicyTests {
    @Test("randomUUID makes canonical lowercase v4 UUIDs that differ")
    func randomUUIDIsV4() throws {
        let values = try (0..<64).map { _ in try GenerationPolicy.randomUUID.generate().value }
        #expect(values.allSatisfy(isUUIDv4))
        #expect(Set(values).count == values.count)
    }

    @Test("timeOrderedUUID is RFC 9562 v7 and carries the creation time")
    func timeOrderedUUIDIsV7() throws {
        let before = UInt64(Date().timeIntervalSince1970 * 1000)
        let value = try GenerationPolicy.timeOrderedUUID.generate().value
        let after = UInt64(Date().timeIntervalSince1970 * 1000)
        let hex = value.replacingOccurrences(of: "-", with: "")
        #expect(value.range(of: "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", options: .regularExpression) != nil)
        let millis = UInt64(hex.prefix(12), radix: 16)!
        #expect(millis >= before && millis <= after)
    }

    @Test("appSpecificMachineID equals systemd-id128 machine-id --app-specific")
    func appSpecificMatchesSystemd() throws {
        let tool = "/usr/bin/systemd-id128"
        try #require(FileManager.default.isExecutableFile(atPath: tool), "systemd-id128 is the oracle for this test")
        for key in ["e0e0c2a4f2c64e2c9a8b0b7d3c1f5a66", "8C6E2E4A-7B2D-4E9A-9F3B-2D5C1A0E7F11"] {
            let expected = try run(tool, ["machine-id", "--app-specific=\(key)"]).text.trimmingCharacters(in: .whitespacesAndNewlines)
            try #require(expected.count == 32, "systemd-id128 printed \(expected)")
            #expect(try AppSpecificMachineID.plainHex(appKey: key) == expected)
            let dashed = try GenerationPolicy.appSpecificMachineID(appKey: key).generate().value
            #expect(dashed.replacingOccurrences(of: "-", with: "") == expected)
            #expect(isUUIDv4(dashed))
        }
    }

    @Test("appSpecificMachineID never exposes the raw machine ID")
    func appSpecificHidesMachineID() throws {
        let raw = try String(contentsOfFile: "/etc/machine-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let derived = try AppSpecificMachineID.plainHex(appKey: "e0e0c2a4f2c64e2c9a8b0b7d3c1f5a66")
        #expect(derived != raw)
        let missing = "/nonexistent/\(UUID().uuidString)"
        let error = identityError { try GenerationPolicy.appSpecificMachineID(appKey: "e0e0c2a4f2c64e2c9a8b0b7d3c1f5a66", machineIDPath: missing).generate() }
        #expect(!"\(String(describing: error))".contains(raw))
    }

    @Test("appSpecificMachineID is unavailable for a missing, empty, all-zero or uninitialized machine-id", arguments: [
        nil, "", "\n", "00000000000000000000000000000000\n", "uninitialized\n", "not-hex-not-hex-not-hex-not-hex!\n",
    ])
    func appSpecificUnavailable(content: String?) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("machine-id-\(UUID())").path
        if let content { try content.write(toFile: path, atomically: true, encoding: .utf8) }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = identityError {
            try GenerationPolicy.appSpecificMachineID(appKey: "e0e0c2a4f2c64e2c9a8b0b7d3c1f5a66", machineIDPath: path).generate()
        }
        guard case .policyUnavailable(let policy, _) = error else {
            Issue.record("expected policyUnavailable, got \(String(describing: error))")
            return
        }
        #expect(policy == "appSpecificMachineID")
    }

    @Test("appSpecificMachineID rejects a key that is not 128 bits of hex")
    func appSpecificBadKey() {
        for key in ["", "xyz", "e0e0c2a4f2c64e2c9a8b0b7d3c1f5a6", "e0e0c2a4-f2c6-4e2c-9a8b-0b7d3c1f5a66-00"] {
            #expect(throws: AppSpecificMachineID.Unavailable.self) { try AppSpecificMachineID.plainHex(appKey: key) }
        }
    }

    @Test("firstAvailable falls through unavailable policies, and says why when none is available")
    func firstAvailableFallsThrough() throws {
        let missing = "/nonexistent/machine-id"
        let policy = GenerationPolicy.firstAvailable([
            .appSpecificMachineID(appKey: "e0e0c2a4f2c64e2c9a8b0b7d3c1f5a66", machineIDPath: missing), .randomUUID,
        ])
        let generated = try policy.generate()
        #expect(generated.policy == "randomUUID")
        #expect(isUUIDv4(generated.value))

        let none = GenerationPolicy.firstAvailable([.appSpecificMachineID(appKey: "00", machineIDPath: missing)])
        guard case .policyUnavailable(_, let reason) = identityError({ try none.generate() }) else {
            Issue.record("expected policyUnavailable")
            return
        }
        #expect(reason.contains("app key"))
    }

    @Test("custom policies are used, and an invalid custom value is refused")
    func customPolicy() throws {
        #expect(try GenerationPolicy.custom(name: "fixed") { "fixed-id-1" }.generate() == ("fixed-id-1", "custom(fixed)"))
        for bad in ["", "   ", "a\u{0}b", "line\nbreak", String(repeating: "x", count: 257)] {
            let error = identityError { try GenerationPolicy.custom(name: "bad") { bad }.generate() }
            guard case .policyUnavailable = error else {
                Issue.record("expected policyUnavailable for \(bad.debugDescription)")
                continue
            }
        }
    }
}

@Suite("Identifier values")
struct IdentifierTextTests {
    @Test("legacy values are adopted byte for byte, trimming only a BOM and surrounding whitespace")
    func normalizeTrims() throws {
        let cases: [(Data, String)] = [
            (Data("abc".utf8), "abc"),
            (Data("  ABC-def_1 \n".utf8), "ABC-def_1"),
            (Data([0xEF, 0xBB, 0xBF] + Array("\tinner  space\r\n".utf8)), "inner  space"),
            (Data("ünïcödé".utf8), "ünïcödé"),
        ]
        for (bytes, expected) in cases {
            #expect(try IdentifierText.normalize(bytes).get() == expected)
        }
    }

    @Test("empty, control-character, non-UTF-8 and over-long values are rejected")
    func normalizeRejects() {
        let bad: [Data] = [
            Data(), Data("  \n".utf8), Data("a\u{1}b".utf8), Data("a\nb".utf8), Data([0xff, 0xfe, 0x41]),
            Data(repeating: UInt8(ascii: "a"), count: IdentifierText.maximumLength + 1),
        ]
        for bytes in bad {
            #expect(throws: IdentifierText.Rejection.self) { try IdentifierText.normalize(bytes).get() }
        }
    }

    @Test("app IDs and vendor groups that cannot name a directory are refused")
    func scopeValidation() {
        for name in ["", ".", "..", "a/b", "tab\there", String(repeating: "a", count: 256)] {
            let error = identityError { try IdentifierResolver(appID: name) }
            guard case .invalidArgument = error else {
                Issue.record("expected invalidArgument for \(name.debugDescription)")
                continue
            }
        }
        #expect(throws: IdentityError.self) { try IdentifierResolver(appID: "ok.app", vendorGroup: "") }
    }

    @Test("a Resolution's description redacts the identifier")
    func descriptionRedacts() {
        let resolution = Resolution(
            value: "secret-identifier-123", provenance: .keyring, origin: nil, createdAt: nil, storedIn: [.keyring, .backup],
            repairs: [], conflicts: [], keyringProblem: nil, isDryRun: false)
        #expect(!resolution.description.contains("secret-identifier-123"))
        #expect(resolution.description.contains("<redacted>"))
    }
}
