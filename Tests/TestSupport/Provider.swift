// Which Secret Service provider the suites run against (scripts/with-keyring --provider).
import Foundation
import Keyring

/// The Secret Service provider the tests run against: `scripts/with-keyring --provider NAME`
/// exports it as `KEYRING_PROVIDER`. Tests that depend on one provider's quirks check it and say why.
public enum TestProvider {
    /// The provider's name, as in scripts/providers/NAME.sh: "gnome-keyring", "kwallet", "keepassxc" or "oo7".
    public static let name = ProcessInfo.processInfo.environment["KEYRING_PROVIDER"] ?? "gnome-keyring"
    /// True under the default scripts/with-keyring.
    public static var isGnomeKeyring: Bool { name == "gnome-keyring" }
    /// True under KWallet (kwalletd5 or kwalletd6, scripts/with-kwallet).
    public static var isKWallet: Bool { name == "kwallet" }
    /// True under scripts/with-keepassxc.
    public static var isKeePassXC: Bool { name == "keepassxc" }
    /// The name of the process that owns org.freedesktop.secrets, as `status().provider` reports it.
    public static var processName: String {
        switch name {
        case "kwallet": kwalletDaemon
        case "keepassxc": "keepassxc"
        case "oo7": "oo7-daemon"
        default: "gnome-keyring-daemon"
        }
    }
    /// The KWallet daemon that serves the Secret Service on this system, as
    /// scripts/providers/kwallet.sh picks and exports it: "ksecretd" (KDE Frameworks 6.14 and
    /// later, Debian 14, where kwalletd6 is a proxy), "kwalletd6" (earlier Frameworks 6, Debian 13)
    /// or "kwalletd5" (KDE Frameworks 5, Debian 12). Its own bus name is org.kde.<daemon>.
    public static let kwalletDaemon =
        ProcessInfo.processInfo.environment["KWALLET_DAEMON"]
        ?? ["ksecretd", "kwalletd6"].first { FileManager.default.isExecutableFile(atPath: "/usr/bin/\($0)") } ?? "kwalletd5"
    /// What the provider does differently: the library's own `Quirks` for it, which tests ask
    /// instead of its name.
    package static var quirks: Quirks { quirks(provider: name, kwalletDaemon: kwalletDaemon) }

    /// The `Quirks` of the harness's provider `provider` (scripts/providers/NAME.sh), with KWallet's
    /// Secret Service served by `kwalletDaemon`.
    package static func quirks(provider: String, kwalletDaemon: String) -> Quirks {
        switch provider {
        case "kwallet": kwalletDaemon == "ksecretd" ? .ksecretd : .kwallet
        case "keepassxc": .keePassXC
        case "gnome-keyring": .gnomeKeyring
        case "oo7": .oo7Daemon
        default: .strict
        }
    }

    /// What an unlock prompt comes to in this harness when no mock prompter answers it.
    public enum UnlockPromptOutcome: Sendable {
        /// gnome-keyring: its gcr-prompter finds no display and the prompt ends dismissed;
        /// oo7-daemon: no prompter of its own is on the bus, and Prompt fails at once.
        case dismissed
        /// KWallet: the wallet's empty password opens it without a dialog.
        case completes
        /// KeePassXC: its own dialog opens and nobody answers it before the deadline.
        case unanswered
    }
    /// How an unlock prompt ends here with nobody to answer it (`UnlockPromptOutcome`).
    public static var unansweredUnlock: UnlockPromptOutcome {
        switch name {
        case "kwallet": .completes
        case "keepassxc": .unanswered
        default: .dismissed
        }
    }

    /// How a watch reports another process's update of an item: `changed`; where the provider's
    /// updates replace the item (oo7-daemon, `Quirks.keepsItemChanges`), its deletion and a creation.
    public static var updateReport: [KeyringChange.Kind] { quirks.keepsItemChanges ? [.changed] : [.deleted, .created] }

    /// Whether `kinds` are the reports of one update or more: `updateReport`, repeated.
    public static func areUpdates(_ kinds: [KeyringChange.Kind]) -> Bool {
        let report = updateReport
        guard !kinds.isEmpty, kinds.count.isMultiple(of: report.count) else { return false }
        return stride(from: 0, to: kinds.count, by: report.count).allSatisfy { Array(kinds[$0..<$0 + report.count]) == report }
    }

    /// Whether the provider lists a locked collection's items (as locked). gnome-keyring and
    /// KWallet do, so a locked item is known to exist; KeePassXC hides a locked database's items
    /// from every search, so a locked item there reads as `.locked(itemExists: false)`.
    public static var listsLockedItems: Bool { quirks.listsLockedMatches }
    /// True on a keyring as years of use leave it (`scripts/with-keyring --lived-in`, and scripts/test's
    /// lived-in keyring file): other clients' items and, with a daemon, a second keyring left locked.
    /// gnome-keyring: an old keyring, and the default alias on a third one (scripts/providers/lived-in.py);
    /// KWallet: a second wallet, closed; KeePassXC: three databases, the first locked, the last active.
    public static var isLivedIn: Bool { ProcessInfo.processInfo.environment["KEYRING_LIVED_IN"] == "1" }
    /// The lived-in fixture's old keyring, left locked, and its password (scripts/providers/*.sh).
    public static var livedInOldKeyring: (label: String, password: String) {
        switch name {
        case "kwallet": ("oldwallet", "an-old-password-nobody-remembers")
        case "keepassxc": ("old", ProcessInfo.processInfo.environment["WITH_KEYRING_PASSWORD"] ?? "")
        default: ("Default keyring", "an-old-password-nobody-remembers")
        }
    }
    /// The label of the collection the default alias names on the lived-in fixture.
    public static var livedInDefaultKeyring: String {
        switch name {
        case "kwallet": "kdewallet"
        case "keepassxc": "keyring"
        default: "Work"
        }
    }
    /// How many collections the lived-in fixture has: gnome-keyring's four (Work, the old one,
    /// Login and the session collection), KWallet's two wallets.
    public static var livedInCollectionCount: Int { name == "gnome-keyring" ? 4 : 2 }
    /// The lived-in fixture's collection that is unlocked but not the default, if any: gnome-keyring's "Login".
    public static var livedInOtherUnlockedKeyring: String? { name == "gnome-keyring" ? "Login" : nil }
    /// The identifier and value of the one `SecretStore` item in that old keyring.
    public static let livedInOldItem = (identifier: "io.keyringidentity.lived-in.old", value: "from-the-old-keyring")
    /// True when libsecret's file backend holds the items (scripts/test's last configuration runs
    /// suites with SECRET_BACKEND=file): no daemon, no bus objects, nothing to lock or restart.
    /// Tests that need the Secret Service (secretstorage, locking, object paths) say so with it.
    public static var usesFileBackend: Bool { ProcessInfo.processInfo.environment["SECRET_BACKEND"] == "file" }
}
