internal import CLibSecret
internal import KeyringShim

/// Where a GError arose; the same GLib code means different things while connecting, afterwards,
/// and on libsecret's file backend (whose errors name the keyring file).
enum CallPhase: Equatable {
    case connecting
    case talking
    /// A call on libsecret's file backend, on the keyring file at `path`.
    case file(path: String)
}

extension KeyringError {
    /// Maps a GError (without freeing it) to a typed case.
    init(gError error: UnsafeMutablePointer<GError>, phase: CallPhase) {
        if case .file(let path) = phase {
            self.init(fileBackendError: error, path: path)
            return
        }
        let domain = error.pointee.domain
        let code = error.pointee.code
        let message = error.pointee.message.map { String(cString: $0) } ?? ""
        let remoteName = Self.remoteName(of: error)

        if domain == kr_io_error_quark() {
            switch GIOErrorEnum(rawValue: UInt32(code)) {
            case G_IO_ERROR_CANCELLED:
                self = .cancelled
                return
            case G_IO_ERROR_TIMED_OUT:
                self = .timedOut(seconds: 25)
                return
            case G_IO_ERROR_CLOSED, G_IO_ERROR_BROKEN_PIPE, G_IO_ERROR_CONNECTION_CLOSED:
                self = .noSessionBus(detail: BusCall.connectionClosed)
                return
            default:
                if phase == .connecting {
                    self = .noSessionBus(detail: message)
                    return
                }
            }
        }
        if domain == kr_dbus_error_quark() {
            switch GDBusError(rawValue: UInt32(code)) {
            case G_DBUS_ERROR_SERVICE_UNKNOWN, G_DBUS_ERROR_NAME_HAS_NO_OWNER:
                self = .noSecretService
                return
            case G_DBUS_ERROR_NO_REPLY, G_DBUS_ERROR_TIMEOUT, G_DBUS_ERROR_TIMED_OUT:
                self = .timedOut(seconds: 25)
                return
            case G_DBUS_ERROR_NO_SERVER, G_DBUS_ERROR_FILE_NOT_FOUND, G_DBUS_ERROR_DISCONNECTED:
                self = .noSessionBus(detail: message)
                return
            default:
                if phase == .connecting, remoteName == nil {
                    self = .noSessionBus(detail: message)
                    return
                }
            }
        }
        if domain == kr_secret_error_quark() && code == Int32(SECRET_ERROR_IS_LOCKED.rawValue)
            || remoteName == "org.freedesktop.Secret.Error.IsLocked"
        {
            self = .locked(itemExists: false)
            return
        }
        if message.contains(Self.kwalletKeyExchangeFailure) {
            // KWallet without the QCA OpenSSL plugin; ServiceCall.connect names the provider.
            self = .keyExchangeFailed(provider: nil, detail: Self.strippingRemotePrefix(message))
            return
        }
        let domainName = g_quark_to_string(domain).map { String(cString: $0) } ?? "unknown"
        self = .serviceFailure(domain: domainName, code: code, message: Self.strippingRemotePrefix(message))
    }

    /// How KWallet answers an encrypted OpenSession without its QCA OpenSSL plugin (with InvalidArgs):
    /// "createDLGroup failed: maybe libqca-ossl is missing".
    static let kwalletKeyExchangeFailure = "createDLGroup failed"

    /// The D-Bus error name a remote peer sent (e.g. `org.freedesktop.DBus.Error.AccessDenied`), if any.
    static func remoteName(of error: UnsafeMutablePointer<GError>) -> String? {
        g_dbus_error_get_remote_error(error).map { name -> String in
            defer { g_free(name) }
            return String(cString: name)
        }
    }

    /// GDBus prefixes remote messages with "GDBus.Error:name: "; the name is already in the domain.
    private static func strippingRemotePrefix(_ message: String) -> String {
        guard message.hasPrefix("GDBus.Error:"), let range = message.firstRange(of: ": ") else { return message }
        return String(message[range.upperBound...])
    }
}

/// Calls `body` with an empty GError slot and throws the mapped error if the slot was filled.
/// The GError is freed here, on every path.
@inline(__always)
func throwingGError<T>(
    _ phase: CallPhase = .talking,
    _ body: (UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T
) throws(KeyringError) -> T {
    var error: UnsafeMutablePointer<GError>? = nil
    let result = body(&error)
    if let error {
        defer { g_error_free(error) }
        throw KeyringError(gError: error, phase: phase)
    }
    return result
}
