#if canImport(Glibc)
import Glibc
#endif

/// Where a `Keyring` keeps its items.
///
/// libsecret's simple API chooses between the Secret Service and its own file backend for every
/// app; `Keyring` makes the same choice, so an app and `secret-tool` run in the same environment
/// see the same items.
public enum KeyringBackend: Sendable, Equatable, CustomStringConvertible {
    /// Chosen as libsecret 0.20 chooses: the file backend inside a sandbox (`/.flatpak-info`
    /// exists, or `SNAP_NAME` is set) whose Secret portal answers; otherwise `SECRET_BACKEND=file`
    /// or `=service` when set; otherwise the Secret Service.
    case automatic
    /// The Secret Service on the session bus (gnome-keyring, KWallet, KeePassXC).
    case secretService
    /// libsecret's file backend: an encrypted keyring file in the app's data directory
    /// (`$XDG_DATA_HOME/keyrings/default.keyring`, or `SECRET_FILE_TEST_PATH`), whose key comes from
    /// the Secret portal (or `SECRET_FILE_TEST_PASSWORD`). It has no locked state.
    case file

    /// `automatic`, `secret-service` or `file`.
    public var description: String {
        switch self {
        case .automatic: return "automatic"
        case .secretService: return "secret-service"
        case .file: return "file"
        }
    }

    /// The backend `.automatic` stands for in this process's environment; the others stand for themselves.
    public var resolved: KeyringBackend { resolvedWithReason.backend }

    /// The backend `.automatic` stands for, and why, in words: e.g. "chosen by SECRET_BACKEND=file".
    public var resolvedWithReason: (backend: KeyringBackend, reason: String) {
        guard self == .automatic else { return (self, "chosen by the app") }
        // libsecret looks at the sandbox first: there SECRET_BACKEND is not consulted.
        if FileKeyring.sandboxUsesFileBackend { return (.file, "chosen in a sandbox whose Secret portal answers") }
        if let chosen = getenv("SECRET_BACKEND"), chosen.pointee != 0 {
            let name = String(cString: chosen)
            return (name == "file" ? .file : .secretService, "chosen by SECRET_BACKEND=\(name)")
        }
        return (.secretService, "the default")
    }

    /// The keyring file the file backend reads and writes in this environment:
    /// `SECRET_FILE_TEST_PATH` when set, else `$XDG_DATA_HOME/keyrings/default.keyring`.
    public static var keyringFilePath: String { FileKeyring.path }
}
