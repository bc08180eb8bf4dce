import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// What the backup file holds: the identifier and how it came to be, with a checksum that
/// catches truncation and stray edits.
struct BackupRecord: Codable, Equatable {
    var format = 1
    var scope: String
    var name: String
    var identifier: String
    var created: Date
    var origin: String
    var checksum: String

    init(scope: IdentifierScope, identifier: String, created: Date, origin: String) {
        self.scope = scope.kind
        self.name = scope.name
        self.identifier = identifier
        // Milliseconds: a pending reset compares creation times with its own, which can be close.
        self.created = Date(timeIntervalSince1970: (created.timeIntervalSince1970 * 1000).rounded(.down) / 1000)
        self.origin = origin
        self.checksum = Self.checksum(identifier)
    }

    static func checksum(_ identifier: String) -> String {
        Digest.sha256Hex(Array(identifier.utf8))
    }
}

/// A reset that could not reach the keyring yet.
struct PendingReset: Equatable {
    /// The checksum of the identifier it removes, when that was known.
    var voidChecksum: String?
    /// When it was made; keyring items created later are newer identifiers, never void.
    var time: Date?
}

/// The backup file's state as read. Only `.absent` counts as absent.
enum BackupState: Equatable {
    case present(BackupRecord)
    case absent
    /// Bad content, or something planted at the path; already moved aside to `quarantinedAs`.
    /// `born` is when the file was made (``BackupFile/writtenWhole(_:)``): a reset made later voids it.
    case corrupt(reason: String, quarantinedAs: String?, born: Date?)
    /// Exists but cannot be read (permissions, I/O): not absent.
    case unreadable(reason: String)
}

/// The private backup file: 0600 in a 0700 directory, written atomically, never through a symlink.
struct BackupFile: Sendable {
    static let maximumSize = 64 * 1024

    let directory: String
    let path: String
    let scope: IdentifierScope

    let fileName: String
    /// True for the library's own per-scope directory.
    let isStandard: Bool
    /// Called after each change that would survive a kill (a rename or removal here, the
    /// keyring-seen marker), with its name: the event-order tests stop the world there. Nil in use.
    var durableStep: (@Sendable (String) -> Void)?

    /// A backup in `directory`. The standard directory is the scope's own, so the file is
    /// `identifier`; a directory the caller chose may hold both scopes, so a vendor's file is
    /// `vendor-identifier` there.
    init(directory: String, scope: IdentifierScope, isStandard: Bool = false) {
        self.directory = directory
        self.scope = scope
        self.isStandard = isStandard
        self.fileName = isStandard || scope.kind == "app" ? "identifier" : "vendor-identifier"
        self.path = directory + "/" + fileName
    }

    /// `$XDG_STATE_HOME/keyring-identity/<kind>/<name>` (XDG_STATE_HOME defaults to
    /// `~/.local/state`): the library's own directory, never another program's.
    static func defaultDirectory(for scope: IdentifierScope) -> String {
        StateDirectories.libraryStateDirectory() + "/" + scope.kind + "/" + scope.name
    }

