// Which Secret Service provider the suites run against (scripts/with-keyring --provider).
import Foundation

/// The provider under test, from `KEYRING_PROVIDER` (set by scripts/with-keyring).
public enum TestProvider {
    /// Its name in scripts/providers/: "gnome-keyring" or "kwallet".
    public static let name = ProcessInfo.processInfo.environment["KEYRING_PROVIDER"] ?? "gnome-keyring"
    /// True under gnome-keyring.
    public static var isGnomeKeyring: Bool { name == "gnome-keyring" }
    /// True under KWallet (kwalletd5).
    public static var isKWallet: Bool { name == "kwallet" }
    /// The name of the process that owns org.freedesktop.secrets, as `status().provider` reports it.
    public static var processName: String {
        switch name {
        case "kwallet": "kwalletd5"
        default: "gnome-keyring-daemon"
        }
    }
}
