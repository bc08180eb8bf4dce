#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// KWallet's settings file, `kwalletrc` in `$XDG_CONFIG_HOME` (else `~/.config`), read as KConfig
/// reads it: `[section]` headers, `key=value` lines. The flush asks it about "Prompt on Open";
/// `idtool doctor` about the Secret Service's `apiEnabled`.
package enum KWalletConfig {
    /// The boolean `key` under `[section]` (KConfig's true, on, yes, 1 and their negatives); nil
    /// when it is unset, unreadable or not a boolean. The last line that sets it wins.
    package static func bool(
        _ key: String, in section: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Bool? {
        guard
            let directory = environment["XDG_CONFIG_HOME"].flatMap({ $0.isEmpty ? nil : $0 })
                ?? environment["HOME"].map({ $0 + "/.config" }),
            let text = try? String(contentsOfFile: directory + "/kwalletrc", encoding: .utf8)
        else { return nil }
        var current = ""
        var value: Bool?
        for line in text.split(whereSeparator: \.isNewline) {
            let line = trimmed(line)
            if line.hasPrefix("[") {
                current = line
                continue
            }
            guard current == "[\(section)]", let equals = line.firstIndex(of: "="),
                trimmed(line[..<equals]) == key
            else { continue }
            switch trimmed(line[line.index(after: equals)...]).lowercased() {
            case "true", "on", "yes", "1": value = true
            case "false", "off", "no", "0": value = false
            default: value = nil
            }
        }
        return value
    }

    /// `text` without leading and trailing whitespace.
    private static func trimmed(_ text: some StringProtocol) -> String {
        String(String(text.drop(while: \.isWhitespace).reversed()).drop(while: \.isWhitespace).reversed())
    }
}
