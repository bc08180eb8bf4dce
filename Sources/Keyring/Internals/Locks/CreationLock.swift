internal import CLibSecret
internal import KeyringShim
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The in-process half of the creation lock: one thread at a time, re-entrant for that thread
/// (a `Keyring.withCreationLock` body may call `insertIfAbsent`). Always taken before the service
/// gate, never while holding it; and both are waited on only until the call's deadline.
enum ProcessCreationLock {
    private static let lock = CallLock()

    /// Runs `body` holding the lock, waiting for it until `deadline`: the call's own deadline,
    /// which its service call shares, so a write that waited here still ends within its timeout.
    /// - Throws: `deadline.timedOut`, `.cancelled`, or what `body` throws.
    static func with<T>(
        _ deadline: CallDeadline, cancellation: Cancellation? = nil, _ body: () throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        try lock.with(deadline, cancellation: cancellation, body)
    }
}

/// The lock every creation of an item runs under, so that "create if still absent" holds between
/// processes that share nothing but the keyring: a Flatpak beside a host app, cron without
/// pam_systemd, two versions of one app.
///
/// It is a well-known name on the session bus, owned with `RequestName(DO_NOT_QUEUE)`: every
/// client of the keyring shares that bus, whatever its file system view, and the bus releases
/// the name when its owner dies. Where the bus refuses the name (a filtering proxy), the per-user
/// `flock` in `$XDG_RUNTIME_DIR` stands in (`CreationFallbackLock`). In-process exclusion comes
/// from `ProcessCreationLock`, which every creation takes before its service call.
enum CreationLock {
    /// Runs `body` while holding the creation lock for `attributes`, waiting until the deadline.
    /// The caller holds `ProcessCreationLock`, so a name this connection already owns belongs to
    /// an enclosing `Keyring.withCreationLock` on this thread.
    static func with<T>(_ call: borrowing ServiceCall, for attributes: [String: String], _ body: () throws(KeyringError) -> T)
        throws(KeyringError) -> T
    {
        try with(call, for: attributes) { (_: Bool) throws(KeyringError) -> T in try body() }
    }

    /// As above; `body` learns whether the lock excludes every client of the keyring (false when
    /// only the `flock` fallback stood in, which processes in other environments do not share).
    static func with<T>(_ call: borrowing ServiceCall, for attributes: [String: String], _ body: (Bool) throws(KeyringError) -> T)
        throws(KeyringError) -> T
    {
        switch try acquire(lockName(for: attributes), in: call) {
        case .acquired(let name):
            defer { name.release() }
            return try body(true)
        case .alreadyOwned:
            return try body(true)
        case .refused:
            let pointer = call.cancellable
            let isCancelled = { g_cancellable_is_cancelled(pointer) != 0 }
            return try CreationFallbackLock.with(call.callDeadline, isCancelled: isCancelled) { () throws(KeyringError) -> T in
                try body(false)
            }
        }
    }

