import Testing

@testable import Keyring

/// `ServiceFailure` reads the daemons' words once; `ServiceCall.run`'s retries decide on it. The
/// messages are the ones gnome-keyring, kwalletd5, GDBus and the bus send, as logged by the suites.
@Suite("Service failures")
struct ServiceFailureTests {
    static func failure(_ message: String, domain: String = "g-dbus-error-quark") -> KeyringError {
        .serviceFailure(domain: domain, code: 19, message: message)
    }

    @Test(
        "each daemon's words give one failure, and the retry it decides",
        arguments: [
            ("GDBus.Error:org.freedesktop.Secret.Error.NoSession: The session does not exist", ServiceFailure.sessionGone),
            ("GDBus.Error:org.freedesktop.DBus.Error.InvalidArgs: The session wrapping the secret does not exist", .sessionGone),
            ("GDBus.Error:org.freedesktop.DBus.Error.ServiceUnknown: The name :1.12 was not provided by any .service files", .sessionGone),
            ("GDBus.Error:org.freedesktop.DBus.Error.UnknownMethod: No such interface “org.freedesktop.Secret.Item”", .sessionGone),
            (
                "GDBus.Error:org.freedesktop.DBus.Error.InvalidArgs: Can't find session /org/freedesktop/secrets/session/3",
                .sessionUnknownToKWallet
            ),
            ("GDBus.Error:org.freedesktop.DBus.Error.InvalidArgs: Client public key size is invalid", .sessionKeyRejected),
            (
                "GDBus.Error:org.freedesktop.DBus.Error.InvalidArgs: Can't find item at path /org/freedesktop/secrets/collection/kdewallet/7",
                .noSuchItem
            ),
        ])
    func daemonWords(message: String, expected: ServiceFailure) {
        let failure = ServiceFailure(Self.failure(message))
        #expect(failure == expected)
        #expect(failure?.endsSession == (expected == .sessionGone || expected == .sessionUnknownToKWallet))
        #expect(failure?.rejectsSessionKey == (expected == .sessionKeyRejected || expected == .sessionUnknownToKWallet))
        #expect(ServiceFailure.isRetriedOnNewSession(Self.failure(message)) == (expected != .noSuchItem))
    }

    @Test("this library's own failures are recognised by their code, not their words")
    func ownFailures() {
        #expect(ServiceFailure(ServiceFailure.sessionGone.error) == .sessionGone)
        #expect(ServiceFailure(ServiceFailure.sessionKeyRejected.error) == .sessionKeyRejected)
        // Its other failures, whatever they say, decide nothing.
        #expect(ServiceFailure(Self.failure("the session does not exist", domain: "KeyringIdentity")) == nil)
    }

    @Test("a lost bus or daemon is a gone session; other failures are not retried")
    func otherErrors() {
        #expect(ServiceFailure(.noSecretService) == .sessionGone)
        #expect(ServiceFailure(.noSessionBus(detail: BusCall.connectionClosed)) == .sessionGone)
        #expect(ServiceFailure(.noSessionBus(detail: "DBUS_SESSION_BUS_ADDRESS is not set")) == nil)
        #expect(ServiceFailure(.locked(itemExists: true)) == nil)
        #expect(ServiceFailure(Self.failure("GDBus.Error:org.freedesktop.DBus.Error.AccessDenied: Rejected")) == nil)
        #expect(!ServiceFailure.isRetriedOnNewSession(.timedOut(seconds: 1)))
    }
}
