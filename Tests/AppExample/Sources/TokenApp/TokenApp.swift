import DeviceIdentity
import Foundation
import Keyring

/// A tiny app's keyring code: it keeps the user's login token, and a device id, and turns every
/// keyring problem into something its UI can say. This is the code its tests exercise.
public struct LoginSession: Sendable {
    /// What the app shows when the keyring cannot be used.
    public enum Problem: Error, Equatable, Sendable {
        /// The keyring is locked (and nobody unlocked it): ask the user to unlock and retry.
        case locked
        /// The user dismissed the unlock prompt: do not ask again right away.
        case dismissed
        /// No keyring is reachable (no session bus, no Secret Service): offer to sign in each time.
        case unreachable
        /// The keyring did not answer in time: retry later.
        case timedOut
        /// Anything else, with the library's description.
        case other(String)
    }

    let store: SecretStore
    let resolver: IdentifierResolver

    /// - Parameters:
    ///   - keyring: the keyring (a test passes `Keyring(memory:)`).
    ///   - backupDirectory: where the device id's backup file lives; nil for the standard place.
    public init(keyring: Keyring = .default, backupDirectory: String? = nil) throws {
        store = try SecretStore(identifier: "com.example.tokenapp.login", keyring: keyring)
        resolver = try IdentifierResolver(
            scope: .app("com.example.tokenapp"), keyring: keyring, backup: backupDirectory.map { .directory($0) } ?? .standard)
    }

    /// Saves the token after a sign-in.
    public func signIn(token: String) throws(Problem) {
        do { try store.setObject(token, forKey: .valueData) } catch { throw Self.problem(error) }
    }

    /// The saved token; nil means "not signed in" and nothing else.
    public func savedToken() throws(Problem) -> String? {
        do { return try store.object(forKey: .valueData) } catch { throw Self.problem(error) }
    }

    /// Forgets the token.
    public func signOut() throws(Problem) {
        do { try store.reset() } catch { throw Self.problem(error) }
    }

    /// The device id the app sends with each request.
    public func deviceID() throws(Problem) -> String {
        do {
            return try resolver.identifier()
        } catch {
            switch error {
            case .keyring(let cause), .keyringUnreachable(let cause): throw Self.problem(cause)
            default: throw .other("\(error)")
            }
        }
    }

    static func problem(_ error: KeyringError) -> Problem {
        switch error {
        case .locked(_, .dismissed): return .dismissed
        case .locked: return .locked
        case .noSessionBus, .noSecretService: return .unreachable
        case .timedOut: return .timedOut
        default: return .other("\(error)")
        }
    }
}
