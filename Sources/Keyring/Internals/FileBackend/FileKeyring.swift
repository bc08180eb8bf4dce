internal import CLibSecret
internal import KeyringShim
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

/// One item of the file keyring, decrypted: libsecret's file backend keeps no content type and no
/// object path, so an item is named by its exact attributes (the backend holds one item per set).
struct FileItem {
    let attributes: [String: String]
    let label: String
    let secret: Data
    let created: UInt64
    let modified: UInt64

    /// `file:` and a digest of the attributes: stable across processes, unique within the file.
    var name: String { FileKeyring.itemName(attributes) }

    var keyringItem: KeyringItem {
        KeyringItem(
            objectPath: name, attributes: attributes, label: label, isLocked: false,
            created: created == 0 ? nil : Date(timeIntervalSince1970: Double(created)),
            modified: modified == 0 ? nil : Date(timeIntervalSince1970: Double(modified)))
    }

    func includes(_ wanted: [String: String]) -> Bool {
        wanted.allSatisfy { attributes[$0.key] == $0.value }
    }
}

/// One public operation on libsecret's file backend: the file's snapshot (libsecret's backend that
/// read it, its key and items; under the file lock for changes), the operation's cancellable, and
/// the file's path.
///
/// The snapshot is this process's own, not libsecret's per-process backend: that one reads the file
/// once, so it would miss other processes' items and, when it writes, drop them. `FileKeyringCache`
/// keeps it only while the file is provably unchanged; after another process's write it loads the
/// file again (with the key derived before when the salt and iteration count are the same).
///
/// One change, one write: `store` and the removals edit the backend's collection in memory, and
/// `run` writes the file once when the body returns (GLib writes a temporary file beside it and
/// renames it over). A process killed mid-change leaves the file as it was or as the whole change left it.
/// Copyable so that it can be `LocalKeyring`'s `Items` (an associated type cannot suppress
/// Copyable); valid only inside `run`, which never lets it escape.
struct FileKeyring {
    let snapshot: FileKeyringSnapshot
    let cancellable: UnsafeMutablePointer<GCancellable>
    let path: String
    /// The file's bytes when this operation began (nil: there was none), to put back after a failed write.
    let original: [UInt8]?
    /// The change made so far, not yet written.
    let pending = PendingChange()

    var backend: OpaquePointer { snapshot.backend }

    /// Whether the collection in memory differs from the file. A class: a borrowed `FileKeyring` is read-only.
    final class PendingChange {
        var edited = false
    }

    /// The keyring file libsecret's file backend uses in this environment.
    static var path: String {
        if let test = getenv("SECRET_FILE_TEST_PATH"), test.pointee != 0 { return String(cString: test) }
        return String(cString: g_get_user_data_dir()) + "/keyrings/default.keyring"
    }

    /// libsecret's automatic choice inside a sandbox: the file backend when `/.flatpak-info`
    /// exists (or `SNAP_NAME` is set) and the Secret portal answers with the version it speaks.
    /// Decided once per process, as libsecret decides once (the portal check is a bus round trip).
    static let sandboxUsesFileBackend: Bool = {
        guard access("/.flatpak-info", F_OK) == 0 || getenv("SNAP_NAME") != nil else { return false }
        return kr_secret_portal_usable() != 0
    }()

