internal import CLibSecret
import Dispatch
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// libsecret's file backend as a change source: an event of inotify on the keyring file
/// (`FileDirectoryWatch`) is the trigger, and a look reads the matching items through the one
/// snapshot (`FileKeyring.run`, `FileKeyringCache`). The file has no lock state and no service, so
/// a watch here reports created, changed and deleted only. Items are keyed by name (a digest of
/// the attributes: a changed attribute is a deleted item and a created one, as the file backend
/// stores it).
struct FileChangeSource: ChangeSource {
    let scope: ChangeScope
    let timeout: Duration

    func subscribe(_ fire: @escaping @Sendable (LookAgain) -> Void) throws(KeyringError) -> @Sendable () -> Void {
        let watch = try FileDirectoryWatch.start(FileKeyring.path) { fire(.look) }
        return { watch.stop() }
    }

    func firstLook() throws(KeyringError) -> ChangeSnapshot { try read() }

    /// A file that cannot be read now (mid-write by a program without the lock) is read at its next event.
    func look(after trigger: LookAgain, from last: ChangeSnapshot) throws(KeyringError) -> [ChangeSnapshot] { [try read()] }

    private func read() throws(KeyringError) -> ChangeSnapshot {
        let scope = self.scope
        return try FileKeyring.run(timeout: timeout, exclusive: false) { file throws(KeyringError) -> ChangeSnapshot in
            var seen = ChangeSnapshot()
            for item in try file.matching(scope.attributes) where scope.owns(item.keyringItem) {
                seen.items[item.name] = ChangeSnapshot.Entry(item: item.keyringItem, secretDigest: Digest.sha256Hex(Array(item.secret)))
            }
            return seen
        }
    }
}

/// Tells when libsecret's keyring file changed: inotify on the file's directory (a write renames
/// a new file over the old one, which a watch on the file itself would lose).
///
/// One thread per watch, in `poll` on the inotify descriptor and a pipe whose write end `stop`
/// closes; the thread closes the rest when it ends.
final class FileDirectoryWatch: Sendable {
    private let path: String
    private let inotify: Int32
    /// [read end, write end]: closing the write end ends the thread.
    private let wake: (Int32, Int32)
    /// Signalled by the thread once it closed its descriptors.
    private let ended = DispatchSemaphore(value: 0)

    private init(path: String, inotify: Int32, wake: (Int32, Int32)) {
        self.path = path
        self.inotify = inotify
        self.wake = wake
        Self.liveCount.add(1, ordering: .relaxed)
    }

    deinit { Self.liveCount.subtract(1, ordering: .relaxed) }

    /// How many file watches are alive: what a leak test counts (`LeakCounts`), exactly, instead of memory.
    static let liveCount = Atomic<Int>(0)

    /// Watches the directory of `path` and starts the thread, which calls `changed` after each
    /// burst of events that names the file; returns the watch, for `stop`.
    static func start(_ path: String, changed: @escaping @Sendable () -> Void) throws(KeyringError) -> FileDirectoryWatch {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) }.flatMap { $0.isEmpty ? "/" : $0 } ?? "."
        // libsecret makes the directory (0700) at its first write; made here, a watch can begin before that.
        _ = g_mkdir_with_parents(directory, 0o700)
        let inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard inotify >= 0 else {
            throw .keyringFileUnavailable(path: path, detail: "cannot watch it: " + String(cString: strerror(errno)))
        }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE)
        guard inotify_add_watch(inotify, directory, mask) >= 0 else {
            let detail = String(cString: strerror(errno))
            close(inotify)
            throw .keyringFileUnavailable(path: path, detail: "cannot watch its directory: " + detail)
        }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            close(inotify)
            throw .keyringFileUnavailable(path: path, detail: "cannot watch it: " + String(cString: strerror(errno)))
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let watch = FileDirectoryWatch(path: path, inotify: inotify, wake: (ends[0], ends[1]))
        guard Self.detach({ watch.run(changed) }) else {
            watch.closeAll()
            close(ends[1])
            throw .keyringFileUnavailable(path: path, detail: "cannot start the thread that watches it")
        }
        return watch
    }

    private func run(_ changed: @Sendable () -> Void) {
        defer {
            closeAll()
            ended.signal()
        }
        let name = path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var fds = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.0, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, -1)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 || fds[1].revents != 0 { return }
            var touched = false
            while true {
                let count = Glibc.read(inotify, &buffer, buffer.count)
                if count <= 0 { break }
                touched = touched || Self.names(name, in: buffer[0..<count])
            }
            if touched { changed() }
        }
    }

    /// Whether any inotify event in `events` names the file `name`.
    private static func names(_ name: String, in events: ArraySlice<UInt8>) -> Bool {
        let header = MemoryLayout<inotify_event>.size
        var offset = events.startIndex
        while offset + header <= events.endIndex {
            let length = events.withUnsafeBytes { raw in raw.loadUnaligned(fromByteOffset: offset - events.startIndex + 12, as: UInt32.self)
            }
            let start = offset + header
            let end = min(start + Int(length), events.endIndex)
            let bytes = events[start..<end].prefix { $0 != 0 }
            if String(decoding: bytes, as: UTF8.self) == name { return true }
            offset = end
        }
        return false
    }

    /// Closing the pipe's write end wakes the thread (POLLHUP), which closes the rest: no write that
    /// could meet a reader already gone. Waits (briefly: the thread only has to be scheduled) until it
    /// did, so a cancelled watch holds no descriptor once its task ends: 10,000 quick cycles otherwise
    /// outran the threads and met the per-user limit of 128 inotify instances.
    func stop() {
        close(wake.1)
        _ = ended.wait(timeout: .now() + .seconds(2))
    }

    private func closeAll() {
        close(inotify)
        close(wake.0)
    }

    /// Runs `body` on a new detached thread; false when none could be made.
    private static func detach(_ body: @escaping @Sendable () -> Void) -> Bool {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let made = pthread_create(
            &thread, nil,
            { box in
                let body = Unmanaged<Box>.fromOpaque(box!).takeRetainedValue().body
                body()
                return nil
            }, box)
        guard made == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            return false
        }
        pthread_detach(thread)
        return true
    }

    private final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
}
