#if canImport(Glibc)
import Glibc
#endif

/// Read-only checks of the places the resolver writes to, for `idtool doctor`.
/// They create nothing and never print the machine ID.
public enum StorageDiagnostics {
    /// One check's result.
    public struct Finding: Sendable, Equatable {
        /// A stable name, e.g. "backup directory".
        public let name: String
        /// True when the check passed.
        public let ok: Bool
        /// What was found, in one line.
        public let detail: String
        /// How to fix a failure; nil when `ok`.
        public let hint: String?
    }

    /// Checks the backup directory, the lock directory and the machine ID for `scope`.
    /// - Parameters:
    ///   - scope: the identifier whose storage to check.
    ///   - machineIDPath: the machine ID file.
    /// - Returns: one finding per check, in a fixed order.
    public static func check(_ scope: IdentifierScope, machineIDPath: String = "/etc/machine-id") -> [Finding] {
        let backupDirectory = BackupFile.defaultDirectory(for: scope)
        var findings = [
            directoryFinding(
                "backup directory", backupDirectory,
                hint: "make $XDG_STATE_HOME (or ~/.local/state) writable by you")
        ]
        if let runtime = StateDirectories.runtimeDirectory() {
            let lock = directoryFinding(
                "lock directory", runtime + "/keyring-identity",
                hint: "set XDG_RUNTIME_DIR to a writable 0700 directory (systemd-logind does this at login)")
            findings.append(
                lock.ok
                    ? lock
                    : Finding(
                        name: lock.name, ok: findings[0].ok,
                        detail: lock.detail + "; falling back to the backup directory", hint: findings[0].ok ? nil : lock.hint))
        } else {
            findings.append(
                Finding(
                    name: "lock directory", ok: findings[0].ok,
                    detail: "XDG_RUNTIME_DIR is not set; the lock lives in the backup directory",
                    hint: findings[0].ok ? nil : "set XDG_RUNTIME_DIR, or make the backup directory writable"))
        }
        do {
            _ = try AppSpecificMachineID.plainHex(appKey: "00000000000000000000000000000001", machineIDPath: machineIDPath)
            findings.append(Finding(name: "machine-id", ok: true, detail: "\(machineIDPath) is readable and valid", hint: nil))
        } catch {
            findings.append(
                Finding(
                    name: "machine-id", ok: false, detail: error.reason,
                    hint: "run systemd-machine-id-setup (as root); until then use the randomUUID policy"))
        }
        return findings
    }

    /// OK when `path` is (or could be created as) a directory writable by us.
    private static func directoryFinding(_ name: String, _ path: String, hint: String) -> Finding {
        var existing = path
        var info = stat()
        while lstat(existing, &info) != 0 {
            guard let slash = existing.lastIndex(of: "/"), slash != existing.startIndex else {
                existing = "/"
                break
            }
            existing = String(existing[..<slash])
        }
        let exists = existing == path
        if exists && (info.st_mode & S_IFMT) != S_IFDIR {
            return Finding(name: name, ok: false, detail: "\(path) is not a directory", hint: "move \(path) aside")
        }
        if access(existing, W_OK | X_OK) != 0 {
            return Finding(name: name, ok: false, detail: "\(existing) is not writable (\(Errno.text(errno)))", hint: hint)
        }
        if exists && info.st_uid != geteuid() {
            return Finding(name: name, ok: false, detail: "\(path) is owned by another user", hint: "move \(path) aside")
        }
        return Finding(name: name, ok: true, detail: exists ? "\(path) is writable" : "\(path) can be created", hint: nil)
    }
}