    /// Reads and validates the file. With `quarantine`, bad content is moved aside; without it
    /// (read-only runs such as `show`), it is only reported.
    func read(quarantine: Bool = true) -> BackupState {
        let moveAside = quarantine
        // The directory itself must not be a symlink either: reading through one could serve
        // another scope's or another user's file.
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if directoryFD < 0 {
            let code = errno
            switch code {
            case ENOENT: return .absent
            case ELOOP, ENOTDIR:
                return .unreadable(reason: "its directory \(directory) is a symlink or not a directory; move it aside")
            default: return .unreadable(reason: Errno.text(code))
            }
        }
        defer { close(directoryFD) }
        var directoryInfo = stat()
        if fstat(directoryFD, &directoryInfo) == 0, directoryInfo.st_uid != geteuid() {
            return .unreadable(reason: "its directory \(directory) is owned by another user; move it aside")
        }
        let fd = openat(directoryFD, fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 {
            let code = errno
            switch code {
            case ENOENT: return .absent
            case ELOOP: return self.quarantine(moving: moveAside, because: "a symlink was planted at its path")
            default: return .unreadable(reason: Errno.text(code))
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .unreadable(reason: Errno.text(errno)) }
        if (info.st_mode & S_IFMT) != S_IFREG { return self.quarantine(moving: moveAside, because: "it is not a regular file") }
        if info.st_uid != geteuid() { return self.quarantine(moving: moveAside, because: "it is owned by another user") }
        if info.st_size > Self.maximumSize {
            return self.quarantine(moving: moveAside, because: "it is \(info.st_size) bytes, over the \(Self.maximumSize)-byte limit")
        }
        let data: Data
        switch FileReading.readAll(fd, limit: Self.maximumSize) {
        case .success(let read): data = read
        case .failure(let failure): return .unreadable(reason: failure.text)
        }
        if data.count > Self.maximumSize { return self.quarantine(moving: moveAside, because: "it grew past the size limit") }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        guard let record = try? decoder.decode(BackupRecord.self, from: data) else {
            return self.quarantine(moving: moveAside, because: data.isEmpty ? "it is empty" : "it is not a valid backup record")
        }
        guard record.format == 1, record.scope == scope.kind, record.name == scope.name else {
            return self.quarantine(moving: moveAside, because: "it belongs to another scope or format")
        }
        if IdentifierText.problem(with: record.identifier) != nil || record.checksum != BackupRecord.checksum(record.identifier) {
            return self.quarantine(moving: moveAside, because: "its identifier fails its checksum")
        }
        return .present(record)
    }

    /// Writes atomically: a new 0600 temp file, fsync, rename over the old one, fsync the directory.
    func write(_ record: BackupRecord) throws(IdentityError) {
        try ensureDirectory()
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        guard var data = try? encoder.encode(record) else { throw unwritable("the record could not be encoded") }
        data.append(UInt8(ascii: "\n"))
        try replaceAtomically(path, with: data)
    }

    /// Replaces `target` with `data` so that a reader (or a process killed mid-way) sees the old
    /// file or the whole new one, never a part.
    private func replaceAtomically(_ target: String, with data: Data) throws(IdentityError) {
        removeStaleTemporaries(of: target)
        var randomSuffix = SystemRandomNumberGenerator()
        let temporary = "\(target).tmp-\(getpid())-\(UInt32.random(in: .min ... .max, using: &randomSuffix))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw unwritable(Errno.text(errno)) }
        var written = 0
        let failure: Int32? = data.withUnsafeBytes { raw -> Int32? in
            while written < raw.count {
                let count = Glibc.write(fd, raw.baseAddress! + written, raw.count - written)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                written += count
            }
            return fsync(fd) == 0 ? nil : errno
        }
        close(fd)
        if let failure {
            unlink(temporary)
            throw unwritable(Errno.text(failure))
        }
        guard rename(temporary, target) == 0 else {
            let code = errno
            unlink(temporary)
            throw unwritable(Errno.text(code))
        }
        durableStep?("write " + target.lastComponent)
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            fsync(directoryFD)
            close(directoryFD)
        }
    }

    /// Deletes `target`'s temp files left by writers that died mid-write (their pid no longer
    /// exists). A live writer's file, or one whose pid was reused, is left alone.
    func removeStaleTemporaries(of target: String) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        let prefix = target.lastComponent + ".tmp-"
        for name in entries where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count).prefix { $0 != "-" }), pid > 0 else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { unlink(directory + "/" + name) }
        }
    }

    /// Removes the backup; an absent file is fine.
    func delete() throws(IdentityError) {
        if unlink(path) == 0 { durableStep?("remove backup") } else if errno != ENOENT { throw unwritable(Errno.text(errno)) }
    }

    /// Creates the directory 0700 (and missing parents), refusing a symlink or another owner.
    func ensureDirectory() throws(IdentityError) {
        do { try StateDirectories.makePrivateDirectory(directory) } catch { throw unwritable(error.reason) }
    }

    private func quarantine(moving: Bool, because reason: String) -> BackupState {
        let born = Self.writtenWhole(path)
        guard moving else { return .corrupt(reason: reason, quarantinedAs: nil, born: born) }
        let target = "\(path)\(Self.quarantineMarker)\(Int(Date().timeIntervalSince1970))-\(getpid())"
        let moved = rename(path, target) == 0
        if moved { durableStep?("quarantine") }
        return .corrupt(reason: reason, quarantinedAs: moved ? target : nil, born: born)
    }

    /// When the content at `path` was last written whole. Every write here makes a new file
    /// (temp file, then rename), so that is the file's birth; damage in place (truncation, a
    /// disk fault) keeps it. Where the filesystem records no birth, the last modification stands
    /// in, which damage moves later: such a copy then counts as written after a reset it predates.
    static func writtenWhole(_ path: String) -> Date? {
        FileTimes.bornOrModified(path)
    }

    static let quarantineMarker = ".corrupt-"

    /// Removes the backups moved aside earlier: a reset means the user chose to start over.
    /// - Parameter before: remove only copies written before this time (``writtenWhole(_:)``: those
    ///   of the identifiers a reset at that time voided); nil removes them all.
    func removeQuarantinedFiles(writtenBefore before: Date? = nil) {
        for file in quarantinedFiles() {
            if let before {
                guard let written = Self.writtenWhole(file), written < before else { continue }
            }
            if unlink(file) == 0 { durableStep?("remove quarantined copy") }
        }
    }

    /// `quarantinedFiles()`, each with when it was written (``writtenWhole(_:)``).
    func quarantinedCopies() -> [Decision.QuarantinedCopy] {
        quarantinedFiles().map { .init(path: $0, written: Self.writtenWhole($0)) }
    }

    /// Backups moved aside earlier. While any exists, an unreachable keyring is not proof of
    /// absence: the lost backup may have held the identifier.
    func quarantinedFiles() -> [String] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        let prefix = fileName + Self.quarantineMarker
        return entries.filter { $0.hasPrefix(prefix) }.sorted().map { directory + "/" + $0 }
    }

    // MARK: Pending reset

    /// Marks a reset that could not reach the keyring; the keyring copy is removed once it can.
    var pendingResetPath: String { path + ".reset-pending" }

    var hasPendingReset: Bool { access(pendingResetPath, F_OK) == 0 }

    /// Records a reset. `voidChecksum` is the checksum of the identifier the reset removes (never
    /// the identifier itself), so a backup still holding it is known to be void. The time is kept
    /// too: when the value was unknown, only keyring items older than the reset are void.
    /// Written atomically: a marker cut short by a kill would carry no time, and so void every
    /// identifier, even ones made long after the reset.
    func markPendingReset(voidChecksum: String?, at time: Date = Date()) throws(IdentityError) {
        try ensureDirectory()
        try replaceAtomically(pendingResetPath, with: Data("\(voidChecksum ?? "")\n\(Self.milliseconds(time))\n".utf8))
    }

    /// Unix time with three decimals: creation times and resets made within one second must still order.
    static func milliseconds(_ time: Date) -> String {
        ItemOrder.stamp(time)  // one format for the backup and the keyring's identity-created
    }

    /// The reset recorded by `markPendingReset`, or nil when none is pending.
    func pendingReset() -> PendingReset? { resetMarker(at: pendingResetPath) }

    /// The last reset this environment completed (its pending marker, kept once the keyring had
    /// it): a keyring that later shows the identifier it voided lost the reset (a daemon that
    /// acknowledged it and restarted from an older file), and the reset is made again.
    var completedResetPath: String { path + ".reset-done" }

    /// The reset `completePendingReset` kept, or nil when this environment completed none.
    func completedReset() -> PendingReset? { resetMarker(at: completedResetPath) }

    /// The reset marker at `path`, or nil when there is none.
    private func resetMarker(at path: String) -> PendingReset? {
        guard case .success(let contents) = FileReading.contents(of: path, limit: 4096), let data = contents else {
            return access(path, F_OK) == 0 ? PendingReset(voidChecksum: nil, time: FileTimes.modified(path)) : nil
        }
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let checksum = lines.first.map(String.init).flatMap { $0.isEmpty ? nil : $0 }
        let time = lines.count > 1 ? Double(lines[1]).map { Date(timeIntervalSince1970: $0) } : nil
        // A marker without its time (cut short by an older version, or damaged): the reset happened
        // no later than the file was last written, so identifiers made after that stay.
        return PendingReset(voidChecksum: checksum, time: time ?? FileTimes.modified(path))
    }

    /// Takes back a pending reset that did not happen.
    func clearPendingReset() throws(IdentityError) {
        if unlink(pendingResetPath) == 0 {
            durableStep?("clear pending reset")
        } else if errno != ENOENT {
            throw unwritable(Errno.text(errno))
        }
    }

    /// The pending reset reached the keyring: its marker becomes the completed reset, in one rename.
    func completePendingReset() throws(IdentityError) {
        if rename(pendingResetPath, completedResetPath) == 0 {
            durableStep?("complete pending reset")
        } else if errno != ENOENT {
            throw unwritable(Errno.text(errno))
        }
    }

    private func unwritable(_ reason: String) -> IdentityError {
        .backupUnwritable(path: path, reason: reason)
    }
}

