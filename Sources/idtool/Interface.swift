import Keyring

/// idtool's command line as data: the one table that the parser checks arguments against and that
/// `--help`, the man page and the shell completions are all rendered from, so none can drift from
/// another. The `Usage`, `ManPage` and `Completion` renderers only lay it out.
enum Interface {
    /// One option of one command.
    struct Option: Sendable {
        /// The long name, e.g. "--app".
        var name: String
        /// The short alias, e.g. "-h"; only help has one.
        var short: String? = nil
        /// The value's placeholder, e.g. "APP"; nil for a flag.
        var value: String? = nil
        /// The description as `--help` prints it, one entry a line (wrapped by hand at about 100 columns).
        var help: [String]
        /// The values the option accepts, when they are a fixed list; completions offer them.
        var choices: [Choice] = []
        /// Whether `--help` and the man page list `choices` as a table (for `--from`), rather than
        /// `help` naming them in prose (for `--key`).
        var tabulatesChoices = false
        /// A command that needs this option shows it without brackets and fails without it.
        var required = false

        /// The description on one line, for the man page and the completions; a tabulated option's
        /// choices when it has no description of its own.
        var summary: String {
            help.isEmpty && tabulatesChoices ? "one of " + Interface.list(choices.map(\.label)) : help.joined(separator: " ")
        }
        /// "--app APP", "-h, --help": how `--help` names the option.
        var label: String { (short.map { $0 + ", " } ?? "") + name + (value.map { " " + $0 } ?? "") }
    }

    /// A fixed value of an option.
    struct Choice: Sendable {
        /// What is typed, or its start: "machine-id", "file:".
        var value: String
        /// How help shows it: "file:PATH".
        var label: String
        /// One line on what it means; empty when the option's help says it.
        var help: String = ""
    }

    /// One command (`get`) or subcommand (`item get`), or the `item` group.
    struct Command: Sendable {
        /// The help topic, and so the command's identity in the parser.
        var topic: HelpTopic
        /// The words that name it after "idtool": ["item", "get"].
        var words: [String]
        /// Placeholders of the positional arguments, in order: ["IDENTIFIER"].
        var positionals: [String] = []
        /// Whether the positionals may be left out (`item list`): help shows them in brackets.
        var positionalsOptional = false
        /// The options, in the order the synopsis and help list them; `-h, --help` last.
        var options: [Option] = []
        /// One line for the completions' command menus.
        var summary: String
        /// The paragraphs `--help` prints after the synopsis, one entry a line ("" between paragraphs).
        var about: [String]
        /// The placeholder of what the command reads from stdin ("VALUE"), if it reads any.
        var stdin: String? = nil
        /// The subcommands, for a group (`item`); a group takes no options but help.
        var subcommands: [HelpTopic] = []

        /// "item get".
        var name: String { words.joined(separator: " ") }
        /// The options that take a value.
        var valued: [Option] { options.filter { $0.value != nil } }
        /// The option named `name` (long name), if the command has it.
        func option(_ name: String) -> Option? { options.first { $0.name == name } }
    }

    /// One exit status and what it means, one entry a line.
    struct ExitStatus: Sendable {
        var code: ExitCode
        var help: [String]
    }

    /// An environment variable idtool reads.
    struct Variable: Sendable {
        var name: String
        var help: String
    }

    // MARK: - The table

    /// What `idtool` is, in one line (the overview's first line and the man page's NAME).
    static let purpose = "a stable per-app identifier and keyring items, kept in the Secret Service keyring"

    /// The options of `idtool` itself, before any command.
    static let topLevelOptions: [Option] = [
        Option(name: "--version", help: ["print the version"]),
        help,
    ]

    /// The overview's notes after its synopsis.
    static let notes = [
        "Run `idtool COMMAND --help` for one command's details.",
        "Without --app, APP is $IDTOOL_APP, else \"\(CommandLineParser.defaultApp)\".",
        "Option values may not start with \"-\" unless written --option=VALUE; \"--\" ends options.",
        "Data goes to stdout; errors go to stderr as one line, and never contain identifiers or secrets.",
    ]