    /// `io.keyringidentity.Create.h<hash>`: the hash covers the attributes in a canonical order,
    /// so every process locking the same item computes the same name.
    static func lockName(for attributes: [String: String]) -> String {
        let canonical = attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "\u{0}")
        return "io.keyringidentity.Create.h" + Digest.sha256Hex(Array(canonical.utf8)).prefix(40)
    }

    enum Acquisition {
        /// This call owns the name now; it must `release` it.
        case acquired(OwnedBusName)
        /// An enclosing creation on this thread owns it.
        case alreadyOwned
        /// The bus refused the name (a filtering proxy); the flock stands in.
        case refused
    }

    /// DBUS_NAME_FLAG_DO_NOT_QUEUE: fail at once instead of waiting in the bus's queue.
    static let doNotQueue: guint32 = 4

    /// Asks for `name` until the bus grants it or the deadline passes, through `CallDeadline.poll`.
    /// A RequestName that ended in a timeout or cancellation on this side may still have been
    /// granted by the bus: the name is then released at once, unless this process holds it.
    static func acquire(_ name: String, in call: borrowing ServiceCall) throws(KeyringError) -> Acquisition {
        guard let connection = g_dbus_proxy_get_connection(kr_service_proxy(call.service)) else {
            throw .noSessionBus(detail: BusCall.connectionClosed)
        }
        let deadline = call.callDeadline
        let pointer = call.cancellable
        let isCancelled = { g_cancellable_is_cancelled(pointer) != 0 }
        var acquisition: Acquisition? = nil
        let outcome: CallDeadline.PollOutcome
        do throws(KeyringError) {
            outcome = try deadline.poll(isCancelled: isCancelled) { () throws(KeyringError) -> Bool in
                let code = try BusCall.call(
                    connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                    kr_variant_name_flags_tuple(name, Self.doNotQueue), reply: "(u)", timeout: deadline.remainingMilliseconds,
                    cancellable: pointer, flags: kr_call_flags_none(),
                    orOnError: { error -> guint32?? in
                        // A bus policy answers AccessDenied; xdg-dbus-proxy (a Flatpak without --own)
                        // hides the name with ServiceUnknown, which the bus itself never sends.
                        let refusals = ["org.freedesktop.DBus.Error.AccessDenied", "org.freedesktop.DBus.Error.ServiceUnknown"]
                        return KeyringError.remoteName(of: error).map(refusals.contains) == true ? .some(nil) : nil
                    }, parse: { reply -> guint32?? in kr_variant_tuple_u32(reply) })
                switch code {
                case nil: acquisition = .refused
                case 1?: acquisition = .acquired(OwnedBusName(name, on: connection))  // PRIMARY_OWNER
                case 4?: acquisition = .alreadyOwned  // ALREADY_OWNER: a nested creation in this process
                default: return false  // EXISTS: another process is creating
                }
                return true
            }
        } catch {
            switch error {
            case .timedOut, .cancelled: OwnedBusName.releaseUnlessHeld(name, on: connection)
            default: break
            }
            throw error
        }
        switch outcome {
        case .done: return acquisition ?? .refused
        case .timedOut: throw deadline.timedOut
        case .cancelled: throw .cancelled
        }
    }
}

/// A creation lock's bus name this process owns, with the connection that owns it (referenced).
/// Its release goes straight on that connection: it needs neither libsecret's service nor the
/// service gate, which another thread may hold for as long as a hung daemon takes.
final class OwnedBusName: @unchecked Sendable {
    let name: String
    private let connection: OpaquePointer
    private let released = Atomic<Bool>(false)

    /// Names owned through `OwnedBusName` and not released yet: a nested creation's are its enclosing one's.
    private static let held = Guarded<Set<String>>([])

    init(_ name: String, on connection: OpaquePointer) {
        self.name = name
        self.connection = connection
        g_object_ref(UnsafeMutableRawPointer(connection))
        Self.held.withLock { _ = $0.insert(name) }
    }

    deinit {
        release()
        g_object_unref(UnsafeMutableRawPointer(connection))
    }

    /// Releases the name (once), even when the operation was cancelled. Written to the bus's socket
    /// before this returns, but its reply is not waited for, so a frozen bus never holds the call
    /// past its deadline: the bus handles one connection's messages in order, and it releases the
    /// name anyway when the connection closes.
    func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Self.held.withLock { _ = $0.remove(name) }
        Self.sendRelease(name, on: connection)
    }

    /// After a RequestName that did not end with an answer: releases what the bus may have granted.
    /// Sent without waiting, so the call ends by its deadline; the bus handles one connection's
    /// messages in order, so it sees this after the RequestName.
    static func releaseUnlessHeld(_ name: String, on connection: OpaquePointer) {
        guard !held.withLock({ $0.contains(name) }) else { return }
        sendRelease(name, on: connection)
    }

    private static func sendRelease(_ name: String, on connection: OpaquePointer) {
        BusCall.send(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ReleaseName",
            kr_variant_string_tuple(name))
        // In the socket before another process, told that the lock is free, asks for the name.
        g_dbus_connection_flush_sync(connection, nil, nil)
    }
}
