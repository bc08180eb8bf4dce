import DeviceIdentity
import Foundation
import Keyring
import TestSupport
import Testing

/// The resolver on a locked gnome-keyring whose unlock prompts go to gcr's mock prompter.
@Suite(
    "IdentifierResolver and the unlock prompt",
    .needs(.mockPrompter))
struct UnlockPromptResolverTests {
    @Test("a backup stands in for a locked keyring without a prompt; without one, an answered prompt serves the keyring's value")
    func backupFirstThenPrompt() throws {
        try requireTestKeyring()
        try withMockPrompter {
            let fixture = try Fixture()
            let original = try fixture.resolver().identifier()
            try keyringCtl(["lock"])
            try keyringCtl(["prompt-answer", "ok"])

            let fromBackup = try fixture.resolver().resolve()
            #expect(fromBackup.value == original)
            #expect(fromBackup.provenance == .backup)
            #expect(fromBackup.keyringProblem == .locked(itemExists: true, unlock: .notAsked))
            #expect(try keyringCtl(["prompt-status"]) == "expecting=yes unexpected=0", "no prompt while the backup holds the value")

            try FileManager.default.removeItem(atPath: fixture.backupPath)
            let fromKeyring = try fixture.resolver().resolve()
            #expect(fromKeyring.value == original)
            #expect(fromKeyring.provenance == .keyring)
            #expect(try keyringCtl(["prompt-status"]) == "expecting=no unexpected=0")
        }
    }

    @Test("a dismissed prompt without a backup is an error; nothing is generated, for a known or a new app")
    func dismissedGeneratesNothing() throws {
        try requireTestKeyring()
        try withMockPrompter {
            let fixture = try Fixture(), fresh = try Fixture()
            let original = try fixture.resolver().identifier()
            try FileManager.default.removeItem(atPath: fixture.backupPath)
            try keyringCtl(["lock"])

            try keyringCtl(["prompt-answer", "cancel"])
            #expect(identityError { try fixture.resolver().resolve() } == .keyring(.locked(itemExists: true, unlock: .dismissed)))
            try keyringCtl(["prompt-answer", "cancel"])
            #expect(identityError { try fresh.resolver().resolve() } == .keyring(.locked(itemExists: false, unlock: .dismissed)))
            #expect(!FileManager.default.fileExists(atPath: fresh.backupPath))
            #expect(!FileManager.default.fileExists(atPath: fixture.backupPath))

            // unlock: .never does not ask at all.
            try keyringCtl(["prompt-answer", "ok"])
            let never = try fixture.resolver(keyring: Keyring(timeout: .seconds(5), unlock: .never))
            #expect(identityError { try never.resolve() } == .keyring(.locked(itemExists: true)))
            #expect(try keyringCtl(["prompt-status"]) == "expecting=yes unexpected=0")

            try keyringCtl(["restart"])
            #expect(try fixture.resolver().identifier() == original)
        }
    }
}
