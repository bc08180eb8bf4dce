import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One line of `idtool doctor`: a named check, what it found and, on failure, how to fix it.
struct DoctorCheck: Equatable, Sendable {
    /// A stable name, e.g. "session bus"; scripts match on it.
    var name: String
    /// True when the check passed.
    var ok: Bool
    /// What was found, in one line. Never an identifier, a secret or the raw machine ID.
    var detail: String
    /// One line saying how to fix a failure; nil when `ok`.
    var hint: String?
    /// The exit status this failure calls for: `.unavailable` (69) unless the problem is
    /// temporary (`.temporaryFailure`, 75). Ignored when `ok`.
    var failureStatus: ExitCode = .unavailable

    static func pass(_ name: String, _ detail: String) -> DoctorCheck {
        DoctorCheck(name: name, ok: true, detail: detail, hint: nil)
    }

    static func fail(_ name: String, _ detail: String, hint: String, status: ExitCode = .unavailable) -> DoctorCheck {
        DoctorCheck(name: name, ok: false, detail: detail, hint: hint, failureStatus: status)
    }
}

/// What doctor needs from `Keyring.status()`. Its own type because `ServiceStatus` has no
/// public initializer, so tests could not build one.
struct KeyringProbe: Equatable, Sendable {
    var isReachable: Bool
    var provider: String?
    var hasDefaultCollection: Bool
    var isLocked: Bool
    var defaultCollectionLabel: String?
    var problem: KeyringError?
    /// The KWallet daemon on the bus (running or activatable): asked only when there is no Secret Service.
    var kwallet: KWalletOnBus?
    /// The Secret Service opens a "plain" session: asked only when connecting failed otherwise.
    var plainSessionWorks = false
    /// Every collection, the default first (empty when the service was not reached).
    var collections: [CollectionStatus] = []
}

extension KeyringProbe {
    init(_ status: ServiceStatus, environment: [String: String]) {
        self.init(
            isReachable: status.isReachable, provider: status.provider, hasDefaultCollection: status.hasDefaultCollection,
            isLocked: status.isLocked, defaultCollectionLabel: status.defaultCollectionLabel, problem: status.problem)
        collections = status.collections
        switch status.problem {
        case .noSecretService?:
            kwallet = KWalletOnBus.probe(environment: environment)
        case .serviceFailure?, .keyExchangeFailed?:
            plainSessionWorks = !status.isReachable && BusProbe.opensPlainSession()
        default: break
        }
    }
}

/// `idtool doctor`: the keyring checks here, then `IdentityCommands.doctorChecks()`.
enum Doctor {
    static let sessionBus = "session bus"
    static let secretService = "secret service"
    static let defaultCollection = "default collection"
    static let unlocked = "default collection unlocked"
    static let backend = "keyring backend"
    static let keyringFile = "keyring file"
    static let collections = "collections"

    static func run(json: Bool, timeout: Duration, environment: [String: String]) -> Int32 {
        let keyring = Keyring(timeout: timeout)
        let status = KeyringProbe(keyring.status(), environment: environment)
        let backend = keyring.backend.resolved
        // KeePassXC's settings decide whether unattended calls work: explain them.
        let provider = backend != .file && status.provider == "keepassxc" ? [keePassXCCheck(environment: environment)] : []
        let keyringChecks =
            backend == .file
            ? fileChecks(status, path: KeyringBackend.keyringFilePath)
            : keyringChecks(status, environment: environment) + collectionsCheck(status) + provider
                + splitKeyringCheck(environment: environment, provider: status.provider)
        let checks = [backendCheck(keyring.backend)] + keyringChecks + IdentityCommands.doctorChecks()
        let code = exitStatus(checks)
        Output.print(json ? self.json(checks) + "\n" : text(checks))
        if code != .ok {
            let failed = checks.filter { !$0.ok }.count
            Output.error("doctor: \(failed) of \(checks.count) checks failed: apply the fixes printed on stdout")
        }
        return code.rawValue
    }

