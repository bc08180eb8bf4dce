#if canImport(Glibc)
import Glibc
#endif

/// The fallback creation lock: a per-user `flock` in `$XDG_RUNTIME_DIR`, used only when the bus
/// refuses the creation lock's name. Without a runtime directory, creation goes ahead, and reads
/// settle any twin on the oldest item.
enum CreateLock {
    static func withLock<T>(until deadline: ContinuousClock.Instant, _ body: () throws(KeyringError) -> T) throws(KeyringError) -> T {
        let fd = openLockFile()
        defer { if fd >= 0 { close(fd) } }  // closing releases the lock
        if fd >= 0 {
            while flock(fd, LOCK_EX | LOCK_NB) != 0 {
                guard errno == EWOULDBLOCK || errno == EINTR else { break }
                if ContinuousClock.now >= deadline { throw .timedOut(seconds: 0) }
                usleep(2000)
            }
        }
        return try body()
    }

    private static func openLockFile() -> Int32 {
        guard let runtime = getenv("XDG_RUNTIME_DIR"), runtime.pointee == UInt8(ascii: "/") else { return -1 }
        let directory = String(cString: runtime) + "/keyring-identity"
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { return -1 }
        var info = stat()
        guard lstat(directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == geteuid() else { return -1 }
        return open(directory + "/secret-store-create.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
    }
}
