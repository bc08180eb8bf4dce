import Keyring

#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An advisory `flock` that serializes miss → generate → write across processes.
/// The lock file is never unlinked: removing it would let two processes lock different inodes.
struct FirstRunLock {
    let directories: [String]
    let fileName: String

    /// `$XDG_RUNTIME_DIR/keyring-identity`, then the backup directory.
    static func defaultDirectories(backupDirectory: String) -> [String] {
        (StateDirectories.runtimeDirectory().map { [$0 + "/keyring-identity"] } ?? []) + [backupDirectory]
    }

    /// The file name holds a hash of the scope's name, not the name: a 255-byte app ID plus a
    /// prefix would exceed NAME_MAX.
    init(directories: [String], scope: IdentifierScope) {
        self.directories = directories
        self.fileName = "\(scope.kind)-\(Digest.sha256Hex(Array(scope.name.utf8)).prefix(32)).lock"
    }

    /// Runs `body` while holding the lock in every usable directory, waiting until `deadline`
    /// (`timeout` is the whole call's budget, for the error message).
    ///
    /// Locks are taken in a fixed order (runtime directory, then state directory), so two
    /// processes whose environments differ in one of them still exclude each other. Re-entrant for
    /// the thread that holds it (`FlockFile`): a resolver run nested in another on the same scope
    /// and directory (two resolvers sharing a backup directory) goes ahead instead of waiting on itself.
    func withLock<T>(
        until deadline: CallDeadline, timeout: Double, isCancelled: () -> Bool = { false }, _ body: () throws(IdentityError) -> T
    ) throws(IdentityError) -> T {
        var reasons: [String] = []
        var locked = 0
        func lock(from index: Int) throws(IdentityError) -> T {
            guard index < directories.count else {
                if locked == 0 { throw .lockUnavailable(reason: reasons.isEmpty ? "no directory given" : reasons.joined(separator: "; ")) }
                return try body()
            }
            let directory = directories[index]
            do {
                try StateDirectories.makePrivateDirectory(directory)
            } catch {
                reasons.append(error.reason)
                return try lock(from: index + 1)
            }
            func withoutThisOne(_ failure: FlockFile.Failure) throws(IdentityError) -> T {
                switch failure {
                case .timedOut: throw .lockTimedOut(seconds: timeout)
                case .cancelled: throw .keyring(.cancelled)
                case .cannotLock(let reason): throw .lockUnavailable(reason: "flock: \(reason)")
                case .cannotOpen(let reason):
                    // Another directory may do.
                    reasons.append(reason)
                    return try lock(from: index + 1)
                }
            }
            let path = directory + "/" + fileName
            return try FlockFile.withLock(path: path, until: deadline, isCancelled: isCancelled, otherwise: withoutThisOne) {
                () throws(IdentityError) -> T in
                locked += 1
                return try lock(from: index + 1)
            }
        }
        return try lock(from: 0)
    }
}
