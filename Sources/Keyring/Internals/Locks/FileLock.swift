internal import CLibSecret

#if canImport(Glibc)
import Glibc
#endif

/// The file keyring's write lock: a `flock` on `<keyring file>.lock` beside the keyring file, which
/// every process using that file sees (a sandboxed app and its own helpers alike), with no bus.
/// Re-entrant for the thread that holds it, so `Keyring.withCreationLock` bodies may store.
enum FileLock {
    /// A recursive pthread mutex (thread-safe, never moved) and the flock descriptor; `depth` and
    /// `fd` are only touched by the thread holding the mutex, which is what makes this sound.
    private final class State: @unchecked Sendable {
        let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
            let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
            var attributes = pthread_mutexattr_t()
            pthread_mutexattr_init(&attributes)
            pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
            pthread_mutex_init(mutex, &attributes)
            pthread_mutexattr_destroy(&attributes)
            return mutex
        }()
        var depth = 0
        var fd: Int32 = -1
    }
    private static let state = State()

    static func with<T>(
        keyringPath: String, until deadline: ContinuousClock.Instant, _ body: () throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        let left = ContinuousClock.now.duration(to: deadline)
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let nanoseconds = Int(now.tv_nsec) + Int(max(0, left.components.attoseconds / 1_000_000_000))
        var until = timespec(
            tv_sec: now.tv_sec + Int(max(0, left.components.seconds)) + nanoseconds / 1_000_000_000,
            tv_nsec: nanoseconds % 1_000_000_000)
        guard pthread_mutex_timedlock(state.mutex, &until) == 0 else { throw .timedOut(seconds: 0) }
        defer { pthread_mutex_unlock(state.mutex) }
        if state.depth == 0 { state.fd = try acquire(keyringPath, until: deadline) }
        state.depth += 1
        defer {
            state.depth -= 1
            if state.depth == 0 {
                close(state.fd)  // closing releases the flock
                state.fd = -1
            }
        }
        return try body()
    }

    private static func acquire(_ keyringPath: String, until deadline: ContinuousClock.Instant) throws(KeyringError) -> Int32 {
        if let slash = keyringPath.lastIndex(of: "/"), slash != keyringPath.startIndex {
            makeDirectories(String(keyringPath[..<slash]))
        }
        let lockPath = keyringPath + ".lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw .keyringFileUnavailable(
                path: keyringPath, detail: "cannot open its lock file \(lockPath): \(String(cString: strerror(errno)))")
        }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                let reason = String(cString: strerror(errno))
                close(fd)
                throw .keyringFileUnavailable(path: keyringPath, detail: "cannot lock \(lockPath): \(reason)")
            }
            if ContinuousClock.now >= deadline {
                close(fd)
                throw .timedOut(seconds: 0)
            }
            usleep(2000)
        }
        return fd
    }

    /// As libsecret does before writing the file: the parents, private to the user.
    private static func makeDirectories(_ directory: String) {
        var info = stat()
        if stat(directory, &info) == 0 { return }
        if let slash = directory.lastIndex(of: "/"), slash != directory.startIndex { makeDirectories(String(directory[..<slash])) }
        mkdir(directory, 0o700)
    }
}
