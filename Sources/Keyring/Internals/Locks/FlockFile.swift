#if canImport(Glibc)
import Glibc
#endif

/// The one `flock` helper: an exclusive lock on a lock file, waited for until the call's
/// deadline and no longer once the call is cancelled. Every file lock of both modules (the file
/// keyring's, the creation lock's fallback, DeviceIdentity's first-run lock) is one of these.
///
/// Re-entrant for the thread that holds it: a nested lock of the same file (the same inode,
/// whatever the path says) runs at once, where a second `flock` would wait on the first until the
/// timeout. Other threads of this process wait as other processes do: each opens its own
/// descriptor, and `flock` excludes open file descriptions, not processes.
///
/// The lock file is never unlinked: removing it would let two processes lock different inodes.
package enum FlockFile {
    /// Why the lock was not taken.
    package enum Failure: Error {
        /// The lock file cannot be opened or created; the reason names the path.
        case cannotOpen(reason: String)
        /// `flock` failed for another reason than a holder (ENOLCK, say).
        case cannotLock(reason: String)
        /// Another holder kept it until the deadline.
        case timedOut
        /// The caller cancelled while waiting.
        case cancelled
    }

    /// Files this process holds: the holding thread and the file's inode, with how deeply.
    private struct Held: Hashable {
        let thread: UInt
        let device: UInt64
        let inode: UInt64
    }
    private static let held = Guarded<[Held: Int]>([:])

    /// Runs `body` holding an exclusive `flock` on `path`, created (mode 0600) when missing and
    /// never opened through a symbolic link.
    /// - Parameters:
    ///   - path: the lock file; its directory must exist.
    ///   - deadline: when to give up waiting.
    ///   - isCancelled: checked while waiting.
    ///   - otherwise: called instead of `body` when the lock was not taken: it throws the caller's
    ///     error, or (for a lock the caller may do without) returns what `body` would.
    ///   - body: the work to do under the lock.
    /// - Returns: what `body` (or `otherwise`) returns.
    /// - Throws: what `otherwise` or `body` throws.
    package static func withLock<T, E: Error>(
        path: String, until deadline: CallDeadline, isCancelled: () -> Bool, otherwise: (Failure) throws(E) -> T,
        _ body: () throws(E) -> T
    ) throws(E) -> T {
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return try otherwise(.cannotOpen(reason: "\(path): \(String(cString: strerror(errno)))")) }
        defer { close(fd) }  // closing releases the flock
        var info = stat()
        guard fstat(fd, &info) == 0 else { return try otherwise(.cannotOpen(reason: "\(path): \(String(cString: strerror(errno)))")) }
        let key = Held(thread: UInt(bitPattern: Int(bitPattern: pthread_self())), device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        if held.withLock({ $0[key] != nil }) {
            // Already held by this thread, through another descriptor that stays open meanwhile
            // (closing this one does not release a flock taken through that one).
            held.withLock { $0[key]! += 1 }
            defer { held.withLock { $0[key]! -= 1 } }
            return try body()
        }
        var problem: Int32 = 0
        let outcome = deadline.poll(isCancelled: isCancelled) {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
            if errno == EWOULDBLOCK || errno == EINTR { return false }
            problem = errno
            return true
        }
        switch outcome {
        case .timedOut: return try otherwise(.timedOut)
        case .cancelled: return try otherwise(.cancelled)
        case .done: if problem != 0 { return try otherwise(.cannotLock(reason: "\(path): \(String(cString: strerror(problem)))")) }
        }
        held.withLock { $0[key] = 1 }
        defer { held.withLock { $0[key] = nil } }
        return try body()
    }
}
