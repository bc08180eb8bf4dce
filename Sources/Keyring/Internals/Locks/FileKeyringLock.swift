#if canImport(Glibc)
import Glibc
#endif

/// The file keyring's write lock: a `flock` on `<keyring file>.lock` beside the keyring file, which
/// every process using that file sees (a sandboxed app and its own helpers alike), with no bus.
/// Re-entrant for the thread that holds it (`FlockFile`), so `Keyring.withCreationLock` bodies may store.
enum FileKeyringLock {
    static func with<T>(
        keyringPath: String, until deadline: CallDeadline, isCancelled: () -> Bool, _ body: () throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        if let slash = keyringPath.lastIndex(of: "/"), slash != keyringPath.startIndex {
            makeDirectories(String(keyringPath[..<slash]))
        }
        let lockPath = keyringPath + ".lock"
        return try FlockFile.withLock(
            path: lockPath, until: deadline, isCancelled: isCancelled,
            otherwise: { (failure: FlockFile.Failure) throws(KeyringError) -> T in
                switch failure {
                case .timedOut: throw deadline.timedOut
                case .cancelled: throw .cancelled
                case .cannotOpen(let reason):
                    throw .keyringFileUnavailable(path: keyringPath, detail: "cannot open its lock file \(reason)")
                case .cannotLock(let reason): throw .keyringFileUnavailable(path: keyringPath, detail: "cannot lock \(reason)")
                }
            }, body)
    }

    /// As libsecret does before writing the file: the parents, private to the user.
    private static func makeDirectories(_ directory: String) {
        var info = stat()
        if stat(directory, &info) == 0 { return }
        if let slash = directory.lastIndex(of: "/"), slash != directory.startIndex { makeDirectories(String(directory[..<slash])) }
        mkdir(directory, 0o700)
    }
}
