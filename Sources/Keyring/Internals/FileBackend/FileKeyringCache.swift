internal import CLibSecret
internal import KeyringShim

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The keyring file as one `stat` sees it. Any change by any process (a write in place, one of the
/// same size, a file renamed over it, a chmod) sets the file's ctime, and a write its mtime, to the
/// file system's clock of that moment; so a change made after the file's ctime tick changes one of these.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: Int64  // nanoseconds since the epoch (st_mtim)
    let changed: Int64  // nanoseconds since the epoch (st_ctim)

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec)
        changed = Int64(info.st_ctim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_ctim.tv_nsec)
    }

    /// How far before a read the file's ctime must lie for `stat` alone to prove it unchanged later.
    /// File systems stamp from a coarse clock (a kernel tick; 1 s or 2 s on some), so a change within
    /// the tick of the last one can leave every field as it was. A change made after a read is stamped
    /// no earlier than the read's time minus one tick; a ctime older than that by a margin that covers
    /// the coarsest common tick (2 s) and a file-system clock a little behind ours cannot be a later
    /// change's. Younger files are compared byte for byte instead (a few microseconds for a keyring file).
    /// 3 s: a second of slack over that tick, for the coarse clock's lag.
    static let settleMargin: Int64 = 3_000_000_000

    /// Whether `stat` alone proves that a file with this identity is unchanged since `readStart`
    /// (CLOCK_REALTIME in nanoseconds, taken before the read).
    func isSettled(readStart: Int64) -> Bool { changed < readStart - Self.settleMargin }

    /// CLOCK_REALTIME in nanoseconds: the clock file systems stamp from.
    static func now() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
    }
}

/// What the file backend's operations need, from one read of the keyring file: libsecret's backend
/// (its collection holds the file's items and the key derived from the password), the items
/// decrypted, the file's bytes and identity. Kept by `FileKeyringCache` while the file is provably
/// unchanged, so a warm read is one `stat` and a change derives no key again.
final class FileKeyringSnapshot: @unchecked Sendable {
    // Sound as Sendable: made, read and changed only with `FileKeyringCache.shared.lock` held (the
    // libsecret backend, which is not thread-safe, too); freed when the last holder lets it go.
    let backend: OpaquePointer
    let path: String
    /// SHA-256 of SECRET_FILE_TEST_PASSWORD (nil: the key comes from the Secret portal, one per process).
    let password: String?
    /// The file as read (nil identity and bytes: there was none).
    private(set) var identity: FileIdentity?
    private(set) var bytes: [UInt8]?
    /// Every item, decrypted, oldest first: what the collection held when the file was read.
    private(set) var items: [FileItem] = []
    /// Whether `stat` alone proves the file unchanged (see `FileIdentity.settleMargin`).
    private var settled = false
    /// Whether the collection holds exactly `bytes`, so that the snapshot may serve later operations.
    private(set) var keepable = false

    private init(backend: OpaquePointer, path: String, password: String?, identity: FileIdentity?, bytes: [UInt8]?) {
        self.backend = backend
        self.path = path
        self.password = password
        self.identity = identity
        self.bytes = bytes
    }

    deinit { g_object_unref(UnsafeMutableRawPointer(backend)) }

    /// The key's source in this environment, as the cache compares it.
    static func passwordDigest() -> String? {
        guard let password = getenv("SECRET_FILE_TEST_PASSWORD") else { return nil }
        return Digest.sha256Hex(Array(String(cString: password).utf8))
    }

    /// Reads the file and has libsecret read it and derive its key: the typed errors for an
    /// unreadable, damaged or truncated file come from here, a wrong key's from decrypting every item.
    static func read(path: String, cancellable: UnsafeMutablePointer<GCancellable>) throws(KeyringError) -> FileKeyringSnapshot {
        let start = FileIdentity.now()
        let (identity, bytes) = try readChecked(path: path)
        let backend = try throwingGError(.file(path: path)) { kr_file_backend_open(cancellable, $0) }
        guard let backend else { throw .keyringFileUnavailable(path: path, detail: "libsecret opened no file backend") }
        let snapshot = FileKeyringSnapshot(backend: backend, path: path, password: passwordDigest(), identity: identity, bytes: bytes)
        snapshot.items = try snapshot.decrypt(cancellable: cancellable)  // every item's MAC checked: a wrong key never reads as empty
        // libsecret read the file again after us: keep only when it read the very bytes we did.
        snapshot.keepable = snapshot.holds(bytes)
        snapshot.settled = identity?.isSettled(readStart: start) ?? true
        return snapshot
    }

