import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A command line that idtool cannot run. `main` prints `idtool: <message>` on stderr, followed by
/// the usage of `topic` when `status` is `.usage`, and exits with `status`.
struct UsageError: Error, Equatable, Sendable {
    /// One line saying what is wrong. Never holds an identifier or a secret.
    var message: String
    /// The command whose usage fits the mistake.
    var topic: HelpTopic
    /// `.usage` (64) for a malformed command line, `.dataError` (65) for a well-formed but bad value.
    var status: ExitCode = .usage
}

/// Turns `argv` into a `Command`. Pure: it reads nothing but its arguments, so it is tested
/// without a keyring.
enum CommandLineParser {
    /// The `--timeout` used when none is given.
    static let defaultTimeout: Duration = .seconds(10)
    /// The largest `--timeout` accepted, in seconds (larger values would overflow timers).
    static let maximumTimeoutSeconds: Double = 86_400
    /// The app name used when neither `--app` nor `IDTOOL_APP` gives one.
    static let defaultApp = "idtool"

    /// Parses the arguments after the program name.
    /// - Parameters:
    ///   - arguments: `CommandLine.arguments` without the first element.
    ///   - environment: the process environment; only `IDTOOL_APP` is read.
    /// - Returns: the command to run, with every default filled in.
    /// - Throws: `UsageError` for anything malformed (status 64), or a bad `--app-key` (status 65).
    static func parse(_ arguments: [String], environment: [String: String]) throws(UsageError) -> Command {
        try parse(arguments, appFromEnvironment: environment["IDTOOL_APP"])
    }

    /// Parses the arguments after the program name, given only the value of `IDTOOL_APP`.
    /// - Parameters:
    ///   - arguments: `CommandLine.arguments` without the first element.
    ///   - appFromEnvironment: the value of `IDTOOL_APP`, nil when it is unset.
    /// - Returns: the command to run, with every default filled in.
    /// - Throws: `UsageError` for anything malformed (status 64), or a bad `--app-key` (status 65).
    static func parse(_ arguments: [String], appFromEnvironment: String?) throws(UsageError) -> Command {
        guard let first = arguments.first else {
            throw UsageError(message: "missing command", topic: .overview)
        }
        let rest = Array(arguments.dropFirst())
        switch first {
        case "-h", "--help":
            return .help(.overview)
        case "--version":
            guard rest.isEmpty else { throw UsageError(message: "--version takes no arguments", topic: .overview) }
            return .version
        case "--generate":
            return try parseGenerate(rest)
        default:
            break
        }
        guard let command = Interface.topLevel.first(where: { $0.words == [first] }) else {
            if first.hasPrefix("-") {
                throw UsageError(message: "unknown option \(quoted(optionName(first)))", topic: .overview)
            }
            throw UsageError(message: "unknown command \(quoted(first))", topic: .overview)
        }
        if !command.subcommands.isEmpty { return try parseGroup(command, rest) }
        guard let scan = try Scan(rest, command) else { return .help(command.topic) }
        switch command.topic {
        case .get, .show, .reset:
            let app = try scan.app(appFromEnvironment)
            let vendor = try scan.nonEmpty("--vendor")
            let timeout = try scan.timeout()
            switch command.topic {
            case .get: return .get(app: app, vendor: vendor, json: scan.has("--json"), timeout: timeout, unlock: scan.unlock)
            case .show: return .show(app: app, vendor: vendor, json: scan.has("--json"), timeout: timeout, unlock: scan.unlock)
            default: return .reset(app: app, vendor: vendor, timeout: timeout, unlock: scan.unlock)
            }
        case .migrate:
            return .migrate(
                app: try scan.app(appFromEnvironment), source: try parseSource(scan.values["--from"]!), dryRun: scan.has("--dry-run"),
                removeLegacy: scan.has("--remove-legacy"), timeout: try scan.timeout(), unlock: scan.unlock)
        case .derive:
            guard let key = parseAppKey(scan.values["--app-key"]!) else {
                throw UsageError(
                    message: "bad --app-key: give 32 hexadecimal digits, with or without the dashes of a UUID",
                    topic: .derive, status: .dataError)
            }
            return .derive(appKey: key, uuid: scan.has("--uuid"))
        case .doctor:
            return .doctor(json: scan.has("--json"), timeout: try scan.timeout())
        case .lock:
            return .lock(timeout: try scan.timeout())
        case .unlock:
            return .unlock(timeout: try scan.timeout(), unlock: scan.unlock)
        default:
            // Interface lists a command that has no case here.
            throw UsageError(
                message: "internal error: \(command.name) has no parser: report this as a bug", topic: .overview, status: .software)
        }
    }

