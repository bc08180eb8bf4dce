/// Help texts. `--help` prints them to stdout; a usage error prints one to stderr.
enum Usage {
    /// What `idtool --version` prints.
    static let version = "idtool 0.1.0"

    static let exitCodes = """
        Exit status:
          0   success
          1   absent: item get found no such item, show found no identifier, migrate found no legacy value
          64  usage: the command line is wrong
          65  bad data: a bad value (e.g. --app-key), a refused value, a wrong-key or damaged keyring file
          69  unavailable: no session bus, no Secret Service or default keyring, a Secret Service that
              cannot open an encrypted session (KWallet without its QCA plugin), an unusable keyring file
          70  internal error, or a keyring failure it did not explain
          75  temporary: the keyring is locked or did not answer in time; retry
        """

    static let common = """
          --timeout SECONDS  give up on the keyring after this long, a wait for its unlock dialog
                             included (default 10; positive, at most 86400)
          --no-prompt        never show the keyring's unlock dialog: a locked keyring exits 75 at once
          -h, --help         show this help
        """

    /// The usage text for `topic`, ending in a newline.
    static func text(for topic: HelpTopic) -> String {
        let body: String
        switch topic {
        case .overview:
            body = """
                idtool: a stable per-app identifier and keyring items, kept in the Secret Service keyring.

                Usage:
                  idtool get     [--app APP] [--vendor GROUP] [--json] [--timeout SECONDS] [--no-prompt]
                  idtool show    [--app APP] [--vendor GROUP] [--json] [--timeout SECONDS] [--no-prompt]
                  idtool reset   [--app APP] [--vendor GROUP] [--timeout SECONDS] [--no-prompt]
                  idtool migrate --app APP --from SOURCE [--dry-run] [--remove-legacy] [--timeout SECONDS] [--no-prompt]
                  idtool derive  --app-key UUID [--uuid]
                  idtool doctor  [--json] [--timeout SECONDS] [--no-prompt]
                  idtool item get   IDENTIFIER [--group G] [--key KEY] [--timeout SECONDS] [--no-prompt]
                  idtool item set   IDENTIFIER [--group G] [--key KEY] [--timeout SECONDS] [--no-prompt]  < VALUE
                  idtool item reset IDENTIFIER [--group G] [--timeout SECONDS] [--no-prompt]
                  idtool --version

                Run `idtool COMMAND --help` for one command's details.
                Without --app, APP is $IDTOOL_APP, else "idtool".
                Option values may not start with "-" unless written --option=VALUE; "--" ends options.
                Data goes to stdout; errors go to stderr as one line, and never contain identifiers or secrets.

                \(exitCodes)
                """
        case .get:
            body = """
                Usage: idtool get [--app APP] [--vendor GROUP] [--json] [--timeout SECONDS] [--no-prompt]

                Prints APP's identifier. Makes a new one only when every store proves it absent.

                  --app APP          the app (default: $IDTOOL_APP, else "idtool")
                  --vendor GROUP     share the identifier among one vendor's apps (an access group)
                  --json             print a JSON object instead of the bare identifier
                \(common)
                """
        case .show:
            body = """
                Usage: idtool show [--app APP] [--vendor GROUP] [--json] [--timeout SECONDS] [--no-prompt]

                Prints APP's identifier and where it is kept. Never makes a new one.

                  --app APP          the app (default: $IDTOOL_APP, else "idtool")
                  --vendor GROUP     the vendor's access group
                  --json             print a JSON object
                \(common)
                """
        case .reset:
            body = """
                Usage: idtool reset [--app APP] [--vendor GROUP] [--timeout SECONDS] [--no-prompt]

                Removes APP's identifier; the next `idtool get` makes a new one.

                  --app APP          the app (default: $IDTOOL_APP, else "idtool")
                  --vendor GROUP     the vendor's access group
                \(common)
                """
        case .migrate:
            body = """
                Usage: idtool migrate --app APP --from SOURCE [--dry-run] [--remove-legacy] [--timeout SECONDS] [--no-prompt]

                Adopts a legacy identifier for APP. Never overwrites one that APP already has.

                  --app APP          the app (required here)
                  --from SOURCE      keyring:ATTR=VALUE[,ATTR=VALUE...]  a keyring item with these attributes
                                     file:PATH                           a file's contents
                                     machine-id                          the raw /etc/machine-id (opt-in: older versions used it)
                  --dry-run          say what would happen; change nothing
                  --remove-legacy    remove the legacy copy after the adopted value is verified
                \(common)
                """
        case .derive:
            body = """
                Usage: idtool derive --app-key UUID [--uuid]

                Prints the app-specific machine ID for UUID (as `systemd-id128 machine-id --app-specific` does).

                  --app-key UUID     the app's key: 32 hex digits, dashes optional, any case (else exit 65)
                  --uuid             print in the dashed UUID format
                  -h, --help         show this help
                """
        case .doctor:
            body = """
                Usage: idtool doctor [--json] [--timeout SECONDS] [--no-prompt]

                Checks what idtool needs: the session bus, the Secret Service, the default keyring and
                whether it is unlocked, then the identity stores. Prints one line per check,
                `ok CHECK: DETAIL` or `FAIL CHECK: DETAIL` followed by a fix hint.
                Exit 0 when all pass, 75 when the only problem is a locked keyring (or a timeout), else 69.

                  --json             print {"ok": BOOL, "checks": [{"name", "ok", "detail", "hint"}]}
                \(common)
                """
        case .item:
            body = """
                Usage:
                  idtool item get   IDENTIFIER [--group G] [--key KEY] [--timeout SECONDS] [--no-prompt]
                  idtool item set   IDENTIFIER [--group G] [--key KEY] [--timeout SECONDS] [--no-prompt]  < VALUE
                  idtool item reset IDENTIFIER [--group G] [--timeout SECONDS] [--no-prompt]

                Reads and writes keyring items as the SecretStore library does: attributes
                service=IDENTIFIER, username=ACCOUNT and, with --group, access-group=G.
                Items written by secret-tool or python-keyring are read too.
                Run `idtool item get --help` and so on for details.
                """
        case .itemGet:
            body = """
                Usage: idtool item get IDENTIFIER [--group G] [--key KEY] [--timeout SECONDS] [--no-prompt]

                Writes one key of the item to stdout, byte for byte, with nothing added.
                Exits 1 with empty stdout when there is no such item (or it lacks that key).

                  --group G          the item's access group
                  --key KEY          value (the default, the secret), account, label, description, comment or generic
                \(common)
                """
        case .itemSet:
            body = """
                Usage: idtool item set IDENTIFIER [--group G] [--key KEY] [--timeout SECONDS] [--no-prompt]  < VALUE

                Reads the new value from stdin, byte for byte (binary is fine for the value; a
                trailing newline is kept, so prefer `printf %s`). Creates the item when absent.
                Secrets are never taken from the command line.

                  --group G          the item's access group
                  --key KEY          value (the default, the secret), account, label, description, comment or generic;
                                     all but value are stored as plain text and must be UTF-8
                \(common)
                """
        case .itemReset:
            body = """
                Usage: idtool item reset IDENTIFIER [--group G] [--timeout SECONDS] [--no-prompt]

                Removes the item. Removing an absent item succeeds.

                  --group G          the item's access group
                \(common)
                """
        }
        return body + "\n"
    }
}