    static func itemName(_ attributes: [String: String]) -> String {
        let canonical = attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "\u{0}")
        return "file:" + Digest.sha256Hex(Array(canonical.utf8)).prefix(32)
    }

    /// Runs `body` on the file keyring as it is now, within `timeout`; an enclosing `OperationCancellation`
    /// cancels it. With `exclusive`, the whole operation holds the file lock, so a read-modify-write
    /// never loses another process's change.
    static func run<T>(
        timeout: Duration, exclusive: Bool, _ body: (borrowing FileKeyring) throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        let deadline = CallDeadline(timeout: timeout)
        let path = Self.path
        return try Deadline.run(until: deadline) {
            cancellation throws(KeyringError) -> T in
            func operate() throws(KeyringError) -> T {
                try FileKeyringCache.shared.with(path: path, until: deadline, cancellation: cancellation) {
                    snapshot throws(KeyringError) -> T in
                    let keyring = FileKeyring(snapshot: snapshot, cancellable: cancellation.pointer, path: path, original: snapshot.bytes)
                    let result = try body(keyring)
                    try keyring.writeChange()
                    return result
                }
            }
            func locked(_ reached: inout Bool) throws(KeyringError) -> T {
                try FileKeyringLock.with(keyringPath: path, until: deadline, isCancelled: { cancellation.isCancelled }) {
                    () throws(KeyringError) in
                    reached = true
                    return try operate()
                }
            }
            var reached = false
            if exclusive { return try locked(&reached) }
            do throws(KeyringError) {
                return try operate()
            } catch {
                // GLib writes a new keyring file in place (it replaces by rename only a file that exists), so a
                // read without the lock can see one that another process's first change is still writing:
                // read again once that change is done. A file still damaged then, or no lock to take, is damaged.
                guard case .keyringFileDamaged = error else { throw error }
                do throws(KeyringError) {
                    return try locked(&reached)
                } catch let retried {
                    switch retried {
                    case .cancelled, .timedOut: throw retried
                    default: throw reached ? retried : error
                    }
                }
            }
        }
    }

    /// Runs a libsecret call that writes the file. GLib 2.74 under libsecret 0.20.5 (seen with strace)
    /// checks the etag libsecret read (another writer since: `WRONG_ETAG`), writes and syncs a
    /// temporary `.goutputstream-*` beside the file, hard-links the old file to `<file>~` and renames
    /// the temporary one over. So a failed write normally leaves the file untouched, or holding
    /// another libsecret user's write, which must stay. Only when it cannot make the temporary file
    /// does GLib rewrite the file in place, and a failure then can leave it partial or missing.
    /// A copy of the file is saved beside it first, and after a failure put back (a rename, which
    /// needs no space on a full disk) only when the file is no longer a whole keyring. When even
    /// the copy cannot be written, the change is refused before the keyring file is touched.
    /// The copy is synced only when GLib will rewrite in place (a directory it cannot create files in):
    /// otherwise the old file itself stays whole until a synced new one is renamed over it, so a
    /// power loss cannot take both, and the copy only has to outlive a killed process (the page cache does).
    private func writing(_ body: (UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> gboolean) throws(KeyringError) {
        let saved = path + ".before-change"
        if let original {
            let directory = path.lastIndex(of: "/").map { String(path[..<$0]) }.flatMap { $0.isEmpty ? "/" : $0 } ?? "."
            if let failure = Self.writeSynced(original, to: saved, sync: access(directory, W_OK | X_OK) != 0) {
                unlink(saved)
                throw .keyringFileUnavailable(path: path, detail: failure)
            }
            KillPoint.passed()
        }
        defer { unlink(saved) }
        do throws(KeyringError) {
            _ = try throwingGError(.file(path: path), body)
        } catch {
            let now = Self.contents(of: path)
            // Whole (untouched, ours or another writer's): leave it. Partial, or gone when it was there: put it back.
            if let now, kr_keyring_file_check(now, gsize(now.count)) == KR_FILE_OK { throw error }
            if original == nil {
                if now != nil { unlink(path) }  // there was no file: a partial one must not read as damaged
            } else if rename(saved, path) != 0 {
                restoreOriginal()
            }
            throw error
        }
        KillPoint.passed()
    }

    /// Writes `bytes` to a new file at `target`, synced when `sync`; the error text, or nil.
    private static func writeSynced(_ bytes: [UInt8], to target: String, sync: Bool) -> String? {
        let fd = Glibc.open(target, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                return String(cString: strerror(errno))
            }
            written += count
        }
        return !sync || fsync(fd) == 0 ? nil : String(cString: strerror(errno))
    }

    /// Puts back what was read when the saved copy could not be renamed over a partial file.
    private func restoreOriginal() {
        guard let original else { return }
        // The backup GLib made before rewriting in place holds what was read: renaming it back needs no space.
        if let backup = Self.contents(of: path + "~"), backup == original, rename(path + "~", path) == 0 { return }
        let temporary = path + ".restore"
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let written = original.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        if written == original.count && synced && rename(temporary, path) == 0 { return }
        unlink(temporary)
        // No room even for that: the backup GLib made of the file before may still hold a whole one.
        if let backup = Self.contents(of: path + "~"), kr_keyring_file_check(backup, gsize(backup.count)) == KR_FILE_OK {
            rename(path + "~", path)
        }
    }

    /// The file's bytes as read, even when another writer changed it meanwhile; nil when unreadable.
    private static func contents(of path: String) -> [UInt8]? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return try? FileKeyringSnapshot.read(fd, path: path).bytes
    }

    /// Every item, decrypted, oldest first: the snapshot's, or the collection's once this operation edited it.
    func items() throws(KeyringError) -> [FileItem] {
        pending.edited ? try snapshot.decrypt(cancellable: cancellable) : snapshot.items
    }

    /// The items whose attributes include `attributes`, oldest first.
    func matching(_ attributes: [String: String]) throws(KeyringError) -> [FileItem] {
        try items().filter { $0.includes(attributes) }
    }

    /// The backend's collection, which a change edits in memory.
    private func collection() throws(KeyringError) -> UnsafeMutablePointer<GObject> {
        guard let collection = kr_file_backend_collection(backend) else {
            throw .keyringFileUnavailable(
                path: path, detail: "this libsecret's file backend is built differently: it cannot be changed in one write")
        }
        return collection
    }

    /// Writes the change made in memory, once; nothing when nothing changed.
    private func writeChange() throws(KeyringError) {
        guard pending.edited else { return }
        let collection = try collection()
        pending.edited = false
        try writing { kr_file_collection_write(collection, cancellable, $0) }
        snapshot.wrote(cancellable: cancellable)
    }

    /// Stores under exactly `attributes`: the item with exactly these gets the new label and secret
    /// (keeping its creation time); any other item is left alone. Written when the operation ends.
    func store(_ attributes: [String: String], label: String, secret: Data) throws(KeyringError) {
        let collection = try collection()
        let table = kr_string_table_new()
        defer { g_hash_table_unref(table) }
        for (name, value) in attributes { kr_string_table_insert(table, name, value) }
        let value: OpaquePointer = secret.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, raw.count > 0 else { return secret_value_new("", 0, "text/plain") }
            return secret_value_new(base.assumingMemoryBound(to: CChar.self), raw.count, "text/plain")
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        pending.edited = true
        _ = try throwingGError(.file(path: path)) { kr_file_collection_replace(collection, table, label, value, $0) }
    }

    /// Removes every item whose attributes include `attributes` from the collection in memory.
    private func clear(_ attributes: [String: String]) throws(KeyringError) {
        let collection = try collection()
        let table = kr_string_table_new()
        defer { g_hash_table_unref(table) }
        for (name, value) in attributes { kr_string_table_insert(table, name, value) }
        pending.edited = true
        _ = try throwingGError(.file(path: path)) { kr_file_collection_clear(collection, table, $0) }
    }

    /// Removes exactly the item whose attributes are `attributes`. libsecret's clear also removes
    /// items that merely include them, so those are stored again (their creation time restarts),
    /// in the same change: the file never holds the state in between.
    func remove(exactly attributes: [String: String]) throws(KeyringError) {
        let before = try matching(attributes)
        guard before.contains(where: { $0.attributes == attributes }) else { return }
        try clear(attributes)
        try requireGone(attributes, exactly: true)
        for other in before where other.attributes != attributes {
            try store(other.attributes, label: other.label, secret: other.secret)
        }
    }

    /// libsecret's clear matches the stored attribute hashes, the reads here the decrypted
    /// attributes; no MAC covers the hashes, so a damaged one leaves the item in place while the
    /// clear reports success. A removal that did not remove is a damaged file, never a success.
    private func requireGone(_ attributes: [String: String], exactly: Bool) throws(KeyringError) {
        let left = try matching(attributes).filter { !exactly || $0.attributes == attributes }
        if !left.isEmpty {
            throw .keyringFileDamaged(
                path: path, detail: "an item's stored attribute hashes do not match its attributes, so it cannot be removed")
        }
    }

    /// Removes every item whose attributes include `attributes`; returns how many.
    func removeAll(_ attributes: [String: String]) throws(KeyringError) -> Int {
        let count = try matching(attributes).count
        guard count > 0 else { return 0 }
        try clear(attributes)
        try requireGone(attributes, exactly: false)
        return count
    }
}

