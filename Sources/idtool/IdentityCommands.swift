import DeviceIdentity
import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `idtool get|show|reset|migrate|derive`, and the identity checks of `idtool doctor`.
/// Identifiers go to stdout only; notices and errors go to stderr as one line each.
enum IdentityCommands {
    /// Runs `.get`, `.show`, `.reset`, `.migrate` or `.derive` and returns the exit status.
    static func run(_ command: Command) -> Int32 {
        do throws(IdentityError) {
            switch command {
            case .get(let app, let vendor, let json, let timeout, let unlock):
                let resolution = try resolver(app: app, vendor: vendor, timeout: timeout, unlock: unlock).resolve()
                printNotices(resolution)
                guard Output.print(json ? self.json(resolution).serialized + "\n" : resolution.value + "\n") else {
                    Output.error("cannot write to stdout: check where the output goes")
                    return ExitCode.software.rawValue
                }
                return ExitCode.ok.rawValue
            case .show(let app, let vendor, let json, let timeout, let unlock):
                return show(try resolver(app: app, vendor: vendor, timeout: timeout, unlock: unlock), json: json)
            case .reset(let app, let vendor, let timeout, let unlock):
                try resolver(app: app, vendor: vendor, timeout: timeout, unlock: unlock).reset()
                return ExitCode.ok.rawValue
            case .migrate(let app, let source, let dryRun, let removeLegacy, let timeout, let unlock):
                return try migrate(app: app, source: source, dryRun: dryRun, removeLegacy: removeLegacy, timeout: timeout, unlock: unlock)
            case .derive(let appKey, let uuid):
                return derive(appKey: appKey, uuid: uuid)
            default:
                Output.error("internal error: not an identity command: report this as a bug")
                return ExitCode.software.rawValue
            }
        } catch {
            Output.error(error.description + lockedKeyringsNote(error))
            return exitCode(for: error).rawValue
        }
    }

    /// The backup-directory, lock-directory and machine-id checks for `idtool doctor`.
    static func doctorChecks() -> [DoctorCheck] {
        let app = ProcessInfo.processInfo.environment["IDTOOL_APP"].flatMap { $0.isEmpty ? nil : $0 } ?? "idtool"
        guard let scope = try? IdentifierResolver(appID: app).scope else {
            return [.fail("backup directory", "IDTOOL_APP is not a valid app ID", hint: "set IDTOOL_APP to e.g. com.example.app")]
        }
        return StorageDiagnostics.check(scope).map { finding in
            finding.ok ? .pass(finding.name, finding.detail) : .fail(finding.name, finding.detail, hint: finding.hint ?? "")
        }
    }

    static func resolver(
        app: String, vendor: String?, timeout: Duration, unlock: UnlockPolicy, migrations: [DeviceIdentity.MigrationSource] = []
    )
        throws(IdentityError) -> IdentifierResolver
    {
        let keyring = Keyring(timeout: timeout, unlock: unlock)
        if let vendor {
            _ = try IdentifierResolver(appID: app, vendorGroup: vendor)  // validates both names
            return try IdentifierResolver(scope: .vendor(vendor), migrations: migrations, keyring: keyring)
        }
        return try IdentifierResolver(scope: .app(app), migrations: migrations, keyring: keyring)
    }

    /// Degraded service and settled conflicts, one line each on stderr. They never carry the identifier.
    static func printNotices(_ resolution: Resolution) {
        if let problem = resolution.keyringProblem {
            switch resolution.provenance {
            case .keyring, .backup:
                Output.error("notice: served from the backup file because the keyring is unavailable (\(problem))")
            case .generated, .migrated:
                Output.error("notice: the new identifier is kept in the backup file until the keyring is reachable (\(problem))")
            }
        }
        for conflict in resolution.conflicts { Output.error("notice: \(conflict)") }
        for notice in resolution.notices { Output.error("notice: \(notice)") }
    }

    static func show(_ resolver: IdentifierResolver, json: Bool) -> Int32 {
        do throws(IdentityError) {
            let resolution = try resolver.dryRun()
            // A dry run that would generate or migrate means there is no identifier yet.
            let exists = resolution.provenance == .keyring || resolution.provenance == .backup
            if json {
                var object = self.json(exists ? resolution : nil)
                if case .object(var members) = object {
                    members.append(("backupPath", resolver.backupPath.map(JSON.string) ?? .null))
                    object = .object(members)
                }
                Output.print(object.serialized + "\n")
            } else if exists {
                var lines = ["identifier: \(resolution.value)", "provenance: \(resolution.provenance)"]
                if let origin = resolution.origin { lines.append("origin: \(origin)") }
                if let created = resolution.createdAt { lines.append("created: \(created.formatted(.iso8601))") }
                let keyringState =
                    resolution.storedIn.contains(.keyring)
                    ? "holds it"
                    : resolution.keyringProblem.map { "unavailable (\($0))" } ?? "missing it (the next get restores it)"
                lines.append("keyring: \(keyringState)")
                let backupState = resolution.storedIn.contains(.backup) ? "holds it" : "missing it (the next get rewrites it)"
                lines.append("backup: \(backupState) at \(resolver.backupPath ?? "-")")
                for conflict in resolution.conflicts { lines.append("conflict: \(conflict)") }
                for notice in resolution.notices { lines.append("note: \(notice)") }
                Output.print(lines.joined(separator: "\n") + "\n")
            }
            if !exists {
                Output.error("\(resolver.scope) has no identifier yet: `idtool get` makes one")
                return ExitCode.absent.rawValue
            }
            return ExitCode.ok.rawValue
        } catch {
            Output.error(error.description + lockedKeyringsNote(error))
            return exitCode(for: error).rawValue
        }
    }

