import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One parsed idtool invocation. `CommandLineParser.parse` makes it; `main` runs it.
///
/// Every option is resolved here: defaults are filled in (`--app` from `IDTOOL_APP`, else
/// "idtool"; `--timeout` 10 s; `unlock` `.prompt`, `.never` with `--no-prompt`), and values are
/// validated, so runners need no further checks.
enum Command: Equatable, Sendable {
    /// `--help`/`-h`: print the usage of `topic` to stdout, exit 0.
    case help(HelpTopic)
    /// `--version`: print the version, exit 0.
    case version
    /// `--generate …` (hidden): print the man page, a shell's completion script or the DocC reference, exit 0.
    case generate(Generated)

    /// `idtool get`: print the app's identifier, creating it when it is proven absent.
    case get(app: String, vendor: String?, json: Bool, timeout: Duration, unlock: UnlockPolicy = .prompt)
    /// `idtool show`: print the app's identifier without ever creating one.
    case show(app: String, vendor: String?, json: Bool, timeout: Duration, unlock: UnlockPolicy = .prompt)
    /// `idtool reset`: remove the app's identifier.
    case reset(app: String, vendor: String?, timeout: Duration, unlock: UnlockPolicy = .prompt)
    /// `idtool migrate`: adopt a legacy identifier from `source`. `--app` is required here.
    case migrate(app: String, source: MigrationSource, dryRun: Bool, removeLegacy: Bool, timeout: Duration, unlock: UnlockPolicy = .prompt)
    /// `idtool derive`: the app-specific machine ID for `appKey`; `uuid` asks for the dashed form.
    case derive(appKey: UUID, uuid: Bool)

    /// `idtool doctor`: check the session bus, the Secret Service and the default collection.
    case doctor(json: Bool, timeout: Duration)

    /// `idtool lock`: lock the default collection (never prompts).
    case lock(timeout: Duration)
    /// `idtool unlock`: unlock the default collection through the service's prompt.
    case unlock(timeout: Duration, unlock: UnlockPolicy = .prompt)

    /// `idtool item get`: write one key of an item to stdout, byte for byte.
    case itemGet(
        identifier: String, group: String?, account: String? = nil, key: SecretStore.Key, timeout: Duration, unlock: UnlockPolicy = .prompt)
    /// `idtool item set`: read one key of an item from stdin, byte for byte.
    case itemSet(
        identifier: String, group: String?, account: String? = nil, key: SecretStore.Key, timeout: Duration, unlock: UnlockPolicy = .prompt)
    /// `idtool item reset`: remove an item.
    case itemReset(identifier: String, group: String?, account: String? = nil, timeout: Duration, unlock: UnlockPolicy = .prompt)
    /// `idtool item list`: the items of an identifier or an access group (at least one is given), no secrets.
    case itemList(identifier: String?, group: String?, json: Bool, timeout: Duration, unlock: UnlockPolicy = .prompt)
    /// `idtool item watch`: print one line per change of an item until interrupted.
    case itemWatch(identifier: String, group: String?, account: String? = nil, json: Bool, timeout: Duration)
}

/// Where `idtool migrate --from` finds a legacy identifier.
enum MigrationSource: Equatable, Sendable {
    /// `keyring:ATTR=VALUE[,ATTR=VALUE…]`: the secret of the keyring item with these attributes.
    case keyring(attributes: [String: String])
    /// `file:PATH`: the contents of a file.
    case file(path: String)
    /// `machine-id`: the raw machine ID (opt-in, for apps whose older versions used it as their identifier).
    case machineID
}

/// What the hidden `idtool --generate` prints, rendered from `Interface` as `--help` is.
enum Generated: Equatable, Sendable {
    /// `--generate man`: idtool(1) in roff.
    case man
    /// `--generate completion SHELL`: the completion script for SHELL.
    case completion(Shell)
    /// `--generate reference`: the DocC article's reference regions in Markdown.
    case reference
}

/// The shells idtool makes completion scripts for.
enum Shell: String, Equatable, Sendable, CaseIterable {
    case bash, zsh, fish
}

/// Which usage text to print: the overview, or one command's.
enum HelpTopic: String, Equatable, Sendable, CaseIterable {
    case overview
    case get, show, reset, migrate, derive, doctor, lock, unlock
    case item, itemGet, itemSet, itemReset, itemList, itemWatch
}
