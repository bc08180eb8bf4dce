// The app's own keyring handling, on KeyringTesting's in-memory keyring: no bus, no daemon.
import Foundation
import Keyring
import KeyringTesting
import Testing
import TokenApp

@Suite("UnitTests: the app on an in-memory keyring")
struct UnitTests {
    let memory = MemoryKeyring()
    let backup = FileManager.default.temporaryDirectory.appendingPathComponent("tokenapp-\(UUID().uuidString)").path

    func session(unlock: UnlockPolicy = .prompt, timeout: Duration = .seconds(5)) throws -> LoginSession {
        try LoginSession(keyring: Keyring(memory: memory, timeout: timeout, unlock: unlock), backupDirectory: backup)
    }

    @Test("signed in: the token is kept and read back; signed out: none")
    func signInAndOut() throws {
        let app = try session()
        try app.signIn(token: "t-1")
        #expect(try app.savedToken() == "t-1")
        try app.signOut()
        #expect(try app.savedToken() == nil)
    }

    @Test("a locked keyring is .locked, never 'not signed in'; unlocking through the prompt reads the token")
    func locked() throws {
        let app = try session(unlock: .never)
        try app.signIn(token: "t-2")
        memory.isLocked = true
        #expect(throws: LoginSession.Problem.locked) { try app.savedToken() }
        memory.unlockAnswer = .unlock
        #expect(try session().savedToken() == "t-2")
    }

    @Test("a dismissed unlock prompt is .dismissed, and the token is not lost")
    func dismissed() throws {
        let app = try session()
        try app.signIn(token: "t-3")
        memory.isLocked = true
        memory.unlockAnswer = .dismiss
        #expect(throws: LoginSession.Problem.dismissed) { try app.savedToken() }
        #expect(throws: LoginSession.Problem.dismissed) { try app.signIn(token: "other") }
        memory.isLocked = false
        #expect(try app.savedToken() == "t-3")
    }

    @Test("no Secret Service, or no bus: .unreachable")
    func unreachable() throws {
        let app = try session()
        memory.inject(.noSecretService)
        #expect(throws: LoginSession.Problem.unreachable) { try app.savedToken() }
        memory.inject(.noSessionBus)
        #expect(throws: LoginSession.Problem.unreachable) { try app.signIn(token: "x") }
    }

    @Test("a keyring that does not answer: .timedOut, and no new device id is made meanwhile")
    func timedOut() throws {
        let app = try session()
        let id = try app.deviceID()
        memory.inject(.timeout, times: 1)
        #expect(throws: LoginSession.Problem.timedOut) { try app.savedToken() }
        // A fresh resolver (a new process) while the keyring hangs: the backup's id, never a new one.
        memory.inject(.timeout)
        #expect(try session().deviceID() == id)
        memory.inject(nil)
        // A first run whose keyring never answers makes no device id: absence was not proven.
        let stuck = MemoryKeyring()
        stuck.inject(.timeout)
        let firstRun = try LoginSession(keyring: Keyring(memory: stuck), backupDirectory: backup + ".first")
        #expect(throws: LoginSession.Problem.timedOut) { try firstRun.deviceID() }
    }
}