extension String {
    /// The last path component.
    var lastComponent: String { split(separator: "/").last.map(String.init) ?? self }
}

/// strerror text for an errno value.
enum Errno {
    static func text(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}

/// XDG state and runtime directories, and creating private directories safely.
enum StateDirectories {
    struct Failure: Error {
        let reason: String
    }

    static func stateHome() -> String {
        if let state = environment("XDG_STATE_HOME"), state.hasPrefix("/") { return state }
        return home() + "/.local/state"
    }

    /// `$XDG_STATE_HOME/keyring-identity`: every file the library keeps lives below it.
    static func libraryStateDirectory() -> String {
        stateHome() + "/keyring-identity"
    }

    static func runtimeDirectory() -> String? {
        guard let runtime = environment("XDG_RUNTIME_DIR"), runtime.hasPrefix("/") else { return nil }
        return runtime
    }

    static func home() -> String {
        if let home = environment("HOME"), home.hasPrefix("/") { return home }
        if let entry = getpwuid(geteuid()), let dir = entry.pointee.pw_dir { return String(cString: dir) }
        return "/"
    }

    static func environment(_ name: String) -> String? {
        guard let raw = getenv(name) else { return nil }
        let value = String(cString: raw)
        return value.isEmpty ? nil : value
    }

    /// mkdir -p with 0700 for what it creates. The final directory must be a real directory owned
    /// by us. An existing directory's mode is left alone: it may belong to another program.
    static func makePrivateDirectory(_ path: String, isFinal: Bool = true) throws(Failure) {
        var info = stat()
        // Parents may be symlinks (e.g. /home); the final directory itself must not be.
        let look: (String, inout stat) -> Int32 = { isFinal ? lstat($0, &$1) : stat($0, &$1) }
        if look(path, &info) != 0 {
            guard errno == ENOENT else { throw Failure(reason: "\(path): \(Errno.text(errno))") }
            let parent = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
            if !parent.isEmpty { try makePrivateDirectory(parent, isFinal: false) }
            if mkdir(path, 0o700) != 0 && errno != EEXIST { throw Failure(reason: "\(path): \(Errno.text(errno))") }
            guard look(path, &info) == 0 else { throw Failure(reason: "\(path): \(Errno.text(errno))") }
        }
        if (info.st_mode & S_IFMT) != S_IFDIR { throw Failure(reason: "\(path) is not a directory") }
        guard isFinal else { return }  // parents like /home or /tmp are not ours to judge
        if info.st_uid != geteuid() { throw Failure(reason: "\(path) is owned by another user") }
    }
}