    /// A group's subcommand (`item get`); the group itself takes only `--help`.
    private static func parseGroup(_ group: Interface.Command, _ arguments: [String]) throws(UsageError) -> Command {
        let names = Interface.list(group.subcommands.map { Interface.command($0).words.last! })
        guard let sub = arguments.first else {
            throw UsageError(message: "\(group.name) needs a subcommand: \(names)", topic: group.topic)
        }
        let rest = Array(arguments.dropFirst())
        if sub == "-h" || sub == "--help" { return .help(group.topic) }
        guard let command = group.subcommands.map(Interface.command).first(where: { $0.words.last == sub }) else {
            if sub.hasPrefix("-") {
                throw UsageError(message: "unknown option \(quoted(optionName(sub)))", topic: group.topic)
            }
            throw UsageError(message: "unknown \(group.name) subcommand \(quoted(sub)): use \(names)", topic: group.topic)
        }
        guard let scan = try Scan(rest, command) else { return .help(command.topic) }
        let group = try scan.nonEmpty("--group")
        if command.topic == .itemList {
            let identifier = scan.positionals.isEmpty ? nil : try scan.identifier()
            guard identifier != nil || group != nil else {
                throw UsageError(message: "item list needs IDENTIFIER, --group G or both", topic: .itemList)
            }
            return .itemList(
                identifier: identifier, group: group, json: scan.has("--json"), timeout: try scan.timeout(), unlock: scan.unlock)
        }
        let identifier = try scan.identifier()
        let account = try scan.nonEmpty("--account")
        switch command.topic {
        case .itemGet:
            let key = try scan.key()
            return .itemGet(
                identifier: identifier, group: group, account: account, key: key, timeout: try scan.timeout(), unlock: scan.unlock)
        case .itemSet:
            let key = try scan.key()
            return .itemSet(
                identifier: identifier, group: group, account: account, key: key, timeout: try scan.timeout(), unlock: scan.unlock)
        case .itemReset:
            return .itemReset(identifier: identifier, group: group, account: account, timeout: try scan.timeout(), unlock: scan.unlock)
        case .itemWatch:
            return .itemWatch(identifier: identifier, group: group, account: account, json: scan.has("--json"), timeout: try scan.timeout())
        default:
            throw UsageError(
                message: "internal error: \(command.name) has no parser: report this as a bug", topic: .overview, status: .software)
        }
    }

    /// `--generate man|reference` or `--generate completion bash|zsh|fish`: hidden, for scripts/install
    /// and scripts/docs-tables.
    private static func parseGenerate(_ arguments: [String]) throws(UsageError) -> Command {
        let usage = "--generate needs man, reference, or completion and one of " + Interface.list(Shell.allCases.map(\.rawValue))
        switch arguments.first {
        case "man" where arguments.count == 1:
            return .generate(.man)
        case "reference" where arguments.count == 1:
            return .generate(.reference)
        case "completion" where arguments.count == 2:
            guard let shell = Shell(rawValue: arguments[1]) else { throw UsageError(message: usage, topic: .overview) }
            return .generate(.completion(shell))
        default:
            throw UsageError(message: usage, topic: .overview)
        }
    }

    // MARK: - Values

    /// `keyring:ATTR=VALUE[,ATTR=VALUE…]`, `file:PATH` or `machine-id`.
    static func parseSource(_ text: String) throws(UsageError) -> MigrationSource {
        let usage = "use keyring:ATTR=VALUE[,ATTR=VALUE...], file:PATH or machine-id"
        if text == "machine-id" { return .machineID }
        if text.hasPrefix("file:") {
            let path = String(text.dropFirst("file:".count))
            guard !path.isEmpty else { throw UsageError(message: "bad --from: file: needs a PATH", topic: .migrate) }
            return .file(path: path)
        }
        if text.hasPrefix("keyring:") {
            let list = text.dropFirst("keyring:".count)
            guard !list.isEmpty else {
                throw UsageError(message: "bad --from: keyring: needs at least one ATTR=VALUE", topic: .migrate)
            }
            var attributes: [String: String] = [:]
            for pair in list.split(separator: ",", omittingEmptySubsequences: false) {
                guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                    throw UsageError(
                        message: "bad --from: each keyring attribute must be ATTR=VALUE with a non-empty ATTR", topic: .migrate)
                }
                let name = String(pair[..<equals])
                guard attributes[name] == nil else {
                    throw UsageError(message: "bad --from: keyring attribute \(quoted(name)) is given twice", topic: .migrate)
                }
                attributes[name] = String(pair[pair.index(after: equals)...])
            }
            return .keyring(attributes: attributes)
        }
        throw UsageError(message: "bad --from: \(usage)", topic: .migrate)
    }

    /// 32 hex digits in any case, bare or in the 8-4-4-4-12 UUID layout.
    static func parseAppKey(_ text: String) -> UUID? {
        let utf8 = Array(text.utf8)
        let digits: [UInt8]
        if utf8.count == 36 {
            for dash in [8, 13, 18, 23] where utf8[dash] != UInt8(ascii: "-") { return nil }
            digits = utf8.enumerated().filter { ![8, 13, 18, 23].contains($0.offset) }.map(\.element)
        } else if utf8.count == 32 {
            digits = utf8
        } else {
            return nil
        }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<16 {
            guard let high = nibble(digits[2 * i]), let low = nibble(digits[2 * i + 1]) else { return nil }
            bytes[i] = high << 4 | low
        }
        let b = bytes
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    /// `value` (the default), `account`, `label`, `description`, `comment` or `generic`.
    static func parseKey(_ text: String) -> SecretStore.Key? {
        text == "value" ? .valueData : text == "valueData" ? nil : SecretStore.Key(rawValue: text)
    }

    /// A positive number of seconds, at most `maximumTimeoutSeconds`.
    static func parseTimeout(_ text: String) -> Duration? {
        guard let seconds = Double(text), seconds.isFinite, seconds > 0, seconds <= maximumTimeoutSeconds else { return nil }
        return .nanoseconds(Int64((seconds * 1e9).rounded(.up)))
    }

    static func quoted(_ text: String) -> String {
        let cleaned = String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : Character($0) })
        return "'" + (cleaned.count > 40 ? String(cleaned.prefix(40)) + "..." : cleaned) + "'"
    }

    static func optionName(_ argument: String) -> String {
        argument.firstIndex(of: "=").map { String(argument[..<$0]) } ?? argument
    }
}

