// The world the event-order check runs in: one memory keyring and two state directories (the
// desktop and the same app in a sandbox), in a temporary directory, with snapshots that put the
// whole world back exactly, files' inodes (so their birth times) included.
import Foundation
import Keyring
import KeyringTesting

@testable import DeviceIdentity

#if canImport(Glibc)
import Glibc
#endif

/// Where an event happens: the desktop, or the same app in a sandbox (its own `XDG_STATE_HOME`).
enum Place: String, CaseIterable, Hashable {
    case desktop, sandbox
}

/// What the keyring answers every call with, for now.
enum Condition: String, Equatable {
    case normal, locked, unreachable, timedOut
}

/// Counts the durable steps of one call and stops the world at one of them.
final class StepCounter: @unchecked Sendable {
    var count = 0
    let stopAfter: Int
    let stop: () -> Void

    init(stopAfter: Int, stop: @escaping () -> Void) {
        self.stopAfter = stopAfter
        self.stop = stop
    }

    func step() {
        count += 1
        if count == stopAfter { stop() }
    }
}

final class World {
    let memory = MemoryKeyring()
    let root: String
    let scope = IdentifierScope.app("event.order.app")
    private(set) var condition = Condition.normal
    private var snapshotNumber = 0

    init() throws {
        // tmpfs when there is one: thousands of fsyncs a second. Birth times are needed either way.
        let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : FileManager.default.temporaryDirectory.path
        var template = Array("\(base)/event-order.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
        root = String(cString: made)
        for place in Place.allCases {
            try FileManager.default.createDirectory(atPath: lockDirectory(place), withIntermediateDirectories: true)
        }
        try FileManager.default.createDirectory(atPath: root + "/snapshots", withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func stateDirectory(_ place: Place) -> String { root + "/\(place.rawValue)/state" }
    func lockDirectory(_ place: Place) -> String { root + "/\(place.rawValue)/lock" }
    func backupPath(_ place: Place) -> String { stateDirectory(place) + "/identifier" }
    func pendingResetPath(_ place: Place) -> String { backupPath(place) + ".reset-pending" }

    /// A fresh resolver (no cached value) for `place`; `counter` sees its durable steps.
    func resolver(_ place: Place, counter: StepCounter? = nil) -> IdentifierResolver {
        var resolver = try! IdentifierResolver(
            scope: scope, keyring: Keyring(memory: memory, timeout: .seconds(2)), backup: .directory(stateDirectory(place)),
            lockDirectories: [lockDirectory(place)])
        if let counter { resolver.backup?.durableStep = { _ in counter.step() } }
        return resolver
    }

    func setCondition(_ condition: Condition) {
        self.condition = condition
        memory.isLocked = condition == .locked
        memory.unlockAnswer = .dismiss  // nobody types the password
        switch condition {
        case .normal, .locked: memory.inject(nil)
        case .unreachable: memory.inject(.noSecretService)
        case .timedOut: memory.inject(.timeout)
        }
    }

    /// Runs `body` with the keyring answering normally, then puts the condition back.
    func withKeyringReachable<T>(_ body: () throws -> T) rethrows -> T {
        let before = condition
        setCondition(.normal)
        defer { setCondition(before) }
        return try body()
    }

    // MARK: Ground truth, read around the library

    /// The identity items' values, as the keyring holds them whatever its condition.
    var keyringValues: [String] {
        memory.items.filter { $0.attributes["identity-scope"] == scope.kind && $0.attributes["identity-name"] == scope.name }
            .compactMap { memory.secret(of: $0).map { String(decoding: $0.secret, as: UTF8.self) } }
    }

    /// Every item with its secret: what a lost change would put back.
    var keyringSignature: String {
        memory.items.map { "\($0.objectPath) \(memory.secret(of: $0).map { String(decoding: $0.secret, as: UTF8.self) } ?? "")" }
            .joined(separator: "\n")
    }

    var identityItems: [KeyringItem] {
        memory.items.filter { $0.attributes["identity-scope"] == scope.kind && $0.attributes["identity-name"] == scope.name }
    }

    /// The identifier in `place`'s backup file when it is intact.
    func backupValue(_ place: Place) -> String? {
        if case .present(let record) = BackupFile(directory: stateDirectory(place), scope: scope).read(quarantine: false) {
            return record.identifier
        }
        return nil
    }

    /// The inode of a file, nil when it is gone.
    static func inode(_ path: String) -> UInt64? {
        var info = stat()
        return lstat(path, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    /// The inodes of `place`'s backup and of the copies moved aside as corrupt.
    func backupInodes(_ place: Place) -> [UInt64] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: stateDirectory(place))) ?? []
        return names.filter { $0 == "identifier" || $0.hasPrefix("identifier.corrupt-") }
            .compactMap { Self.inode(stateDirectory(place) + "/" + $0) }
    }

    /// What a read must not change: every file's name, inode and size, and every item with its
    /// secret. The keyring-seen marker aside: any read that reaches a keyring notes it.
    var signature: String {
        var parts: [String] = []
        for place in Place.allCases {
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: stateDirectory(place))) ?? []).sorted()
            where name != "keyring-seen" {
                var info = stat()
                lstat(stateDirectory(place) + "/" + name, &info)
                parts.append("\(place) \(name) \(info.st_ino) \(info.st_size)")
            }
        }
        for item in memory.items {
            parts.append("\(item.objectPath) \(memory.secret(of: item).map { String(decoding: $0.secret, as: UTF8.self) } ?? "")")
        }
        return parts.joined(separator: "\n")
    }

    // MARK: Snapshots

    struct FileCopy {
        let live: String
        let link: String
        let content: Data
        let times: (timespec, timespec)
    }

    struct Snapshot {
        let directory: String
        let files: [FileCopy]
        let existingDirectories: Set<String>
        let memory: MemoryKeyring.Snapshot
        let condition: Condition
    }

    private var liveDirectories: [String] { Place.allCases.flatMap { [stateDirectory($0), lockDirectory($0)] } }

    /// The whole world now. Files are kept by hard link, so putting them back keeps their inodes.
    func snapshot() -> Snapshot {
        snapshotNumber += 1
        let directory = root + "/snapshots/\(snapshotNumber)"
        mkdir(directory, 0o700)
        var files: [FileCopy] = []
        var existing: Set<String> = []
        for (index, live) in liveDirectories.enumerated() {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: live) else { continue }
            existing.insert(live)
            for name in names {
                let path = live + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
                let link = directory + "/\(index)-" + name
                guard Glibc.link(path, link) == 0 else { continue }
                let content = FileManager.default.contents(atPath: path) ?? Data()
                files.append(FileCopy(live: path, link: link, content: content, times: (info.st_atim, info.st_mtim)))
            }
        }
        return Snapshot(directory: directory, files: files, existingDirectories: existing, memory: memory.snapshot(), condition: condition)
    }

    /// Puts the world back as `snapshot` saw it: the same inodes at the same names, their content
    /// and modification times, the keyring's items and its condition.
    func restore(_ snapshot: Snapshot) {
        for live in liveDirectories {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: live)) ?? [] { unlink(live + "/" + name) }
            if !snapshot.existingDirectories.contains(live) { rmdir(live) }
        }
        for live in snapshot.existingDirectories {
            try? FileManager.default.createDirectory(atPath: live, withIntermediateDirectories: true)
        }
        for file in snapshot.files {
            Glibc.link(file.link, file.live)
            if FileManager.default.contents(atPath: file.live) != file.content {
                // Damaged in place since: the same inode gets its content back.
                let fd = open(file.live, O_WRONLY | O_TRUNC)
                if fd >= 0 {
                    file.content.withUnsafeBytes { _ = Glibc.write(fd, $0.baseAddress, $0.count) }
                    close(fd)
                }
            }
            var times = [file.times.0, file.times.1]
            utimensat(AT_FDCWD, file.live, &times, AT_SYMLINK_NOFOLLOW)
        }
        memory.restore(snapshot.memory)
        setCondition(snapshot.condition)
    }

    func discard(_ snapshot: Snapshot) {
        for file in snapshot.files { unlink(file.link) }
        rmdir(snapshot.directory)
    }

    /// Runs `body` and stops the world after its `step`-th durable step (a file renamed or removed,
    /// a keyring change committed): the state a SIGKILL right there leaves. False, with the
    /// call's whole effect kept, when it made no step after that one.
    func killed(afterStep step: Int, _ body: (StepCounter) -> Void) -> Bool {
        var stopped: Snapshot?
        let counter = StepCounter(stopAfter: step) { stopped = self.snapshot() }
        memory.afterChange.withLock { $0 = { counter.step() } }
        body(counter)
        memory.afterChange.withLock { $0 = nil }
        guard let stopped else { return false }
        defer { discard(stopped) }
        guard counter.count > step else { return false }
        restore(stopped)
        return true
    }
}
