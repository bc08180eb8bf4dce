#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The KeePassXC line of `idtool doctor`: the settings that decide whether unattended calls work.
///
/// It reads KeePassXC's own settings file (`$XDG_CONFIG_HOME/keepassxc/keepassxc.ini`, section
/// `[FdoSecrets]`), with KeePassXC's defaults for keys that are not there. It never fails: the
/// settings are choices, and the line says what each one costs.
extension Doctor {
    static let keePassXC = "keepassxc settings"

    /// The `[FdoSecrets]` keys doctor explains, with KeePassXC 2.7's defaults.
    static let keePassXCDefaults: [(key: String, default: Bool)] = [
        ("UnlockBeforeSearch", true), ("ConfirmAccessItem", true), ("ConfirmDeleteItem", true),
    ]

    /// The check, from the text of keepassxc.ini (nil when there is none).
    static func keePassXCCheck(ini: String?, path: String) -> DoctorCheck {
        let values = fdoSecretsSettings(ini ?? "")
        func value(_ key: String, _ fallback: Bool) -> Bool { values[key].map { $0 == "true" } ?? fallback }
        var parts = [
            "items live only in the database group exposed to the Secret Service (Database Settings > Secret Service Integration)"
        ]
        for (key, fallback) in keePassXCDefaults {
            let on = value(key, fallback)
            let effect: String
            switch key {
            case "UnlockBeforeSearch":
                effect =
                    on
                    ? "a search in a locked database waits on an unlock dialog; calls then report locked after most of --timeout"
                    : "locked databases are reported at once"
            case "ConfirmAccessItem":
                effect = on ? "each read waits for a click in KeePassXC; unattended reads time out" : "reads need no click"
            default:
                effect = on ? "each delete (reset) waits for a click; unattended resets time out" : "deletes need no click"
            }
            parts.append("\(key)=\(on)\(values[key] == nil ? " (default)" : ""): \(effect)")
        }
        parts.append("a locked database hides its items, so idtool reports locked (75) while any database is locked")
        return .pass(keePassXC, parts.joined(separator: "; ") + " [\(ini == nil ? "no " : "")\(path)]")
    }

    /// The check for this user: reads the settings file if there is one.
    static func keePassXCCheck(environment: [String: String]) -> DoctorCheck {
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? ((environment["HOME"] ?? "") + "/.config")
        let path = base + "/keepassxc/keepassxc.ini"
        let text = FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
        return keePassXCCheck(ini: text, path: path)
    }

    /// `key=value` lines of the `[FdoSecrets]` section, values lowercased.
    static func fdoSecretsSettings(_ ini: String) -> [String: String] {
        var inSection = false
        var result: [String: String] = [:]
        for raw in ini.split(whereSeparator: \.isNewline) {
            let line = trimmed(raw)
            if line.hasPrefix("[") {
                inSection = line == "[FdoSecrets]"
            } else if inSection, let equals = line.firstIndex(of: "=") {
                result[trimmed(line[..<equals])] = trimmed(line[line.index(after: equals)...]).lowercased()
            }
        }
        return result
    }

    private static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