    /// The four keyring checks, in order, derived from one `Keyring.status()`.
    static func keyringChecks(_ status: KeyringProbe, environment: [String: String]) -> [DoctorCheck] {
        let busHint = "run inside a desktop session, or start one with dbus-run-session"
        let serviceHint = "install and start gnome-keyring, KWallet or KeePassXC with its Secret Service enabled"
        let collectionHint = "create a default keyring (e.g. the login keyring in Seahorse), then retry"
        let unlockHint = "unlock the keyring by logging in to the desktop session (or with your keyring manager)"

        var checks: [DoctorCheck] = []
        // A check that cannot run because an earlier one failed shares that failure's status.
        func blocked(_ name: String, by cause: String) -> DoctorCheck {
            .fail(
                name, "not checked: the \(cause) check failed", hint: "fix the \(cause) first",
                status: checks.last?.failureStatus ?? .unavailable)
        }

        // 1. Session bus.
        if case .noSessionBus(let detail) = status.problem {
            checks.append(.fail(sessionBus, "not reachable (\(detail))", hint: busHint))
            return checks + [
                blocked(secretService, by: sessionBus), blocked(defaultCollection, by: sessionBus),
                blocked(unlocked, by: sessionBus),
            ]
        }
        let via = environment["DBUS_SESSION_BUS_ADDRESS"].map { $0.isEmpty ? nil : $0 } ?? nil
        checks.append(.pass(sessionBus, via != nil ? "connected via DBUS_SESSION_BUS_ADDRESS" : "connected via $XDG_RUNTIME_DIR/bus"))

        // 2. Secret Service owner and implementation.
        guard status.isReachable else {
            switch status.problem {
            case .noSecretService?:
                // KWallet's daemon on the bus explains it: its API switched off, or not started.
                checks.append(
                    status.kwallet?.check(service: BusProbe.secretServiceName)
                        ?? .fail(secretService, "\(BusProbe.secretServiceName) has no owner and none can be activated", hint: serviceHint))
            case .keyExchangeFailed(let provider, let detail)?:
                // KWallet without the QCA OpenSSL plugin answers the encrypted OpenSession with
                // InvalidArgs ("createDLGroup failed"); unencrypted sessions still work.
                let who = provider.map { describe(provider: $0) } ?? "it"
                let sessions = status.plainSessionWorks ? "opens only unencrypted sessions" : "opens no encrypted session"
                checks.append(
                    .fail(
                        secretService, "\(who) \(sessions): its Diffie-Hellman key exchange fails (\(detail))",
                        hint: KeyringError.keyExchangeFix(provider: provider)))
            case .serviceFailure? where status.plainSessionWorks:
                // Another encrypted-session failure, while unencrypted sessions work.
                checks.append(
                    .fail(
                        secretService, "opens only unencrypted sessions: its Diffie-Hellman key exchange fails (\(status.problem!))",
                        hint: KeyringError.keyExchangeFix(provider: status.provider)))
            case .timedOut(let seconds)?:
                checks.append(
                    .fail(
                        secretService, "did not answer within \(format(seconds)) s",
                        hint: "check that the keyring daemon is responsive, or raise --timeout",
                        status: .temporaryFailure))
            case let problem?:
                checks.append(.fail(secretService, "unusable: \(problem)", hint: serviceHint, status: ExitCode(problem).clampedForDoctor))
            case nil:
                checks.append(.fail(secretService, "did not answer", hint: serviceHint))
            }
            return checks + [blocked(defaultCollection, by: secretService), blocked(unlocked, by: secretService)]
        }
        checks.append(.pass(secretService, "provided by \(describe(provider: status.provider))"))

        // 3. Default collection exists.
        guard status.hasDefaultCollection else {
            switch status.problem {
            case nil, .noDefaultCollection?:
                checks.append(.fail(defaultCollection, "the Secret Service has no default keyring", hint: collectionHint))
            case let problem?:
                checks.append(
                    .fail(
                        defaultCollection, "cannot be read: \(problem)", hint: collectionHint,
                        status: ExitCode(problem).clampedForDoctor))
            }
            return checks + [blocked(unlocked, by: defaultCollection)]
        }
        let label = status.defaultCollectionLabel.map { " (\(JSON.quote($0)))" } ?? ""
        checks.append(.pass(defaultCollection, "exists\(label)"))

        // 4. Default collection unlocked.
        switch status.problem {
        case nil where !status.isLocked, .noDefaultCollection?:
            checks.append(.pass(unlocked, "unlocked"))
        case nil, .locked?:
            checks.append(.fail(unlocked, "locked", hint: unlockHint, status: .temporaryFailure))
        case let problem?:
            checks.append(.fail(unlocked, "cannot tell: \(problem)", hint: unlockHint, status: ExitCode(problem).clampedForDoctor))
        }
        return checks
    }

