#if canImport(Glibc)
import Glibc
#endif

/// The creation lock's fallback: a per-user `flock` in `$XDG_RUNTIME_DIR`, used only when the bus
/// refuses the creation lock's name. Without a runtime directory, creation goes ahead, and reads
/// settle any twin on the oldest item.
enum CreationFallbackLock {
    static func with<T>(
        _ deadline: CallDeadline, isCancelled: () -> Bool, _ body: () throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        guard let path = lockFilePath() else { return try body() }
        return try FlockFile.withLock(
            path: path, until: deadline, isCancelled: isCancelled,
            otherwise: { (failure: FlockFile.Failure) throws(KeyringError) -> T in
                switch failure {
                case .timedOut: throw deadline.timedOut
                case .cancelled: throw .cancelled
                // As without a runtime directory: reads settle any twin.
                case .cannotOpen, .cannotLock: return try body()
                }
            }, body)
    }

    private static func lockFilePath() -> String? {
        guard let runtime = getenv("XDG_RUNTIME_DIR"), runtime.pointee == UInt8(ascii: "/") else { return nil }
        let directory = String(cString: runtime) + "/keyring-identity"
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { return nil }
        var info = stat()
        guard lstat(directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == geteuid() else { return nil }
        return directory + "/secret-store-create.lock"
    }
}
