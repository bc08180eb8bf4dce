#if canImport(Glibc)
import Glibc
#endif

/// A per-user `flock` held while a `SecretStore` creates its item, so two processes writing a
/// new item at once end with one item: the second finds the first's item under the lock and
/// updates it. Lives in `$XDG_RUNTIME_DIR` (private to the user); without it, creation goes
/// ahead unlocked and relies on the service's replace-on-identical-attributes.
enum CreateLock {
    static func withLock(_ body: () throws(KeyringError) -> Void) throws(KeyringError) {
        let fd = openLockFile()
        defer { if fd >= 0 { close(fd) } }  // closing releases the lock
        if fd >= 0 {
            // Bounded wait: a creation takes milliseconds. A holder stuck for 5 s is reported as a
            // timeout rather than raced (going ahead unlocked could create a second item).
            var waited: UInt32 = 0
            while flock(fd, LOCK_EX | LOCK_NB) != 0 {
                guard errno == EWOULDBLOCK || errno == EINTR else { break }
                if waited >= 5_000_000 { throw .timedOut(seconds: 5) }
                usleep(2000)
                waited += 2000
            }
        }
        try body()
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
