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

    init(directories: [String], scope: IdentifierScope) {
        self.directories = directories
        self.fileName = "\(scope.kind)-\(scope.name).lock"
    }

    /// Runs `body` while holding the lock, waiting at most `timeout` for it.
    func withLock<T>(timeout: Double, _ body: () throws(IdentityError) -> T) throws(IdentityError) -> T {
        let fd = try openLockFile()
        defer { close(fd) }  // closing releases the flock
        let deadline = Date().addingTimeInterval(timeout)
        var pause: UInt32 = 1000
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                throw .lockUnavailable(reason: "flock: \(Errno.text(errno))")
            }
            if Date() >= deadline { throw .lockTimedOut(seconds: timeout) }
            usleep(pause)
            pause = min(pause * 2, 20_000)
        }
        return try body()
    }

    private func openLockFile() throws(IdentityError) -> Int32 {
        var reasons: [String] = []
        for directory in directories {
            do {
                try StateDirectories.makePrivateDirectory(directory)
            } catch {
                reasons.append(error.reason)
                continue
            }
            let fd = open(directory + "/" + fileName, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 { return fd }
            reasons.append("\(directory): \(Errno.text(errno))")
        }
        throw .lockUnavailable(reason: reasons.isEmpty ? "no directory given" : reasons.joined(separator: "; "))
    }
}
