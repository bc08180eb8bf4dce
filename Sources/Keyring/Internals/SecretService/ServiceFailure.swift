/// Why a Secret Service call failed, where the reason decides what happens next: a retry on a new
/// session, or "the item is gone". The daemons say these in words only (no D-Bus error name tells
/// them apart), so the words are read here, once, and every decision asks this enum. The failures
/// this library raises itself carry a code of their own instead.
enum ServiceFailure: Equatable {
    /// The session or its daemon is gone: the daemon restarted, the connection closed, or the
    /// Secret Service's name left the bus. gnome-keyring: "The session does not exist", "The
    /// session wrapping the secret does not exist" (a value encoded for the old session).
    case sessionGone
    /// kwalletd's "Can't find session /org/…": gone after a restart, or a session whose key it
    /// could not use. Either way a new session may help.
    case sessionUnknownToKWallet
    /// The daemon refused this session's key (kwalletd5: "Client public key size is invalid",
    /// 1 in 256 keys), or the session check found the two sides' keys differ (`SessionCheck`).
    case sessionKeyRejected
    /// kwalletd's "Can't find item at path": the item was deleted meanwhile.
    case noSuchItem

    /// Classifies `error`; nil for a failure none of these decisions is about.
    init?(_ error: KeyringError) {
        switch error {
        case .noSecretService: self = .sessionGone
        case .noSessionBus(let detail) where detail == BusCall.connectionClosed: self = .sessionGone
        case .serviceFailure(let domain, let code, let message):
            if domain == Self.domain {
                guard let own = Self.ownCodes.first(where: { $0.code == code })?.failure else { return nil }
                self = own
            } else if message.contains("Can't find session") {
                self = .sessionUnknownToKWallet
            } else if message.contains("Client public key size is invalid") {
                self = .sessionKeyRejected
            } else if message.contains(Self.kwalletNoSuchItem) {
                self = .noSuchItem
            } else if Self.goneWords.contains(where: message.contains) {
                self = .sessionGone
            } else {
                return nil
            }
        default: return nil
        }
    }

    /// `ServiceCall.run` drops the session and tries once more: the daemon may have restarted.
    var endsSession: Bool { self == .sessionGone || self == .sessionUnknownToKWallet }

    /// `ServiceCall.run` tries a few fresh session keys: each fails with chance 1/256 or so.
    var rejectsSessionKey: Bool { self == .sessionKeyRejected || self == .sessionUnknownToKWallet }

    /// Whether `ServiceCall.run` retries on a new session: a read that would otherwise treat the
    /// failure as "unreadable" must let it through.
    static func isRetriedOnNewSession(_ error: KeyringError) -> Bool {
        ServiceFailure(error).map { $0.endsSession || $0.rejectsSessionKey } ?? false
    }

    /// The error this library raises for its own `sessionGone` or `sessionKeyRejected`.
    var error: KeyringError {
        let code = Self.ownCodes.first { $0.failure == self }?.code ?? -1
        let message =
            switch self {
            case .sessionGone: "the session does not exist in the daemon that owns the Secret Service now"
            case .sessionKeyRejected: "the session's encryption key does not match kwalletd5's"
            case .sessionUnknownToKWallet, .noSuchItem: "the Secret Service lost the session or item"
            }
        return .serviceFailure(domain: Self.domain, code: code, message: message)
    }

    private static let domain = "KeyringIdentity"
    /// Codes of this library's own failures, distinct from its other `-1` failures.
    private static let ownCodes: [(code: Int32, failure: ServiceFailure)] = [(-10, .sessionGone), (-11, .sessionKeyRejected)]
    /// How kwalletd5 says an item does not exist (with InvalidArgs): "Can't find item at path /org/…".
    static let kwalletNoSuchItem = "Can't find item at path"
    /// The other words of a lost session or daemon: GDBus's for an object the new daemon lacks, and
    /// the bus's for a name nobody owns or can start.
    private static let goneWords = [
        "session does not exist", "session wrapping the secret does not exist", "No such interface", "The name",
        "was not provided by any .service files",
    ]
}