/// One command's arguments, split into options and positionals.
///
/// Options are `--name VALUE`, `--name=VALUE` or a bare `--flag`. A separate VALUE may not start
/// with `-` (so `--app --json` is a missing value, not an app named "--json"); use `--name=-x`.
/// `--` ends the options. Each option may appear once.
private struct Scan {
    let topic: HelpTopic
    var values: [String: String] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []

    /// Returns nil when `-h`/`--help` appears before `--`: the caller then prints help.
    init?(_ arguments: [String], _ command: Interface.Command) throws(UsageError) {
        self.topic = command.topic
        for argument in arguments {
            if argument == "--" { break }
            if argument == Interface.help.short || argument == Interface.help.name { return nil }
        }
        let expected = command.positionals
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            let name = CommandLineParser.optionName(argument)
            guard argument.hasPrefix("--"), name != Interface.help.name, let option = command.option(name) else {
                throw UsageError(message: "unknown option \(CommandLineParser.quoted(name))", topic: topic)
            }
            let inline = argument.firstIndex(of: "=").map { String(argument[argument.index(after: $0)...]) }
            if option.value != nil {
                guard values[name] == nil else { throw UsageError(message: "\(name) is given more than once", topic: topic) }
                if let inline {
                    values[name] = inline
                } else if index < arguments.count, arguments[index] == "-" || !arguments[index].hasPrefix("-") {
                    values[name] = arguments[index]
                    index += 1
                } else {
                    throw UsageError(message: "\(name) needs a value", topic: topic)
                }
            } else {
                guard inline == nil else { throw UsageError(message: "\(name) takes no value", topic: topic) }
                guard !flags.contains(name) else { throw UsageError(message: "\(name) is given more than once", topic: topic) }
                flags.insert(name)
            }
        }
        if positionals.count < expected.count, !(command.positionalsOptional && positionals.isEmpty) {
            throw UsageError(message: "missing \(expected[positionals.count])", topic: topic)
        }
        if positionals.count > expected.count {
            // The value is not echoed: it may be an identifier.
            throw UsageError(message: "unexpected extra argument", topic: topic)
        }
        for option in command.options where option.required && values[option.name] == nil {
            throw UsageError(message: "\(command.name) needs \(option.label)", topic: topic)
        }
    }

    func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// `.never` with `--no-prompt`, else `.prompt`.
    var unlock: UnlockPolicy { has("--no-prompt") ? .never : .prompt }

    func nonEmpty(_ option: String) throws(UsageError) -> String? {
        guard let value = values[option] else { return nil }
        guard !value.isEmpty else { throw UsageError(message: "\(option) must not be empty", topic: topic) }
        return value
    }

    func app(_ fromEnvironment: String?) throws(UsageError) -> String {
        if let app = try nonEmpty("--app") { return app }
        if let app = fromEnvironment, !app.isEmpty { return app }
        return CommandLineParser.defaultApp
    }

    func timeout() throws(UsageError) -> Duration {
        guard let text = values["--timeout"] else { return CommandLineParser.defaultTimeout }
        guard let timeout = CommandLineParser.parseTimeout(text) else {
            throw UsageError(
                message: "--timeout must be a positive number of seconds, at most \(Int(CommandLineParser.maximumTimeoutSeconds))",
                topic: topic)
        }
        return timeout
    }

    func key() throws(UsageError) -> SecretStore.Key {
        guard let text = values["--key"] else { return .valueData }
        guard let key = CommandLineParser.parseKey(text) else {
            throw UsageError(
                message: "unknown --key \(CommandLineParser.quoted(text)): use \(Interface.list(Interface.keys.map(\.value)))",
                topic: topic)
        }
        return key
    }

    func identifier() throws(UsageError) -> String {
        let identifier = positionals[0]
        guard !identifier.isEmpty else { throw UsageError(message: "IDENTIFIER must not be empty", topic: topic) }
        return identifier
    }
}
