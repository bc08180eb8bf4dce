// keyring-sandbox's command line, parsed in one pure function.

/// A Secret Service provider the sandbox can start.
enum Provider: String, CaseIterable {
    case gnomeKeyring = "gnome-keyring"
    case kwallet
    case keepassxc
}

/// What the command line asks for.
enum Invocation: Equatable {
    case help
    case run(Options)
}

/// The options of a run.
struct Options: Equatable {
    var provider: Provider = .gnomeKeyring
    var keep = false
    var command: [String] = []
}

/// A command line that cannot be run; exit 64.
struct UsageError: Error {
    var message: String
}

/// Parses the arguments after the program name.
func parse(_ arguments: [String]) throws(UsageError) -> Invocation {
    var options = Options()
    var index = 0
    while index < arguments.count {
        let argument = arguments[index]
        index += 1
        switch argument {
        case "-h", "--help": return .help
        case "--keep": options.keep = true
        case "--provider":
            guard index < arguments.count else { throw UsageError(message: "--provider needs a name") }
            options.provider = try provider(arguments[index])
            index += 1
        case _ where argument.hasPrefix("--provider="):
            options.provider = try provider(String(argument.dropFirst("--provider=".count)))
        case "--":
            options.command = Array(arguments[index...])
            index = arguments.count
        case _ where argument.hasPrefix("-"):
            throw UsageError(message: "unknown option \(argument)")
        default:
            options.command = Array(arguments[(index - 1)...])
            index = arguments.count
        }
    }
    guard !options.command.isEmpty else { throw UsageError(message: "no command to run") }
    return .run(options)
}

private func provider(_ name: String) throws(UsageError) -> Provider {
    guard let provider = Provider(rawValue: name) else {
        throw UsageError(
            message: "unknown provider \(name) (one of: \(Provider.allCases.map(\.rawValue).joined(separator: ", ")))")
    }
    return provider
}

let usage = """
    Usage: keyring-sandbox [--provider gnome-keyring|kwallet|keepassxc] [--keep] [--] COMMAND [ARG...]

    Runs COMMAND with a throwaway, unlocked Secret Service keyring, for an app's tests and CI:
      swift run keyring-sandbox -- swift test

    COMMAND runs in a private D-Bus session (DBUS_SESSION_BUS_ADDRESS) on which only the provider
    runs and nothing else can be activated, with a fresh HOME and XDG_RUNTIME_DIR, XDG_DATA_HOME,
    XDG_CONFIG_HOME, XDG_CACHE_HOME and XDG_STATE_HOME in a temporary directory (mode 700) that is
    removed afterwards. Your own session bus, keyring, HOME and display are never passed on, nor
    libsecret's test variables (SECRET_BACKEND, SECRET_FILE_TEST_PATH, SECRET_FILE_TEST_PASSWORD).
    COMMAND also gets KEYRING_SANDBOX_ROOT (the temporary directory) and KEYRING_SANDBOX_PROVIDER.
    The provider is started by the package's scripts/keyring-ctl (bash) from its file in
    scripts/providers, as the package's own tests start it.

    SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to keyring-sandbox are forwarded to COMMAND; a
    terminal's Ctrl-C reaches COMMAND directly, once. One that keyring-sandbox started with ignored
    (nohup) stays ignored, in COMMAND too. When it ends, the provider and the bus are
    stopped, with any process still carrying this run's KEYRING_SANDBOX_ROOT.

    Options:
      --provider NAME  gnome-keyring (the default: gnome-keyring-daemon --unlock on a new login
                       keyring), kwallet (ksecretd, kwalletd6 or kwalletd5, a new wallet opened
                       with no dialog; needs python3) or keepassxc (headless, on a new database
                       whose group "Secret Service" is exposed)
      --keep           keep the temporary directory afterwards (its path goes to stderr)
      -h, --help       print this help

    Exit status: COMMAND's status (128 + N when signal N killed it); 64 for a bad command line;
    69 when a program is missing (the message names the Debian packages: gnome-keyring, kwallet6
    or keepassxc, and dbus-daemon; libsecret-tools for secret-tool) or the package's scripts/ is;
    70 when the bus or the provider did not start; 126 or 127 when COMMAND cannot be run or is
    not found.
    """
