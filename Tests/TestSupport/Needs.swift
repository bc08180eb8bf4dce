// What a suite needs of the configuration it runs in, stated once on the suite: `.needs(...)`
// skips it where the configuration lacks something, and Swift Testing prints the reason.
import Foundation
import Keyring
import Testing

/// Something a configuration of the test harness offers (scripts/with-keyring and its siblings,
/// scripts/test's file-backend and bus-free runs).
public enum Capability: String, CaseIterable, Sendable, CustomStringConvertible {
    /// A Secret Service provider on a private bus (not libsecret's file backend).
    case secretService
    /// Unlock prompts answered by gcr's mock prompter: only gnome-keyring sends them there.
    case mockPrompter
    /// A collection `keyring-ctl lock` can lock (every Secret Service provider; the file has no lock).
    case locking
    /// A second database the default alias moves to (`keyring-ctl second-db`): KeePassXC only.
    case secondDatabase
    /// A provider that takes a locked collection's items off the bus (KeePassXC), so a search made
    /// while it is locked does not find them.
    case hidesLockedItems
    /// A provider whose search lists a locked collection's items, marked locked, with their
    /// attributes (gnome-keyring, KWallet): the opposite of `hidesLockedItems`.
    case listsLockedItems
    /// libsecret's file backend (SECRET_BACKEND=file).
    case fileBackend
    /// A keyring as years of use leave it (`--lived-in`, or scripts/test's lived-in keyring file).
    case livedIn
    /// A keyring with only the suite's own items: every run but a lived-in one.
    case pristine
    /// A provider that saves a write's value seconds after it answers, and keeps the item with an
    /// empty secret when it is killed first: KWallet's ksecretd (KDE Frameworks 6.14 and later).
    case savesSecretsLate
    /// kwalletd5 or kwalletd6, whose sessions the library checks: 1 in 256 of their Diffie-Hellman
    /// sessions derive another key than libsecret (ksecretd's do not).
    case checkedSessions
    /// gnome-keyring's in-memory `session` collection: a second collection, never locked.
    case sessionCollection
    /// A default alias the tests can remove (gnome-keyring's `keyrings/default` file).
    case removableDefaultAlias
    /// A provider the bus starts on demand when it is gone (gnome-keyring's D-Bus activation).
    case busActivation
    /// oo7's client (oo7 0.6, GNOME's Rust library), built by `scripts/debian forky --build-only`
    /// from Tests/OO7Client and named by `OO7_CLIENT`: Debian packages no oo7 program.
    case oo7Client
    /// A run where suites that test no provider run: the file backend's, every order of events,
    /// keyring-sandbox (which starts daemons of its own), idtool's generated man page and
    /// completions. Pristine gnome-keyring's run and the bus-free ones; not another provider's
    /// (KWallet, KeePassXC), a lived-in keyring's or one with `SECRET_BACKEND=file`, whose runs
    /// would only repeat them: on kwalletd5 they took 190 of its lane's 747 s.
    case providerFree

    public var description: String {
        switch self {
        case .secretService: "a Secret Service provider on the bus"
        case .mockPrompter: "gcr's mock prompter, which only gnome-keyring sends its unlock prompts to"
        case .locking: "a collection keyring-ctl can lock"
        case .secondDatabase: "KeePassXC's second database (scripts/with-keepassxc)"
        case .hidesLockedItems: "a provider that hides a locked collection's items (KeePassXC)"
        case .listsLockedItems: "a provider that lists a locked collection's items (gnome-keyring, KWallet)"
        case .fileBackend: "libsecret's file backend (SECRET_BACKEND=file)"
        case .livedIn: "a lived-in keyring (--lived-in)"
        case .pristine: "a pristine keyring (not --lived-in)"
        case .savesSecretsLate: "a provider that saves a write's value seconds later (KWallet's ksecretd)"
        case .checkedSessions: "kwalletd5 or kwalletd6, whose sessions the library checks"
        case .sessionCollection: "gnome-keyring's in-memory session collection"
        case .removableDefaultAlias: "a default alias the tests can remove (gnome-keyring's keyrings/default file)"
        case .busActivation: "a provider the bus starts again on demand (gnome-keyring's D-Bus activation)"
        case .oo7Client: "oo7-client (Tests/OO7Client), which scripts/debian forky builds with Debian's librust-oo7-dev and names in OO7_CLIENT"
        case .providerFree: "a run for suites that test no provider (pristine gnome-keyring's or none: another provider's, a lived-in or a SECRET_BACKEND=file run would repeat them)"
        }
    }
}

