// The keyrings the contract suite runs against: KeyringTesting's in-memory keyring always, and
// the real one the harness set up (scripts/with-keyring, with-kwallet, with-keepassxc, or
// libsecret's file backend with SECRET_BACKEND=file), so the two cannot drift apart.
import Foundation
import Keyring
import KeyringTesting
import TestSupport
import Testing

/// Which keyring a contract test runs against.
enum Backend: String, Sendable, CustomTestStringConvertible {
    /// The memory keyring as the run's real provider (`memoryProvider`).
    case memory
    /// The memory keyring as KeePassXC, which hides a locked collection's items.
    case memoryHiding
    /// The memory keyring as KWallet, which numbers its items' paths anew at each start.
    case memoryRenumbering
    case real

    /// The provider the memory keyring behaves as in this run: the real one's facts (the library's
    /// own `Quirks` for it), so that each contract test holds the two to the same assertions;
    /// gnome-keyring's where the run has no Secret Service provider (none, or the file backend).
    static var memoryProvider: MemoryKeyring.Provider {
        guard available.contains(.real), !TestProvider.usesFileBackend else { return .gnomeKeyring }
        return MemoryKeyring.Provider(name: TestProvider.name, quirks: TestProvider.quirks)
    }

    /// The in-memory keyring always; the real one only inside a harness (never the user's own keyring).
    static var available: [Backend] {
        ProcessInfo.processInfo.environment["WITH_KEYRING_ROOT"].map { $0.isEmpty ? [.memory] : [.memory, .real] } ?? [.memory]
    }

    /// `available`, and the memory keyring as KWallet where the run's provider numbers no paths anew.
    static var renumbering: [Backend] { memoryProvider.quirks.renumbersItems ? available : [.memoryRenumbering] + available }

    /// Those with a locked state: libsecret's file backend has none.
    static var lockable: [Backend] { [.memoryHiding] + available.filter { $0 == .memory || !TestProvider.usesFileBackend } }

    /// Those whose unlock prompts the test can answer: the memory keyring, and gnome-keyring
    /// through gcr's mock prompter (KWallet's and KeePassXC's prompts cannot be driven headless).
    static var promptable: [Backend] { lockable.filter { $0 != .real || TestConfiguration.current.offers(.mockPrompter) } }

    var testDescription: String {
        switch self {
        case .memory: "memory as \(Self.memoryProvider)"
        case .memoryHiding: "memory as keepassxc"
        case .memoryRenumbering: "memory as kwallet"
        case .real: "real: \(Self.realName)"
        }
    }

    /// The real provider's name: gnome-keyring, kwallet, keepassxc or file.
    static var realName: String { TestProvider.usesFileBackend ? "file" : TestProvider.name }
}

/// One test's keyring, with the controls the contract needs, on either backend.
final class Subject {
    let backend: Backend
    /// The in-memory keyring (nil for the real one).
    let memory: MemoryKeyring?
    private var relock = false

    init(_ backend: Backend) throws {
        self.backend = backend
        switch backend {
        case .memory: memory = MemoryKeyring(provider: Backend.memoryProvider)
        case .memoryHiding: memory = MemoryKeyring(provider: .keePassXC)
        case .memoryRenumbering: memory = MemoryKeyring(provider: .kwallet)
        case .real: memory = nil
        }
        if backend == .real {
            let root = ProcessInfo.processInfo.environment["WITH_KEYRING_ROOT"] ?? ""
            let home = ProcessInfo.processInfo.environment["HOME"] ?? ""
            try #require(!root.isEmpty && home.hasPrefix(root), "the real backend runs only inside scripts/with-keyring's HOME")
        }
    }

    var isMemory: Bool { backend != .real }
    var isFile: Bool { backend == .real && TestProvider.usesFileBackend }
    /// Whether the backend has a locked state (libsecret's file backend has none).
    var canLock: Bool { !isFile }
    /// Whether a locked collection's items are listed (as locked); KeePassXC hides them.
    var listsLockedItems: Bool { memory.map { !$0.hidesLockedItems } ?? TestProvider.listsLockedItems }
    /// Whether an update keeps the item (`Quirks.keepsItemChanges`); oo7-daemon's replaces it.
    var keepsItemChanges: Bool { memory.map { $0.provider.quirks.keepsItemChanges } ?? (isFile || TestProvider.quirks.keepsItemChanges) }

    func keyring(timeout: Duration = .seconds(25), unlock: UnlockPolicy = .prompt) -> Keyring {
        if let memory { return Keyring(memory: memory, timeout: timeout, unlock: unlock) }
        return Keyring(timeout: timeout, unlock: unlock)
    }

    func store(_ identifier: String, group: String? = nil, unlock: UnlockPolicy = .prompt) throws -> SecretStore {
        try SecretStore(identifier: identifier, accessGroup: group, keyring: keyring(unlock: unlock))
    }

    func lock() throws {
        guard let memory else {
            try ctl(["lock"])
            return
        }
        memory.isLocked = true
    }

    func unlock() throws {
        guard let memory else {
            try ctl(["unlock"])
            return
        }
        memory.isLocked = false
    }

    /// The daemon restarts between two calls (the file backend has no daemon: nothing happens).
    func restart() throws {
        if let memory { return memory.restart() }
        if isFile { return }
        try ctl(["restart"])
    }

    /// Runs `body` with unlock prompts answerable (`answer`); the keyring is unlocked afterwards.
    func withPrompts(_ body: () throws -> Void) throws {
        if isMemory { return try body() }
        try ctl(["prompter", "on"])
        defer { _ = try? ctl(["prompter", "off"]) }
        try body()
    }

    /// Queues the answer to the next unlock prompt.
    func answer(_ answer: MemoryKeyring.UnlockAnswer) throws {
        if let memory {
            memory.unlockAnswer = answer
            return
        }
        switch answer {
        case .unlock: try ctl(["prompt-answer", "ok"])
        case .dismiss: try ctl(["prompt-answer", "cancel"])
        case .ignore: try ctl(["prompt-answer", "hang"])
        }
    }

    /// The faults `withFault` can bring about on this backend: all four on the memory keyring; a hung
    /// daemon (`keyring-ctl pause`) and a process without a session bus on a Secret Service provider.
    /// Not on the file backend, which needs neither bus nor daemon. A missing service has no real form
    /// here (D-Bus activation starts gnome-keyring again), nor a refused write.
    var faults: [MemoryKeyring.Fault] {
        if isMemory { return [.noSessionBus, .noSecretService, .timeout, .writeFails] }
        return isFile ? [] : [.timeout, .noSessionBus]
    }

    /// Runs `body` with `fault` in effect: injected into the memory keyring, real on a real provider.
    func withFault<T>(_ fault: MemoryKeyring.Fault, _ body: () throws -> T) throws -> T {
        if let memory {
            memory.inject(fault)
            defer { memory.inject(nil) }
            return try body()
        }
        if fault == .timeout { return try withPausedDaemon { _ in try body() } }
        if fault == .noSessionBus { return try withoutSessionBus(body) }
        throw UnmetFault(fault: fault)
    }

    /// `withFault` was asked for a fault this backend cannot bring about (see `faults`).
    struct UnmetFault: Error {
        let fault: MemoryKeyring.Fault
    }

    @discardableResult
    func ctl(_ arguments: [String]) throws -> String { try keyringCtl(arguments) }
}

/// TestSupport's unique identifier, marked as the contract suite's.
func uniqueID(_ tag: String) -> String { TestSupport.uniqueID("contract." + tag) }