    static let exitStatuses: [ExitStatus] = [
        ExitStatus(code: .ok, help: ["success"]),
        ExitStatus(code: .absent, help: ["absent: item get found no such item, show found no identifier, migrate found no legacy value"]),
        ExitStatus(code: .usage, help: ["usage: the command line is wrong"]),
        ExitStatus(
            code: .dataError,
            help: [
                "bad data: a bad value (e.g. --app-key), a refused value, a wrong-key or damaged keyring file,",
                "item set or reset without --account while several accounts' items match",
            ]),
        ExitStatus(
            code: .unavailable,
            help: [
                "unavailable: no session bus, no Secret Service or default keyring, a Secret Service that",
                "cannot open an encrypted session (KWallet without its QCA plugin), an unusable keyring file",
            ]),
        ExitStatus(code: .software, help: ["internal error, or a keyring failure it did not explain"]),
        ExitStatus(code: .temporaryFailure, help: ["temporary: the keyring is locked or did not answer in time; retry"]),
    ]

    /// The variables the man page's ENVIRONMENT section lists.
    static let environment: [Variable] = [
        Variable(name: "IDTOOL_APP", help: "the app when --app is not given (else \"\(CommandLineParser.defaultApp)\")"),
        Variable(
            name: "DBUS_SESSION_BUS_ADDRESS",
            help: "the session bus that carries the Secret Service (else the bus socket in $XDG_RUNTIME_DIR)"),
        Variable(
            name: "SECRET_SERVICE_BUS_NAME",
            help: "the Secret Service's bus name, for every call libsecret's and idtool's own alike (else org.freedesktop.secrets)"),
        Variable(
            name: "SECRET_BACKEND",
            help: "file or service: libsecret's encrypted keyring file instead of the Secret Service, or not (ignored in a sandbox)"),
        Variable(
            name: "XDG_STATE_HOME",
            help: "where the identifier's backup file is kept: $XDG_STATE_HOME/keyring-identity (default ~/.local/state)"),
    ]

    // Options shared by several commands.
    static let help = Option(name: "--help", short: "-h", help: ["show this help"])
    static let timeout = Option(
        name: "--timeout", value: "SECONDS",
        help: [
            "give up on the keyring after this long, a wait for its unlock dialog",
            "included (default \(CommandLineParser.defaultTimeout.components.seconds); positive, at most \(maximumTimeout))",
        ])
    private static let maximumTimeout = Int(CommandLineParser.maximumTimeoutSeconds)
    static let noPrompt = Option(name: "--no-prompt", help: ["never show the keyring's unlock dialog: a locked keyring exits 75 at once"])
    static let app = Option(name: "--app", value: "APP", help: ["the app (default: $IDTOOL_APP, else \"\(CommandLineParser.defaultApp)\")"])
    static let group = Option(name: "--group", value: "G", help: ["the item's access group"])
    static let account = Option(
        name: "--account", value: "A",
        help: ["the item of this account (username=A), as python-keyring and secret-tool address it;", "without it, the oldest item"])
    /// `--key`'s values: the keys of `SecretStore.Key`, with `valueData` spelled "value".
    static let keys: [Choice] = SecretStore.Key.allCases.map { key in
        let name = key == .valueData ? "value" : key.rawValue
        return Choice(value: name, label: name)
    }
    static let keyHelp = "value (the default, the secret), " + list(keys.dropFirst().map(\.value))
    static func vendor(_ help: String) -> Option { Option(name: "--vendor", value: "GROUP", help: [help]) }
    static func json(_ help: String) -> Option { Option(name: "--json", help: [help]) }

