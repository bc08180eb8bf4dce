// The same app against a real keyring: run with `swift run keyring-sandbox -- swift test`, which
// gives it a throwaway gnome-keyring. Outside a sandbox it fails rather than touch your keyring.
import Foundation
import Testing
import TokenApp

@Suite("IntegrationTests: the app on a real, throwaway keyring")
struct IntegrationTests {
    @Test("sign in, read back, a stable device id, sign out")
    func realKeyring() throws {
        try #require(
            !(ProcessInfo.processInfo.environment["KEYRING_SANDBOX_ROOT"] ?? "").isEmpty,
            "run me as `swift run keyring-sandbox -- swift test`; I will not touch your own keyring")
        let app = try LoginSession()
        try app.signIn(token: "real-token")
        #expect(try app.savedToken() == "real-token")
        let id = try app.deviceID()
        #expect(try LoginSession().deviceID() == id)
        try app.signOut()
        #expect(try app.savedToken() == nil)
    }
}
