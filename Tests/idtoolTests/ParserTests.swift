import Foundation
import Keyring
import Testing

@testable import idtool

/// The command-line parser is pure: these tests need no keyring.
@Suite("command-line parser")
struct ParserTests {
    let env: [String: String] = [:]
    let ten: Duration = .seconds(10)

    func parse(_ line: String..., environment: [String: String] = [:]) throws(UsageError) -> Command {
        try CommandLineParser.parse(line, environment: environment)
    }

    func usageError(_ line: String..., environment: [String: String] = [:]) -> UsageError? {
        do {
            let command = try CommandLineParser.parse(line, environment: environment)
            Issue.record("expected a usage error, got \(command)")
            return nil
        } catch {
            return error
        }
    }

    // MARK: identity commands

    @Test("get, show and reset fill in the defaults")
    func identityDefaults() throws {
        #expect(try parse("get") == .get(app: "idtool", vendor: nil, json: false, timeout: ten))
        #expect(try parse("show") == .show(app: "idtool", vendor: nil, json: false, timeout: ten))
        #expect(try parse("reset") == .reset(app: "idtool", vendor: nil, timeout: ten))
    }

    @Test("get and show take every option, in any order and in both spellings")
    func identityOptions() throws {
        #expect(try parse("get", "--app", "com.example", "--vendor", "acme", "--json", "--timeout", "2.5")
            == .get(app: "com.example", vendor: "acme", json: true, timeout: .milliseconds(2500)))
        #expect(try parse("show", "--timeout=3", "--json", "--vendor=acme", "--app=com.example")
            == .show(app: "com.example", vendor: "acme", json: true, timeout: .seconds(3)))
        #expect(try parse("reset", "--app", "a", "--vendor", "v", "--timeout", "1")
            == .reset(app: "a", vendor: "v", timeout: .seconds(1)))
    }

    @Test("reset has no --json")
    func resetHasNoJSON() {
        #expect(usageError("reset", "--json")?.message == "unknown option '--json'")
    }

    @Test("APP falls back to IDTOOL_APP, then to idtool; --app wins over the environment")
    func appFallback() throws {
        #expect(try parse("get", environment: ["IDTOOL_APP": "from.env"]) == .get(app: "from.env", vendor: nil, json: false, timeout: ten))
        #expect(try parse("get", environment: ["IDTOOL_APP": ""]) == .get(app: "idtool", vendor: nil, json: false, timeout: ten))
        #expect(try parse("get", "--app", "flag", environment: ["IDTOOL_APP": "from.env"])
            == .get(app: "flag", vendor: nil, json: false, timeout: ten))
    }

    @Test("an empty --app, --vendor or --group is a usage error")
    func emptyValues() {
        #expect(usageError("get", "--app", "")?.status == .usage)
        #expect(usageError("show", "--app=")?.message == "--app must not be empty")
        #expect(usageError("get", "--vendor", "")?.message == "--vendor must not be empty")
        #expect(usageError("item", "get", "id", "--group=")?.message == "--group must not be empty")
        #expect(usageError("migrate", "--app", "", "--from", "machine-id")?.status == .usage)
    }

    // MARK: migrate

    @Test("migrate parses every SOURCE form and its flags")
    func migrate() throws {
        #expect(try parse("migrate", "--app", "a", "--from", "machine-id")
            == .migrate(app: "a", source: .machineID, dryRun: false, removeLegacy: false, timeout: ten))
        #expect(try parse("migrate", "--app", "a", "--from", "file:/var/lib/old id", "--dry-run", "--remove-legacy", "--timeout", "4")
            == .migrate(app: "a", source: .file(path: "/var/lib/old id"), dryRun: true, removeLegacy: true, timeout: .seconds(4)))
        #expect(try parse("migrate", "--app", "a", "--from", "keyring:service=old,username=bob,x=a=b,empty=")
            == .migrate(app: "a", source: .keyring(attributes: ["service": "old", "username": "bob", "x": "a=b", "empty": ""]),
                        dryRun: false, removeLegacy: false, timeout: ten))
    }

    @Test("migrate needs --app and --from, even when IDTOOL_APP is set")
    func migrateRequired() {
        #expect(usageError("migrate", "--from", "machine-id", environment: ["IDTOOL_APP": "x"])?.message == "migrate needs --app APP")
        #expect(usageError("migrate", "--app", "a")?.message == "migrate needs --from SOURCE")
    }

    @Test("a bad SOURCE is a usage error", arguments: [
        "", "machine", "machine-id2", "file:", "keyring:", "keyring:=x", "keyring:service", "keyring:a=1,,b=2",
        "keyring:a=1,a=2", "http://x", "FILE:/x",
    ])
    func badSource(_ source: String) {
        let error = usageError("migrate", "--app", "a", "--from=\(source)")
        #expect(error?.status == .usage)
        #expect(error?.topic == .migrate)
    }

    // MARK: derive

    @Test("derive accepts the key dashed or undashed, in any case")
    func derive() throws {
        let key = try #require(UUID(uuidString: "A1B2C3D4-E5F6-0718-293A-4B5C6D7E8F90"))
        for text in ["a1b2c3d4e5f60718293a4b5c6d7e8f90", "A1B2C3D4E5F60718293A4B5C6D7E8F90",
                     "a1b2c3d4-e5f6-0718-293a-4b5c6d7e8f90", "A1b2C3d4-E5f6-0718-293A-4b5c6D7e8F90"] {
            #expect(try parse("derive", "--app-key", text) == .derive(appKey: key, uuid: false))
        }
        #expect(try parse("derive", "--uuid", "--app-key=a1b2c3d4e5f60718293a4b5c6d7e8f90") == .derive(appKey: key, uuid: true))
    }

    @Test("a bad app key is bad data (65), a missing one a usage error (64)", arguments: [
        "", "xyz", "a1b2c3d4e5f60718293a4b5c6d7e8f9", "a1b2c3d4e5f60718293a4b5c6d7e8f900", "a1b2c3d4e5f60718293a4b5c6d7e8f9g",
        "a1b2c3d4-e5f60718-293a-4b5c6d7e8f90-", "a1b2c3d4e-5f6-0718-293a-4b5c6d7e8f90", "{a1b2c3d4-e5f6-0718-293a-4b5c6d7e8f90}",
    ])
    func badAppKey(_ text: String) {
        let error = usageError("derive", "--app-key=\(text)")
        #expect(error?.status == .dataError)
        #expect(error.map { !$0.message.contains(text) || text.isEmpty } == true, "the key is not echoed")
    }

    @Test("derive without --app-key is a usage error")
    func deriveMissingKey() {
        #expect(usageError("derive")?.status == .usage)
        #expect(usageError("derive", "--app-key")?.message == "--app-key needs a value")
    }

    // MARK: doctor

    @Test("doctor takes --json and --timeout")
    func doctor() throws {
        #expect(try parse("doctor") == .doctor(json: false, timeout: ten))
        #expect(try parse("doctor", "--json", "--timeout", "0.5") == .doctor(json: true, timeout: .milliseconds(500)))
        #expect(usageError("doctor", "--app", "x")?.topic == .doctor)
    }

    @Test("--no-prompt on every keyring command means .never; the default is .prompt")
    func noPrompt() throws {
        #expect(try parse("get", "--no-prompt") == .get(app: "idtool", vendor: nil, json: false, timeout: ten, unlock: .never))
        #expect(try parse("get") == .get(app: "idtool", vendor: nil, json: false, timeout: ten, unlock: .prompt))
        #expect(try parse("show", "--no-prompt") == .show(app: "idtool", vendor: nil, json: false, timeout: ten, unlock: .never))
        #expect(try parse("reset", "--no-prompt") == .reset(app: "idtool", vendor: nil, timeout: ten, unlock: .never))
        #expect(
            try parse("migrate", "--app", "a", "--from", "machine-id", "--no-prompt")
                == .migrate(app: "a", source: .machineID, dryRun: false, removeLegacy: false, timeout: ten, unlock: .never))
        #expect(try parse("item", "get", "id", "--no-prompt") == .itemGet(identifier: "id", group: nil, key: .valueData, timeout: ten, unlock: .never))
        #expect(try parse("item", "set", "id", "--no-prompt") == .itemSet(identifier: "id", group: nil, key: .valueData, timeout: ten, unlock: .never))
        #expect(try parse("item", "reset", "--no-prompt", "id") == .itemReset(identifier: "id", group: nil, timeout: ten, unlock: .never))
        #expect(try parse("doctor", "--no-prompt") == .doctor(json: false, timeout: ten))
        #expect(usageError("get", "--no-prompt=yes") != nil)
        #expect(usageError("derive", "--app-key", String(repeating: "0", count: 32), "--no-prompt")?.topic == .derive)
    }

    // MARK: item

    @Test("item get, set and reset take IDENTIFIER, --group, --key and --timeout")
    func item() throws {
        #expect(try parse("item", "get", "com.example.token") == .itemGet(identifier: "com.example.token", group: nil, key: .valueData, timeout: ten))
        #expect(try parse("item", "set", "--group", "g", "id", "--key", "account", "--timeout", "7")
            == .itemSet(identifier: "id", group: "g", key: .account, timeout: .seconds(7)))
        #expect(try parse("item", "reset", "id", "--group=g") == .itemReset(identifier: "id", group: "g", timeout: ten))
    }

    @Test("every KEY maps to its SecretStore key", arguments: [
        ("value", SecretStore.Key.valueData), ("account", .account), ("label", .label),
        ("description", .description), ("comment", .comment), ("generic", .generic),
    ])
    func keys(_ text: String, _ key: SecretStore.Key) throws {
        #expect(try parse("item", "get", "id", "--key", text) == .itemGet(identifier: "id", group: nil, key: key, timeout: ten))
        #expect(try parse("item", "set", "id", "--key=\(text)") == .itemSet(identifier: "id", group: nil, key: key, timeout: ten))
    }

    @Test("an unknown KEY is a usage error", arguments: ["valueData", "Value", "username", "secret", "", "password"])
    func badKey(_ text: String) {
        let error = usageError("item", "get", "id", "--key=\(text)")
        #expect(error?.status == .usage)
        #expect(error?.topic == .itemGet)
    }

    @Test("item reset has no --key")
    func itemResetHasNoKey() {
        #expect(usageError("item", "reset", "id", "--key", "value")?.message == "unknown option '--key'")
    }

    @Test("-- ends options, so identifiers may start with a dash")
    func doubleDash() throws {
        #expect(try parse("item", "get", "--", "-weird-id") == .itemGet(identifier: "-weird-id", group: nil, key: .valueData, timeout: ten))
        #expect(try parse("item", "set", "--key", "label", "--", "--help") == .itemSet(identifier: "--help", group: nil, key: .label, timeout: ten))
        #expect(try parse("item", "reset", "-") == .itemReset(identifier: "-", group: nil, timeout: ten))
        #expect(usageError("item", "get", "--", "a", "b")?.message == "unexpected extra argument")
        #expect(usageError("get", "--", "--json")?.message == "unexpected extra argument")
    }

    @Test("a missing or empty IDENTIFIER, or an extra one, is a usage error, and no identifier is echoed")
    func identifiers() {
        #expect(usageError("item", "get")?.message == "missing IDENTIFIER")
        #expect(usageError("item", "set", "--key", "label")?.message == "missing IDENTIFIER")
        #expect(usageError("item", "reset", "")?.message == "IDENTIFIER must not be empty")
        #expect(usageError("item", "get", "secret-id-1", "secret-id-2")?.message.contains("secret-id") == false)
    }

    @Test("item without a known subcommand is a usage error")
    func itemSubcommand() {
        #expect(usageError("item")?.topic == .item)
        #expect(usageError("item", "bogus")?.topic == .item)
        #expect(usageError("item", "--group", "g")?.topic == .item)
    }

    // MARK: malformed lines

    @Test("repeated options and flags are usage errors")
    func repeated() {
        #expect(usageError("get", "--json", "--json")?.message == "--json is given more than once")
        #expect(usageError("get", "--app", "a", "--app=b")?.message == "--app is given more than once")
        #expect(usageError("item", "get", "id", "--key", "label", "--key", "label")?.topic == .itemGet)
        #expect(usageError("migrate", "--app", "a", "--from", "machine-id", "--dry-run", "--dry-run") != nil)
        #expect(usageError("derive", "--app-key", "a1b2c3d4e5f60718293a4b5c6d7e8f90", "--uuid", "--uuid") != nil)
    }

    @Test("unknown options and commands are usage errors with the right topic")
    func unknown() {
        #expect(usageError("get", "--bogus")?.topic == .get)
        #expect(usageError("get", "-x")?.message == "unknown option '-x'")
        #expect(usageError("get", "--json=yes")?.message == "--json takes no value")
        #expect(usageError("frobnicate")?.message == "unknown command 'frobnicate'")
        #expect(usageError("--frobnicate")?.topic == .overview)
        #expect(usageError()?.message == "missing command")
        #expect(usageError("--version", "get")?.status == .usage)
    }

    @Test("a missing value is a usage error; values may not look like options unless written with =")
    func missingValues() throws {
        #expect(usageError("get", "--app")?.message == "--app needs a value")
        #expect(usageError("get", "--app", "--json")?.message == "--app needs a value")
        #expect(usageError("item", "get", "id", "--group")?.message == "--group needs a value")
        #expect(usageError("migrate", "--app", "a", "--from")?.message == "--from needs a value")
        #expect(try parse("get", "--app=-dash") == .get(app: "-dash", vendor: nil, json: false, timeout: ten))
    }

    @Test("--timeout must be a positive number of seconds", arguments: ["0", "-1", "abc", "", "nan", "inf", "1e300", "86401", "10s", " 5"])
    func badTimeout(_ text: String) {
        let error = usageError("item", "get", "id", "--timeout=\(text)")
        #expect(error?.status == .usage)
        #expect(error?.topic == .itemGet)
    }

    @Test("--timeout accepts fractions and tiny values without trapping")
    func timeouts() throws {
        #expect(try parse("doctor", "--timeout", "86400") == .doctor(json: false, timeout: .seconds(86_400)))
        #expect(try parse("doctor", "--timeout", "1e-300") == .doctor(json: false, timeout: .nanoseconds(1)))
        #expect(try parse("doctor", "--timeout", "0.25") == .doctor(json: false, timeout: .milliseconds(250)))
    }

    // MARK: help and version

    @Test("--help and -h give each command's help, even next to other arguments", arguments: [
        (["--help"], HelpTopic.overview), (["-h"], .overview), (["--help", "get"], .overview),
        (["get", "--help"], .get), (["show", "-h"], .show), (["reset", "--app", "x", "--help"], .reset),
        (["migrate", "--help"], .migrate), (["derive", "-h"], .derive), (["doctor", "--help"], .doctor),
        (["item", "--help"], .item), (["item", "get", "--help"], .itemGet), (["item", "set", "-h"], .itemSet),
        (["item", "reset", "--help"], .itemReset), (["get", "--bogus", "--help"], .get),
        (["derive", "--app-key", "bad", "--help"], .derive),
    ])
    func help(_ arguments: [String], _ topic: HelpTopic) throws {
        #expect(try CommandLineParser.parse(arguments, environment: env) == .help(topic))
    }

    @Test("--version prints the version")
    func version() throws {
        #expect(try parse("--version") == .version)
        #expect(Usage.version.hasPrefix("idtool "))
    }

    @Test("every help text names its command, and the overview lists every exit code")
    func helpTexts() {
        for topic in HelpTopic.allCases {
            let text = Usage.text(for: topic)
            #expect(text.hasSuffix("\n"))
            #expect(text.contains("Usage"), "\(topic)")
        }
        let overview = Usage.text(for: .overview)
        for code in ExitCode.allCases {
            #expect(overview.contains("  \(code.rawValue) "), "exit code \(code.rawValue) is documented")
        }
    }

    // MARK: exit codes and output helpers

    @Test("keyring errors map to sysexits")
    func exitCodes() {
        #expect(ExitCode(.noSessionBus(detail: "x")) == .unavailable)
        #expect(ExitCode(.noSecretService) == .unavailable)
        #expect(ExitCode(.noDefaultCollection) == .unavailable)
        #expect(ExitCode(.locked(itemExists: true)) == .temporaryFailure)
        #expect(ExitCode(.timedOut(seconds: 1)) == .temporaryFailure)
        #expect(ExitCode(.invalidArgument("x")) == .dataError)
        #expect(ExitCode(.serviceFailure(domain: "d", code: 1, message: "m")) == .software)
    }

    @Test("JSON strings are escaped")
    func jsonEscaping() {
        #expect(JSON.string("a\"b\\c\n\u{1}é").serialized == #""a\"b\\c\n\u0001é""#)
        #expect(JSON.object([("ok", .bool(true)), ("n", .null), ("a", .array([.number(1), .number(1.5)]))]).serialized
            == #"{"ok":true,"n":null,"a":[1,1.5]}"#)
    }
}
