import Foundation

/// The Secret Service provider the tests run against: `scripts/with-keyring --provider NAME`
/// exports it as `KEYRING_PROVIDER`. Tests that depend on one provider's quirks check it and say why.
public enum TestProvider {
    /// The provider's name, as in scripts/providers/NAME.sh.
    public static var name: String { ProcessInfo.processInfo.environment["KEYRING_PROVIDER"] ?? "gnome-keyring" }
    /// True under scripts/with-keepassxc.
    public static var isKeePassXC: Bool { name == "keepassxc" }
    /// True under the default scripts/with-keyring.
    public static var isGnomeKeyring: Bool { name == "gnome-keyring" }
    /// The name of the process that owns org.freedesktop.secrets.
    public static var processName: String { isKeePassXC ? "keepassxc" : "gnome-keyring-daemon" }
    /// Whether the provider lists a locked collection's items (as locked). gnome-keyring does, so
    /// it can say a locked item exists; KeePassXC hides a locked database's items from every
    /// search, so a locked item there reads as `.locked(itemExists: false)`.
    public static var listsLockedItems: Bool { !isKeePassXC }
}
