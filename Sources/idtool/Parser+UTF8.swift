#if canImport(Glibc)
import Glibc
#endif

// Swift's CommandLine.arguments silently repairs invalid UTF-8 (bytes become U+FFFD), so two
// different byte strings could name the same app or item. These reject such names instead.
extension CommandLineParser {
    /// The arguments after the program name, and the repaired forms of those that were not UTF-8.
    static func decodedArguments() -> (arguments: [String], notUTF8: Set<String>) {
        var arguments: [String] = []
        var notUTF8: Set<String> = []
        for index in 1..<Int(CommandLine.argc) {
            guard let raw = CommandLine.unsafeArgv[index] else { continue }
            if let text = String(validatingCString: raw) {
                arguments.append(text)
            } else {
                let repaired = String(decoding: UnsafeRawBufferPointer(start: raw, count: strlen(raw)), as: UTF8.self)
                arguments.append(repaired)
                notUTF8.insert(repaired)
            }
        }
        return (arguments, notUTF8)
    }

    /// Fails when a name the command would use came from bytes that are not UTF-8: a usage
    /// error (64) for app IDs and vendor groups, bad data (65) for item names and paths.
    static func rejectNonUTF8(_ command: Command, _ notUTF8: Set<String>) throws(UsageError) {
        guard !notUTF8.isEmpty else { return }
        func check(_ value: String?, _ what: String, _ topic: HelpTopic, _ status: ExitCode) throws(UsageError) {
            if let value, notUTF8.contains(value) {
                throw UsageError(message: "\(what) is not valid UTF-8", topic: topic, status: status)
            }
        }
        switch command {
        case .get(let app, let vendor, _, _, _):
            try check(app, "--app", .get, .usage)
            try check(vendor, "--vendor", .get, .usage)
        case .show(let app, let vendor, _, _, _):
            try check(app, "--app", .show, .usage)
            try check(vendor, "--vendor", .show, .usage)
        case .reset(let app, let vendor, _, _):
            try check(app, "--app", .reset, .usage)
            try check(vendor, "--vendor", .reset, .usage)
        case .migrate(let app, let source, _, _, _, _):
            try check(app, "--app", .migrate, .usage)
            // SOURCE arrives as "file:…"/"keyring:…", alone or as --from=…; no other argument carries it.
            _ = source
            if notUTF8.contains(where: { $0.contains("file:") || $0.contains("keyring:") }) {
                throw UsageError(message: "the --from source is not valid UTF-8", topic: .migrate, status: .dataError)
            }
        case .itemGet(let identifier, let group, let account, _, _, _), .itemSet(let identifier, let group, let account, _, _, _):
            try check(identifier, "the identifier", .item, .dataError)
            try check(group, "--group", .item, .dataError)
            try check(account, "--account", .item, .dataError)
        case .itemReset(let identifier, let group, let account, _, _):
            try check(identifier, "the identifier", .itemReset, .dataError)
            try check(group, "--group", .itemReset, .dataError)
            try check(account, "--account", .itemReset, .dataError)
        case .itemList(let identifier, let group, _, _, _):
            try check(identifier, "the identifier", .itemList, .dataError)
            try check(group, "--group", .itemList, .dataError)
        case .itemWatch(let identifier, let group, let account, _, _):
            try check(identifier, "the identifier", .itemWatch, .dataError)
            try check(group, "--group", .itemWatch, .dataError)
            try check(account, "--account", .itemWatch, .dataError)
        case .help, .version, .generate, .derive, .doctor, .lock, .unlock:
            return
        }
    }
}