    /// Every command, in the order the overview lists them.
    static let commands: [Command] = [
        Command(
            topic: .get, words: ["get"],
            options: [
                app, vendor("share the identifier among one vendor's apps (an access group)"),
                json("print a JSON object instead of the bare identifier"), timeout, noPrompt, help,
            ],
            summary: "print the app's identifier, making one only when it is proven absent",
            about: ["Prints APP's identifier. Makes a new one only when every store proves it absent."]),
        Command(
            topic: .show, words: ["show"],
            options: [app, vendor("the vendor's access group"), json("print a JSON object"), timeout, noPrompt, help],
            summary: "print the app's identifier and where it is kept, never making one",
            about: ["Prints APP's identifier and where it is kept. Never makes a new one."]),
        Command(
            topic: .reset, words: ["reset"],
            options: [app, vendor("the vendor's access group"), timeout, noPrompt, help],
            summary: "remove the app's identifier",
            about: ["Removes APP's identifier; the next `idtool get` makes a new one."]),
        Command(
            topic: .migrate, words: ["migrate"],
            options: [
                Option(name: "--app", value: "APP", help: ["the app (required here)"], required: true),
                Option(
                    name: "--from", value: "SOURCE", help: [],
                    choices: [
                        Choice(
                            value: "keyring:", label: "keyring:ATTR=VALUE[,ATTR=VALUE...]", help: "a keyring item with these attributes"),
                        Choice(value: "file:", label: "file:PATH", help: "a file's contents"),
                        Choice(value: "machine-id", label: "machine-id", help: "the raw /etc/machine-id (opt-in: older versions used it)"),
                    ],
                    tabulatesChoices: true, required: true),
                Option(name: "--dry-run", help: ["say what would happen; change nothing"]),
                Option(name: "--remove-legacy", help: ["remove the legacy copy after the adopted value is verified"]),
                timeout, noPrompt, help,
            ],
            summary: "adopt a legacy identifier for the app",
            about: ["Adopts a legacy identifier for APP. Never overwrites one that APP already has."]),
        Command(
            topic: .derive, words: ["derive"],
            options: [
                Option(
                    name: "--app-key", value: "UUID", help: ["the app's key: 32 hex digits, dashes optional, any case (else exit 65)"],
                    required: true),
                Option(name: "--uuid", help: ["print in the dashed UUID format"]),
                help,
            ],
            summary: "print the app-specific machine ID for an app key",
            about: ["Prints the app-specific machine ID for UUID (as `systemd-id128 machine-id --app-specific` does)."]),
        Command(
            topic: .doctor, words: ["doctor"],
            // --no-prompt is accepted for uniformity: doctor only reports, it never prompts.
            options: [json("print {\"ok\": BOOL, \"checks\": [{\"name\", \"ok\", \"detail\", \"hint\"}]}"), timeout, noPrompt, help],
            summary: "check the session bus, the Secret Service, the default keyring and the stores",
            about: [
                "Checks what idtool needs: the session bus, the Secret Service, the default keyring and",
                "whether it is unlocked, then the identity stores. Prints one line per check,",
                "`ok CHECK: DETAIL` or `FAIL CHECK: DETAIL` followed by a fix hint.",
                "Exit 0 when all pass, 75 when the only problem is a locked keyring (or a timeout), else 69.",
            ]),
        Command(
            topic: .lock, words: ["lock"],
            // --no-prompt is accepted for uniformity: locking never prompts.
            options: [timeout, noPrompt, help],
            summary: "lock the default keyring",
            about: [
                "Locks the default keyring; a locked one stays as it is. Never shows a dialog.",
                "Exits 69 on libsecret's file backend, which has no locked state.",
            ]),
        Command(
            topic: .unlock, words: ["unlock"], options: [timeout, noPrompt, help],
            summary: "unlock the default keyring through its unlock dialog",
            about: [
                "Unlocks the default keyring through the keyring's unlock dialog, waiting up to",
                "--timeout for the password. An unlocked keyring (or the file backend) succeeds at once.",
                "Exits 75 when it stays locked: the dialog was dismissed or unanswered, or --no-prompt.",
            ]),
        Command(
            topic: .item, words: ["item"], options: [help],
            summary: "read and write keyring items",
            about: [
                "Reads, writes and lists keyring items as the SecretStore library does: attributes",
                "service=IDENTIFIER, username=ACCOUNT and, with --group, access-group=G.",
                "Items written by secret-tool or python-keyring are read too. Without --account,",
                "set and reset refuse (exit 65) when several accounts' items match.",
                "Run `idtool item get --help` and so on for details.",
            ],
            subcommands: [.itemGet, .itemSet, .itemReset, .itemList, .itemWatch]),
        Command(
            topic: .itemGet, words: ["item", "get"], positionals: ["IDENTIFIER"],
            options: [group, account, Option(name: "--key", value: "KEY", help: [keyHelp], choices: keys), timeout, noPrompt, help],
            summary: "write one key of an item to stdout",
            about: [
                "Writes one key of the item to stdout, byte for byte, with nothing added.",
                "Exits 1 with empty stdout when there is no such item (or it lacks that key).",
            ]),
        Command(
            topic: .itemSet, words: ["item", "set"], positionals: ["IDENTIFIER"],
            options: [
                group, account,
                Option(
                    name: "--key", value: "KEY", help: [keyHelp + ";", "all but value are stored as plain text and must be UTF-8"],
                    choices: keys),
                timeout, noPrompt, help,
            ],
            summary: "read one key of an item from stdin",
            about: [
                "Reads the new value from stdin, byte for byte (binary is fine for the value; a",
                "trailing newline is kept, so prefer `printf %s`). Creates the item when absent.",
                "Secrets are never taken from the command line.",
            ],
            stdin: "VALUE"),
        Command(
            topic: .itemReset, words: ["item", "reset"], positionals: ["IDENTIFIER"], options: [group, account, timeout, noPrompt, help],
            summary: "remove an item",
            about: ["Removes the item. Removing an absent item succeeds."]),
        Command(
            topic: .itemList, words: ["item", "list"], positionals: ["IDENTIFIER"], positionalsOptional: true,
            options: [
                Option(name: "--group", value: "G", help: ["list this access group's items (every identifier in it)"]),
                Option(
                    name: "--json",
                    help: [
                        "print {\"items\": [{\"identifier\", \"account\", \"group\", \"label\", \"created\",",
                        "\"modified\", \"locked\", \"writer\", \"schema\"}]}",
                    ]),
                timeout, noPrompt, help,
            ],
            summary: "list the items of an identifier or access group, never their secrets",
            about: [
                "Lists the items of IDENTIFIER (every account and group), of the access group G, or of",
                "both: one line each with account, group, lock state, times, writer and label. Give",
                "IDENTIFIER, --group or both. Secrets are never read. WRITER is secretstore (this",
                "library's schema), other:SCHEMA (another client's schema) or other (no schema).",
                "A locked keyring that hides its items exits 75, never an empty list.",
            ]),
        Command(
            topic: .itemWatch, words: ["item", "watch"], positionals: ["IDENTIFIER"],
            options: [
                group, Option(name: "--account", value: "A", help: ["only this account's item (username=A); without it, every account's"]),
                json("print one JSON object a line: {\"event\", \"path\", \"account\", \"collection\"}"), timeout, help,
            ],
            summary: "print one line per change of an item until interrupted",
            about: [
                "Prints one line per change of the item, made by any process, until interrupted:",
                "`created|changed|deleted PATH`, `locked|unlocked COLLECTION`, `service-stopped`,",
                "`service-started`. SIGINT or SIGTERM ends it with exit 0. The file backend reports",
                "created, changed and deleted only; --timeout bounds the first look at the keyring.",
            ]),
    ]

    /// The command of `topic` (`.overview` has none).
    static func command(_ topic: HelpTopic) -> Command {
        commands.first { $0.topic == topic }!
    }

    /// "a, b or c".
    static func list(_ items: [String]) -> String {
        items.count < 2 ? items.joined() : items.dropLast().joined(separator: ", ") + " or " + items.last!
    }

    /// The commands directly under `idtool`: get, show, …, item.
    static var topLevel: [Command] { commands.filter { $0.words.count == 1 } }
}