/// The configuration a test process runs in, as the harness's environment describes it.
public struct TestConfiguration: Sendable, CustomStringConvertible {
    /// What it offers.
    public let capabilities: Set<Capability>
    /// Its provider and backend, for skip reasons.
    public let description: String

    /// The configuration `environment` describes.
    public init(environment: [String: String]) {
        let harness = !(environment["WITH_KEYRING_ROOT"] ?? "").isEmpty
        let bus = !(environment["DBUS_SESSION_BUS_ADDRESS"] ?? "").isEmpty
        let file = environment["SECRET_BACKEND"] == "file"
        let provider = environment["KEYRING_PROVIDER"] ?? "gnome-keyring"
        var capabilities: Set<Capability> = []
        if file { capabilities.insert(.fileBackend) }
        if harness && bus && !file {
            capabilities.formUnion([.secretService, .locking])
            if provider == "gnome-keyring" { capabilities.formUnion([.mockPrompter, .sessionCollection, .removableDefaultAlias, .busActivation]) }
            if provider == "keepassxc" { capabilities.insert(.secondDatabase) }
            let quirks = TestProvider.quirks(provider: provider, kwalletDaemon: environment["KWALLET_DAEMON"] ?? "")
            capabilities.insert(quirks.listsLockedMatches ? .listsLockedItems : .hidesLockedItems)
            if quirks.savesValuesLate { capabilities.insert(.savesSecretsLate) }
            if quirks.mayMismatchSessionKeys { capabilities.insert(.checkedSessions) }
        }
        capabilities.insert(environment["KEYRING_LIVED_IN"] == "1" ? .livedIn : .pristine)
        if let client = environment["OO7_CLIENT"], FileManager.default.isExecutableFile(atPath: client) { capabilities.insert(.oo7Client) }
        if (!harness || provider == "gnome-keyring") && !file && !capabilities.contains(.livedIn) { capabilities.insert(.providerFree) }
        self.capabilities = capabilities
        let where_ = file ? "the file backend" : !harness ? "no test keyring" : !bus ? "no bus" : provider
        description = where_ + (capabilities.contains(.livedIn) ? ", lived in" : "")
    }

    /// This process's configuration.
    public static let current = TestConfiguration(environment: ProcessInfo.processInfo.environment)

    /// True when this configuration offers `capability`: for a test that adapts rather than skips.
    public func offers(_ capability: Capability) -> Bool { capabilities.contains(capability) }

    /// What of `needed` this configuration lacks.
    public func missing(_ needed: [Capability]) -> [Capability] { needed.filter { !capabilities.contains($0) } }
}

extension Trait where Self == ConditionTrait {
    /// Runs the suite or test only where the configuration offers everything in `needed`, and
    /// otherwise skips it, saying what is missing.
    public static func needs(
        _ needed: Capability..., in configuration: TestConfiguration = .current, sourceLocation: SourceLocation = #_sourceLocation
    ) -> Self {
        let missing = configuration.missing(needed)
        let named = (missing.isEmpty ? needed : missing).map(\.description).joined(separator: " and ")
        let reason = "needs " + named + (missing.isEmpty ? "" : "; this run has \(configuration)")
        return .enabled(if: missing.isEmpty, Comment(rawValue: reason), sourceLocation: sourceLocation)
    }
}
