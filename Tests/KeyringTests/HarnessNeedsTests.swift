// The harness's `.needs(...)`: decided from the environment each configuration's script sets up.
import Foundation
import TestSupport
import Testing

@Suite("What a configuration offers, and the skips `.needs` makes (no keyring)")
struct HarnessNeedsTests {
    static let harness = ["WITH_KEYRING_ROOT": "/tmp/with-keyring.x", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/tmp/with-keyring.x/bus"]

    static func configuration(_ extra: [String: String] = [:], harness: Bool = true) -> TestConfiguration {
        TestConfiguration(environment: (harness ? Self.harness : [:]).merging(extra) { $1 })
    }

    @Test("a suite that needs the mock prompter runs on gnome-keyring, and is skipped with its reason elsewhere")
    func prompterNeed() async throws {
        let cases: [(TestConfiguration, Bool)] = [
            (Self.configuration(), true),
            (Self.configuration(["KEYRING_PROVIDER": "gnome-keyring", "KEYRING_LIVED_IN": "1"]), true),
            (Self.configuration(["KEYRING_PROVIDER": "kwallet"]), false),
            (Self.configuration(["KEYRING_PROVIDER": "keepassxc"]), false),
            (Self.configuration(["SECRET_BACKEND": "file"]), false),
            (Self.configuration(harness: false), false),
        ]
        for (configuration, runs) in cases {
            let trait = ConditionTrait.needs(.mockPrompter, in: configuration)
            #expect(try await trait.evaluate() == runs, "\(configuration)")
            let reason = trait.comments.map(\.rawValue).joined()
            #expect(reason.contains("needs gcr's mock prompter"), "\(reason)")
            #expect(reason.contains("this run has \(configuration)") == !runs, "a skip says what the run has: \(reason)")
        }
        #expect(Self.configuration(["KEYRING_PROVIDER": "kwallet"]).description == "kwallet")
        #expect(Self.configuration(["SECRET_BACKEND": "file"]).description == "the file backend")
    }

    @Test("every capability of a need must be there: KeePassXC's second database is not a prompter")
    func allNeeded() async throws {
        let keepassxc = Self.configuration(["KEYRING_PROVIDER": "keepassxc"])
        #expect(try await ConditionTrait.needs(.secondDatabase, .locking, in: keepassxc).evaluate())
        #expect(try await !ConditionTrait.needs(.secondDatabase, .mockPrompter, in: keepassxc).evaluate())
        #expect(keepassxc.missing([.secondDatabase, .mockPrompter, .fileBackend, .pristine]) == [.mockPrompter, .fileBackend])
        #expect(Self.configuration(["SECRET_BACKEND": "file"]).capabilities == [.fileBackend, .pristine])
        #expect(Self.configuration(["SECRET_BACKEND": "file", "KEYRING_LIVED_IN": "1"]).capabilities == [.fileBackend, .livedIn])
    }

    @Test("suites that test no provider run on pristine gnome-keyring and with no harness, not beside KWallet, KeePassXC, a lived-in keyring or SECRET_BACKEND=file")
    func providerFreeNeed() async throws {
        let cases: [(TestConfiguration, Bool)] = [
            (Self.configuration(), true),
            (Self.configuration(["KEYRING_PROVIDER": "gnome-keyring", "KEYRING_LIVED_IN": "1"]), false),
            (Self.configuration(["SECRET_BACKEND": "file"]), false),
            (Self.configuration(harness: false), true),
            (Self.configuration(["KEYRING_PROVIDER": "kwallet"]), false),
            (Self.configuration(["KEYRING_PROVIDER": "keepassxc", "KEYRING_LIVED_IN": "1"]), false),
        ]
        for (configuration, runs) in cases {
            #expect(try await ConditionTrait.needs(.providerFree, in: configuration).evaluate() == runs, "\(configuration)")
        }
    }
}