/// A test hook in debug builds only (a shipped app never reads the variable), inert unless
/// `KEYRING_TEST_KILL_AFTER_STEP=N` is set: the process raises SIGKILL right after its N-th durable
/// step of a file-keyring change (a step: the `.before-change` copy saved, or the keyring file
/// written), so tests can kill a change at each point it can stop.
enum KillPoint {
    #if DEBUG
    private static let limit: Int? = getenv("KEYRING_TEST_KILL_AFTER_STEP").flatMap { Int(String(cString: $0)) }
    private static let steps = Atomic<Int>(0)
    #endif

    @inline(__always)
    static func passed() {
        #if DEBUG
        guard let limit else { return }
        if steps.add(1, ordering: .sequentiallyConsistent).newValue == limit { raise(SIGKILL) }
        #endif
    }
}

extension KeyringError {
    /// Maps a GError from libsecret's file backend (without freeing it); reached through
    /// `throwingGError(.file(path:))`, the one way to call with a GError slot.
    init(fileBackendError error: UnsafeMutablePointer<GError>, path: String) {
        let domain = error.pointee.domain
        let code = error.pointee.code
        let message = error.pointee.message.map { String(cString: $0) } ?? ""
        if domain == kr_io_error_quark() && code == Int32(G_IO_ERROR_CANCELLED.rawValue) {
            self = .cancelled
        } else if domain == kr_io_error_quark() && code == Int32(G_IO_ERROR_WRONG_ETAG.rawValue) {
            // libsecret writes only over the file it read: another program (no lock of ours) wrote it since.
            self = .keyringFileUnavailable(
                path: path, detail: "another program changed it during this change, so nothing was written; try again")
        } else if domain == kr_secret_error_quark() && (message.contains("mac") || message.contains("decrypt")) {
            // Every item's MAC is keyed by the master key: a failed check is the wrong key (or a damaged item).
            self = .wrongKey(path: path)
        } else if domain == kr_secret_error_quark() && (message.contains("portal") || message.contains("derive key")) {
            // libsecret's "invalid password returned from portal", "couldn't derive key": the file is fine.
            self = .keyringFileUnavailable(path: path, detail: message)
        } else if domain == kr_secret_error_quark() {
            self = .keyringFileDamaged(path: path, detail: message)
        } else if domain == kr_io_error_quark() && code == Int32(G_IO_ERROR_INVALID_ARGUMENT.rawValue)
            && message.contains("not retrievable")
        {
            self = .keyringFileUnavailable(
                path: path,
                detail: "no key for it: outside a Flatpak sandbox with the Secret portal, set SECRET_FILE_TEST_PASSWORD")
        } else {
            self = .keyringFileUnavailable(path: path, detail: message)
        }
    }
}
