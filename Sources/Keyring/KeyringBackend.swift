#if canImport(Glibc)
import Glibc
#endif

/// Where a `Keyring` keeps its items.
///
/// libsecret's simple API chooses between the Secret Service and its own file backend for every
/// app; `Keyring` makes the same choice, so an app and `secret-tool` run in the same environment
/// see the same items.
public enum KeyringBackend: Sendable, Equatable, CustomStringConvertible {
    /// Chosen as libsecret chooses: `SECRET_BACKEND=file` or `=service` when set; otherwise the
    /// file backend inside a Flatpak sandbox (`/.flatpak-info` exists) whose Secret portal answers;
    /// otherwise the Secret Service.
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
    public var resolved: KeyringBackend {
        guard self == .automatic else { return self }
        if let chosen = getenv("SECRET_BACKEND"), chosen.pointee != 0 {
            return String(cString: chosen) == "file" ? .file : .secretService
        }
        return FileKeyring.sandboxUsesFileBackend ? .file : .secretService
    }

    /// The keyring file the file backend reads and writes in this environment:
    /// `SECRET_FILE_TEST_PATH` when set, else `$XDG_DATA_HOME/keyrings/default.keyring`.
    public static var keyringFilePath: String { FileKeyring.path }
}