    static func migrate(
        app: String, source: MigrationSource, dryRun: Bool, removeLegacy: Bool, timeout: Duration, unlock: UnlockPolicy
    ) throws(IdentityError) -> Int32 {
        let legacy: DeviceIdentity.MigrationSource
        switch source {
        case .keyring(let attributes): legacy = .keyringItem(attributes, removeAfterMigration: removeLegacy)
        case .file(let path): legacy = .file(path, removeAfterMigration: removeLegacy)
        case .machineID: legacy = .machineID()
        }
        let report = try resolver(app: app, vendor: nil, timeout: timeout, unlock: unlock, migrations: [legacy]).migrate(dryRun: dryRun)
        switch report.outcome {
        case .destinationHadIdentifier:
            Output.error("notice: \(app) already has an identifier; migration never overwrites it")
        case .adopted(let from):
            Output.error("notice: adopted the identifier from \(from)" + (report.legacyRemoved ? "; the legacy copy was removed" : ""))
        case .wouldAdopt(let from):
            Output.error("notice: dry run: would adopt the identifier from \(from); nothing was written")
        case .nothingToMigrate:
            if let rejection = report.rejected.first {
                Output.error("the legacy value in \(rejection.source) is invalid (\(rejection.reason)): fix or remove it")
                return ExitCode.dataError.rawValue
            }
            Output.error("no legacy identifier found in \(legacy): check the source")
            return ExitCode.absent.rawValue
        }
        if let value = report.resolution?.value { Output.print(value + "\n") }
        return ExitCode.ok.rawValue
    }

    static func derive(appKey: UUID, uuid: Bool) -> Int32 {
        do throws(AppSpecificMachineID.Unavailable) {
            let hex = try AppSpecificMachineID.plainHex(appKey: appKey.uuidString)
            Output.print((uuid ? dashed(hex) : hex) + "\n")
            return ExitCode.ok.rawValue
        } catch {
            Output.error("cannot derive the app-specific machine ID: \(error.reason)")
            return ExitCode.unavailable.rawValue
        }
    }

    static func dashed(_ hex: String) -> String {
        let characters = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }.joined(separator: "-")
    }

    /// The `--json` schema of get and show. Keys are fixed; `identifier` is null when there is none.
    static func json(_ resolution: Resolution?) -> JSON {
        guard let resolution else {
            return .object([
                ("identifier", .null), ("provenance", .null), ("origin", .null), ("created", .null),
                ("storedIn", .array([])), ("repairs", .array([])), ("conflicts", .array([])),
                ("degraded", .bool(false)), ("keyringProblem", .null), ("notices", .array([])),
            ])
        }
        return .object([
            ("identifier", .string(resolution.value)),
            ("provenance", .string(resolution.provenance.description)),
            ("origin", resolution.origin.map(JSON.string) ?? .null),
            ("created", resolution.createdAt.map { .string($0.formatted(.iso8601)) } ?? .null),
            ("storedIn", .array(resolution.storedIn.sorted().map { .string($0.rawValue) })),
            ("repairs", .array(resolution.repairs.map(JSON.string))),
            ("conflicts", .array(resolution.conflicts.map(JSON.string))),
            ("degraded", .bool(resolution.isDegraded)),
            ("keyringProblem", resolution.keyringProblem.map { .string($0.description) } ?? .null),
            ("notices", .array(resolution.notices.map(JSON.string))),
        ])
    }

    /// Output.lockedKeyringsNote for a keyring error inside an identity error.
    static func lockedKeyringsNote(_ error: IdentityError) -> String {
        if case .keyring(let keyringError) = error { Output.lockedKeyringsNote(keyringError) } else { "" }
    }

    static func exitCode(for error: IdentityError) -> ExitCode {
        switch error {
        case .keyring(let keyringError): return ExitCode(keyringError)
        case .invalidArgument: return .usage
        case .lockTimedOut, .keyringUnreachable: return .temporaryFailure
        case .verificationFailed: return .software
        case .backupUnreadable, .backupCorrupt, .backupUnwritable, .lockUnavailable, .policyUnavailable, .migrationSourceUnreadable:
            return .unavailable
        }
    }
}
