#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Doctor {
    static let keyringFiles = "keyring files"

    /// The directory both gnome-keyring and oo7-daemon keep their keyring files in:
    /// `$XDG_DATA_HOME/keyrings` when that is an absolute path, else `~/.local/share/keyrings`.
    static func keyringsDirectory(environment: [String: String]) -> String? {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data + "/keyrings" }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.local/share/keyrings"
    }

    /// A split keyring: gnome-keyring's `login.keyring` beside oo7-daemon's `v1/login.keyring`.
    /// oo7-daemon (0.6, read in its source) serves the v1 file and migrates the older one only at a
    /// PAM login, and when a v1 file already exists it deletes the older one without importing
    /// its items; gnome-keyring never reads v1. Either way, items in the file the running daemon
    /// does not read are not served, and a read of them answers "absent". Nothing when not split.
    static func splitKeyringCheck(environment: [String: String], provider: String?) -> [DoctorCheck] {
        guard let directory = keyringsDirectory(environment: environment) else { return [] }
        let legacy = directory + "/login.keyring"
        let v1 = directory + "/v1/login.keyring"
        guard FileManager.default.fileExists(atPath: legacy), FileManager.default.fileExists(atPath: v1) else { return [] }
        let serving: String
        switch provider {
        case "oo7-daemon": serving = "oo7-daemon serves only v1/login.keyring"
        case "gnome-keyring-daemon": serving = "gnome-keyring serves only login.keyring"
        default: serving = "each daemon serves only one of them"
        }
        return [
            .fail(
                keyringFiles,
                "split login keyring in \(directory): login.keyring (gnome-keyring's) beside v1/login.keyring (oo7-daemon's); "
                    + "\(serving), so items only in the other read as absent",
                hint: "copy both files somewhere safe first: oo7-daemon 0.6 deletes login.keyring without importing its items "
                    + "when v1/login.keyring exists; then move the items you need into the keyring your daemon serves",
                status: .dataError)
        ]
    }
}
