internal import CLibSecret

#if canImport(Glibc)
import Glibc
#endif

/// The lock every creation of an item runs under, so that "create if still absent" holds between
/// processes that share nothing but the keyring: a Flatpak beside a host app, cron without
/// pam_systemd, two versions of one app.
///
/// It is a well-known name on the session bus, owned with `RequestName(DO_NOT_QUEUE)`: every
/// client of the keyring shares that bus, whatever its file system view, and the bus releases
/// the name when its owner dies. Where the bus refuses the name (a filtering proxy), the per-user
/// `flock` in `$XDG_RUNTIME_DIR` stands in (`CreationFallbackLock`). In-process exclusion comes
/// from `ProcessCreationLock`, which every creation takes before its service call.
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

extension ServiceCall {
    /// Runs `body` while holding the creation lock for `attributes`, waiting until the deadline.
    /// The caller holds `ProcessCreationLock`, so a name this connection already owns belongs to
    /// an enclosing `Keyring.withCreationLock` on this thread.
    func withCreationLock<T>(for attributes: [String: String], _ body: () throws(KeyringError) -> T) throws(KeyringError) -> T {
        try withCreationLock(for: attributes) { (_: Bool) throws(KeyringError) -> T in try body() }
    }

    /// As above; `body` learns whether the lock excludes every client of the keyring (false when
    /// only the `flock` fallback stood in, which processes in other environments do not share).
    func withCreationLock<T>(for attributes: [String: String], _ body: (Bool) throws(KeyringError) -> T) throws(KeyringError) -> T {
        let name = Self.lockName(for: attributes)
        switch try acquireBusName(name) {
        case .acquired:
            defer { releaseBusName(name) }
            return try body(true)
        case .alreadyOwned:
            return try body(true)
        case .refused:
            let pointer = cancellable
            let isCancelled = { g_cancellable_is_cancelled(pointer) != 0 }
            return try CreationFallbackLock.with(callDeadline, isCancelled: isCancelled) { () throws(KeyringError) -> T in try body(false) }
        }
    }

    /// `io.keyringidentity.Create.h<hash>`: the hash covers the attributes in a canonical order,
    /// so every process locking the same item computes the same name.
    static func lockName(for attributes: [String: String]) -> String {
        let canonical = attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "\u{0}")
        return "io.keyringidentity.Create.h" + Digest.sha256Hex(Array(canonical.utf8)).prefix(40)
    }

    enum Acquisition { case acquired, alreadyOwned, refused }

    /// DBUS_NAME_FLAG_DO_NOT_QUEUE: fail at once instead of waiting in the bus's queue.
    static let doNotQueue: guint32 = 4

    func acquireBusName(_ name: String) throws(KeyringError) -> Acquisition {
        guard let connection = g_dbus_proxy_get_connection(kr_service_proxy(service)) else {
            throw .noSessionBus(detail: "the connection was closed")
        }
        var pause: Duration = .milliseconds(1)
        while true {
            // nil: the bus refused the name (a filtering proxy); the flock stands in.
            let code = try BusCall.call(
                connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                kr_variant_name_flags_tuple(name, Self.doNotQueue), reply: "(u)", timeout: remainingMilliseconds, cancellable: cancellable,
                flags: G_DBUS_CALL_FLAGS_NONE,
                orOnError: { error -> guint32?? in
                    // A bus policy answers AccessDenied; xdg-dbus-proxy (a Flatpak without --own)
                    // hides the name with ServiceUnknown, which the bus itself never sends.
                    let refusals = ["org.freedesktop.DBus.Error.AccessDenied", "org.freedesktop.DBus.Error.ServiceUnknown"]
                    return KeyringError.remoteName(of: error).map(refusals.contains) == true ? .some(nil) : nil
                }, parse: { reply -> guint32?? in kr_variant_tuple_u32(reply) })
            guard let code else { return .refused }
            switch code {
            case 1: return .acquired  // PRIMARY_OWNER
            case 4: return .alreadyOwned  // ALREADY_OWNER: a nested creation in this process
            default: break  // EXISTS: another process is creating
            }
            if g_cancellable_is_cancelled(cancellable) != 0 { throw .cancelled }
            if callDeadline.hasPassed { throw callDeadline.timedOut }
            callDeadline.sleep(upTo: pause)
            pause = min(pause * 2, .milliseconds(20))
        }
    }

    func releaseBusName(_ name: String) {
        guard let connection = g_dbus_proxy_get_connection(kr_service_proxy(service)) else { return }
        // Not cancellable: a lock must be released even when the operation was cancelled. If this
        // fails the bus still releases the name when the connection closes.
        _ = try? BusCall.call(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ReleaseName",
            kr_variant_string_tuple(name),
            reply: "(u)", timeout: 2000, cancellable: nil, flags: G_DBUS_CALL_FLAGS_NONE
        ) { _ in () }
    }
}