    /// Whether the file is provably what this snapshot read: the same identity and, unless that
    /// is settled, the same bytes. Never throws: anything unclear reads again.
    func isCurrent(path: String) -> Bool {
        guard keepable, path == self.path, Self.passwordDigest() == password else { return false }
        // open + fstat rather than stat: on NFS an open revalidates the attribute cache (close-to-open
        // consistency), so another host's write is seen; a bare stat may answer from a cache up to a minute old.
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return errno == ENOENT && identity == nil && bytes == nil }
        var info = stat()
        let stated = fstat(fd, &info) == 0
        close(fd)
        guard stated else { return false }
        guard let identity, FileIdentity(info) == identity else { return false }
        if settled { return true }
        let start = FileIdentity.now()
        guard let (now, bytes) = Self.contents(path: path), now == identity, bytes == self.bytes else { return false }
        settled = identity.isSettled(readStart: start)
        return true
    }

    /// After this process wrote the collection: the file as written becomes the snapshot, so the next
    /// operation stays warm. Not kept when the file read back is not what the collection holds (another
    /// program, which takes no file lock, wrote after us) or cannot be read. Never throws: the change
    /// is on disk, and a deadline that fires now must not report it as failed.
    func wrote(cancellable: UnsafeMutablePointer<GCancellable>) {
        keepable = false
        let start = FileIdentity.now()
        guard let (identity, bytes) = Self.contents(path: path), kr_keyring_file_check(bytes, gsize(bytes.count)) == KR_FILE_OK,
            holds(bytes)
        else { return }
        do { items = try decrypt(cancellable: cancellable) } catch { return }
        self.identity = identity
        self.bytes = bytes
        settled = identity.isSettled(readStart: start)
        keepable = true
    }

    /// After another process changed the file but kept its salt and iteration count (libsecret's own
    /// writes keep both): loads the file into the collection with the key derived before, so no key is
    /// derived again. False when it cannot (another salt, no file, an unreadable or damaged one, a
    /// libsecret laid out otherwise, a change during the load): then a fresh read, with its typed errors.
    func reload(path: String, cancellable: UnsafeMutablePointer<GCancellable>) -> Bool {
        guard path == self.path, Self.passwordDigest() == password, let collection = kr_file_backend_collection(backend) else {
            return false
        }
        let start = FileIdentity.now()
        guard let (identity, bytes) = Self.contents(path: path), kr_keyring_file_check(bytes, gsize(bytes.count)) == KR_FILE_OK,
            let etag = kr_file_etag(path)
        else { return false }
        defer { g_free(etag) }
        // The etag must be the read file's: a change between the read and the query moves the identity.
        var info = stat()
        guard stat(path, &info) == 0, FileIdentity(info) == identity else { return false }
        keepable = false
        let seconds = guint64(clamping: identity.modified >= 0 ? identity.modified / 1_000_000_000 : 0)
        guard kr_file_collection_reload(collection, bytes, gsize(bytes.count), etag, seconds) != 0 else { return false }
        do throws(KeyringError) {
            items = try decrypt(cancellable: cancellable)
        } catch {
            return false  // a damaged item: the fresh read that follows reports it as before
        }
        guard holds(bytes) else { return false }
        self.identity = identity
        self.bytes = bytes
        settled = identity.isSettled(readStart: start)
        keepable = true
        return true
    }

    /// Whether the collection holds exactly the items of `bytes` (nil: no file, an empty collection).
    private func holds(_ bytes: [UInt8]?) -> Bool {
        guard let collection = kr_file_backend_collection(backend) else { return false }
        guard let bytes else { return items.isEmpty }
        return kr_file_collection_holds(collection, bytes, gsize(bytes.count)) != 0
    }

    /// Every item in the collection, decrypted, oldest first.
    func decrypt(cancellable: UnsafeMutablePointer<GCancellable>) throws(KeyringError) -> [FileItem] {
        let table = kr_string_table_new()
        defer { g_hash_table_unref(table) }
        let list = try throwingGError(.file(path: path)) { kr_file_backend_search(backend, table, cancellable, $0) }
        defer { kr_object_list_free(list) }
        var result: [FileItem] = []
        var node = list
        while let current = node {
            let item = kr_list_retrievable(current)
            let value = try throwingGError(.file(path: path)) { secret_retrievable_retrieve_secret_sync(item, cancellable, $0) }
            defer { if let value { secret_value_unref(UnsafeMutableRawPointer(value)) } }
            var length = 0
            let bytes = value.flatMap { secret_value_get($0, &length) }
            let attributes = secret_retrievable_get_attributes(item)
            defer { if let attributes { g_hash_table_unref(attributes) } }
            let label = secret_retrievable_get_label(item)
            defer { g_free(label) }
            result.append(
                FileItem(
                    attributes: ServiceCall.dictionary(attributes), label: label.map { String(cString: $0) } ?? "",
                    secret: bytes.map { Data(bytes: $0, count: length) } ?? Data(),
                    created: UInt64(secret_retrievable_get_created(item)), modified: UInt64(secret_retrievable_get_modified(item))))
            node = current.pointee.next
        }
        // Each item's KeyringItem once (its name is a digest), not once per comparison.
        return result.map { ($0, $0.keyringItem) }.sorted { ItemOrder.standard.precedes($0.1, $1.1) }.map(\.0)
    }

    /// The file's identity and bytes, checked (libsecret 0.20 aborts on some truncated files); nil
    /// for no file.
    private static func readChecked(path: String) throws(KeyringError) -> (FileIdentity?, [UInt8]?) {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return (nil, nil) }
            throw .keyringFileUnavailable(path: path, detail: String(cString: strerror(errno)))
        }
        defer { close(fd) }
        let (identity, bytes) = try read(fd, path: path)
        // A process killed mid-change leaves the copy it saved first: point the user at it.
        let saved = access(path + ".before-change", F_OK) == 0 ? "; the copy saved before the last change is \(path).before-change" : ""
        switch kr_keyring_file_check(bytes, gsize(bytes.count)) {
        case KR_FILE_OK: break
        case KR_FILE_BAD_HEADER: throw .keyringFileDamaged(path: path, detail: "it is not a libsecret keyring file" + saved)
        case KR_FILE_BAD_VERSION: throw .keyringFileDamaged(path: path, detail: "its format version is not 1.0" + saved)
        default: throw .keyringFileDamaged(path: path, detail: "it is truncated or its structure is damaged" + saved)
        }
        return (identity, bytes)
    }

    /// The file's identity and bytes, or nil when it cannot be read or changed while being read.
    private static func contents(path: String) -> (FileIdentity, [UInt8])? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        do throws(KeyringError) {
            let (identity, bytes) = try read(fd, path: path)
            return identity.map { ($0, bytes) }
        } catch {
            return nil
        }
    }

    /// All of `fd`'s bytes, and its identity when a change in place during the read did not move it
    /// (else nil). The one reader of a keyring file's bytes.
    static func read(_ fd: Int32, path: String) throws(KeyringError) -> (identity: FileIdentity?, bytes: [UInt8]) {
        var before = stat()
        guard fstat(fd, &before) == 0 else { throw .keyringFileUnavailable(path: path, detail: String(cString: strerror(errno))) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(before.st_size))
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = Glibc.read(fd, &chunk, chunk.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw .keyringFileUnavailable(path: path, detail: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        var after = stat()
        guard fstat(fd, &after) == 0 else { throw .keyringFileUnavailable(path: path, detail: String(cString: strerror(errno))) }
        let identity = FileIdentity(before)
        return (identity == FileIdentity(after) && Int64(bytes.count) == identity.size ? identity : nil, bytes)
    }
}

/// The one snapshot of the keyring file this process keeps, and the lock that serializes the file
/// backend's operations in this process (libsecret's backend is not thread-safe).
final class FileKeyringCache: @unchecked Sendable {
    // Sound as Sendable: `kept` is only read or written inside `lock.with`.
    static let shared = FileKeyringCache()
    private let lock = CallLock()
    private var kept: FileKeyringSnapshot?

    /// Runs `body` on the kept snapshot when the file is provably unchanged, else on the file loaded
    /// into it again with its key (the same salt and iteration count), else on a fresh read. A failure
    /// drops it: the collection may hold an unwritten edit, or the file an error that must show again.
    func with<T>(
        path: String, until deadline: CallDeadline, cancellation: Cancellation,
        _ body: (FileKeyringSnapshot) throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        try lock.with(deadline, cancellation: cancellation) { () throws(KeyringError) -> T in
            let snapshot: FileKeyringSnapshot
            if let kept, kept.isCurrent(path: path) || kept.reload(path: path, cancellable: cancellation.pointer) {
                snapshot = kept
            } else {
                kept = nil
                snapshot = try FileKeyringSnapshot.read(path: path, cancellable: cancellation.pointer)
            }
            do throws(KeyringError) {
                let result = try body(snapshot)
                kept = snapshot  // even when not `keepable`: its key can load the file again
                return result
            } catch {
                kept = nil
                throw error
            }
        }
    }
}
