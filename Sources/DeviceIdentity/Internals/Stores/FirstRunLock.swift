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
    /// processes whose environments differ in one of them still exclude each other.
    func withLock<T>(
        until deadline: ContinuousClock.Instant, timeout: Double, isCancelled: () -> Bool = { false }, _ body: () throws(IdentityError) -> T
    ) throws(IdentityError) -> T {
        let descriptors = try openLockFiles()
        defer { for fd in descriptors { close(fd) } }  // closing releases the flock
        for fd in descriptors {
            var pause: UInt32 = 1000
            while flock(fd, LOCK_EX | LOCK_NB) != 0 {
                guard errno == EWOULDBLOCK || errno == EINTR else {
                    throw .lockUnavailable(reason: "flock: \(Errno.text(errno))")
                }
                if ContinuousClock.now >= deadline { throw .lockTimedOut(seconds: timeout) }
                if isCancelled() { throw .keyring(.cancelled) }
                usleep(pause)
                pause = min(pause * 2, 20_000)
            }
        }
        return try body()
    }

    private func openLockFiles() throws(IdentityError) -> [Int32] {
        var reasons: [String] = []
        var descriptors: [Int32] = []
        for directory in directories {
            do {
                try StateDirectories.makePrivateDirectory(directory)
            } catch {
                reasons.append(error.reason)
                continue
            }
            let fd = open(directory + "/" + fileName, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 { descriptors.append(fd) } else { reasons.append("\(directory): \(Errno.text(errno))") }
        }
        if descriptors.isEmpty {
            throw .lockUnavailable(reason: reasons.isEmpty ? "no directory given" : reasons.joined(separator: "; "))
        }
        return descriptors
    }
}