    /// Every collection with its lock state, the default marked: informational, never a failure
    /// (an old keyring left locked blocks nothing but its own items). None when the service was not reached.
    static func collectionsCheck(_ status: KeyringProbe) -> [DoctorCheck] {
        guard !status.collections.isEmpty else { return [] }
        let listed = status.collections.map { collection in
            // gnome-keyring's in-memory session collection has an empty label.
            let name = collection.label.isEmpty ? "(no label)" : JSON.quote(collection.label)
            return "\(name) (\(collection.isDefault ? "default, " : "")\(collection.isLocked ? "locked" : "unlocked"))"
        }
        return [.pass(collections, "\(status.collections.count): " + listed.joined(separator: ", "))]
    }

    /// Which backend the keyring calls use, and why: libsecret's own choice, made the same way.
    static func backendCheck(_ choice: KeyringBackend) -> DoctorCheck {
        let (backend, why) = choice.resolvedWithReason
        let what = backend == .file ? "file (libsecret's file backend)" : "secret-service"
        return .pass(Doctor.backend, "\(what), \(why)")
    }

    /// The file backend's one check: the keyring file opens with its key. It has no bus, no
    /// collections and no locked state, so the Secret Service checks do not apply.
    static func fileChecks(_ status: KeyringProbe, path: String) -> [DoctorCheck] {
        guard let problem = status.problem else {
            return [.pass(keyringFile, "\(path) opens with its key (no locked state)")]
        }
        let hint: String
        switch problem {
        case .wrongKey:
            hint = "run with the key the file was written with; or move the file away to start an empty keyring"
        case .keyringFileDamaged:
            hint = "restore the file from a backup, or move it away to start an empty keyring"
        default:
            hint =
                "check the file's directory permissions and free space; outside a Flatpak sandbox set SECRET_FILE_TEST_PASSWORD, or unset SECRET_BACKEND to use the Secret Service"
        }
        return [.fail(keyringFile, "\(problem)", hint: hint, status: ExitCode(problem).clampedForDoctor)]
    }

    /// The provider's process name with the product it belongs to, e.g. "kwalletd5 (KWallet)".
    static func describe(provider: String?) -> String {
        guard let provider else { return "an unknown program" }
        let product: String? =
            switch provider {
            case "gnome-keyring-daemon": "GNOME Keyring"
            case "kwalletd", "kwalletd5", "kwalletd6", "ksecretd": "KWallet"
            case "keepassxc", "KeePassXC": "KeePassXC"
            case "oo7-daemon": "oo7"
            default: nil
            }
        return product.map { "\(provider) (\($0))" } ?? provider
    }

    /// 0 when every check passed; 75 when every failure is temporary; else 69 (or 70 when a
    /// failure is internal).
    static func exitStatus(_ checks: [DoctorCheck]) -> ExitCode {
        let failures = checks.filter { !$0.ok }.map(\.failureStatus)
        if failures.isEmpty { return .ok }
        if failures.allSatisfy({ $0 == .temporaryFailure }) { return .temporaryFailure }
        if failures.contains(.software) && !failures.contains(.unavailable) { return .software }
        return .unavailable
    }

    /// `ok NAME: DETAIL`, or `FAIL NAME: DETAIL` followed by an indented `fix: HINT` line.
    static func text(_ checks: [DoctorCheck]) -> String {
        checks.map { check in
            let line = "\(check.ok ? "ok" : "FAIL") \(check.name): \(oneLine(check.detail))\n"
            guard !check.ok, let hint = check.hint else { return line }
            return line + "    fix: \(oneLine(hint))\n"
        }.joined()
    }

    /// `{"ok": BOOL, "checks": [{"name", "ok", "detail", "hint"}]}`; `hint` is null for a passed check.
    static func json(_ checks: [DoctorCheck]) -> String {
        JSON.object([
            ("ok", .bool(checks.allSatisfy(\.ok))),
            (
                "checks",
                .array(
                    checks.map { check in
                        .object([
                            ("name", .string(check.name)),
                            ("ok", .bool(check.ok)),
                            ("detail", .string(check.detail)),
                            ("hint", check.ok ? .null : check.hint.map(JSON.string) ?? .null),
                        ])
                    })
            ),
        ]).serialized
    }

    private static func oneLine(_ text: String) -> String {
        text.map { $0.isNewline ? " " : String($0) }.joined()
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}

extension ExitCode {
    /// Doctor reports only 69, 70 and 75.
    fileprivate var clampedForDoctor: ExitCode {
        switch self {
        case .temporaryFailure, .software: return self
        default: return .unavailable
        }
    }
}
