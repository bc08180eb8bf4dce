internal import CLibSecret
internal import KeyringShim
import Dispatch

/// Owns one GCancellable. Cancelling is thread-safe in GLib, which is what makes the
/// `@unchecked Sendable` sound: the pointer is only read, and released once in `deinit`.
final class Cancellation: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<GCancellable>

    init() { pointer = g_cancellable_new() }
    deinit { g_object_unref(pointer) }

    func cancel() { g_cancellable_cancel(pointer) }
    var isCancelled: Bool { g_cancellable_is_cancelled(pointer) != 0 }
}

/// Serializes libsecret use in this process. libsecret shares one SecretService and one
/// encrypted session per process; concurrent first calls would race to open it. Waited on only
/// until the waiting call's deadline, and released while a call waits on an unlock prompt.
private let serviceGate = CallLock()

/// One unlock prompt at a time in this process: a second call that meets the locked keyring
/// waits for the first one's prompt (within its own deadline), then finds it unlocked or asks again.
private let promptGate = CallLock()

/// What one operation learned along the way: the locked objects it met, the provider, and whether
/// it may create. Touched only on the operation's own thread (one `ServiceCall` never crosses
/// threads), so it needs no lock.
final class CallNotes {
    /// The locked objects the last search saw, or a throw site named (`lockedError(at:)`).
    var paths: [String] = []
    /// The provider, once asked in this operation: its owner does not change under one operation
    /// (a restart fails its calls, and `run` retries on a new `ServiceCall`).
    var provider: Provider?
    /// Set by operations that may create an item: their searches then sample, before they run,
    /// whether a locked collection could hide a match (`searchedWhileHidden`).
    var mayCreate = false
    /// True when the last search ran while a locked collection could hide its matches: a create
    /// after it is refused even if the collection opened since (its item may be there now).
    var searchedWhileHidden = false
}

/// One public operation: a deadline, an optional caller cancellation, and the shared service.
struct ServiceCall: ~Copyable {
    let cancellable: UnsafeMutablePointer<GCancellable>
    let service: UnsafeMutablePointer<SecretService>
    /// When the whole public operation must end; every D-Bus call and wait gets the time left until then.
    let callDeadline: CallDeadline
    /// What this operation learned: locked objects for the unlock `run` asks for after `.locked`, the provider.
    let notes = CallNotes()

    /// The deadline's instant.
    var deadline: ContinuousClock.Instant { callDeadline.instant }

    /// Milliseconds left until the deadline, for GDBus timeouts (at least 1: 0 or -1 mean "default").
    var remainingMilliseconds: Int32 { callDeadline.remainingMilliseconds }

    /// The provider that owns the Secret Service now; `.unknown` when the bus does not say.
    ///
    /// The owner is asked of the bus, not of libsecret's proxy: after a daemon restart the proxy
    /// may still name the old owner, which the markers no longer match.
    ///
    /// Only a definite answer is remembered: a lookup that failed (a timeout, a cancellation) gives
    /// `.unknown`, the strict answer, for this call alone. Within one operation the bus is asked once.
    func provider() -> Provider {
        if let asked = notes.provider { return asked }
        let provider = Provider.recognised(in: self)
        notes.provider = provider
        return provider
    }

    /// Properties.Get of one property, read by `parse` from the `(v)` reply; nil when the object does not exist.
    func property<T>(_ name: String, of path: String, interface: String, _ parse: (OpaquePointer) -> T?) throws(KeyringError) -> T? {
        try callService(
            path, interface: "org.freedesktop.DBus.Properties", method: "Get", kr_variant_two_strings_tuple(interface, name), reply: "(v)",
            naming: "Properties.Get(\(name))", parse)
    }

    /// One call to the Secret Service's owner, straight on the connection, its reply read by
    /// `parse`; nil when the item or collection at `path` does not exist (never for the service
    /// object itself, whose "no such object" is a failure naming the method).
    func callService<T>(
        _ path: String, interface: String, method: String, _ parameters: OpaquePointer?, reply replyType: String,
        naming name: String? = nil,
        _ parse: (OpaquePointer) -> T?
    ) throws(KeyringError) -> T? {
        let proxy = kr_service_proxy(service)
        guard let connection = g_dbus_proxy_get_connection(proxy), let bus = g_dbus_proxy_get_name(proxy) else {
            if let parameters { g_variant_unref(g_variant_ref_sink(parameters)) }
            throw .noSessionBus(detail: BusCall.connectionClosed)
        }
        return try BusCall.callIfPresent(
            connection, String(cString: bus), path, interface, method, parameters, reply: replyType, timeout: remainingMilliseconds,
            cancellable: cancellable, naming: name, parse: parse)
    }

    /// Runs `body` against the process's Secret Service, within `timeout` from now.
    @discardableResult
    static func run<T>(
        timeout: Duration,
        cancellation: Cancellation? = nil,
        unlock: UnlockPolicy = .never,
        startsService: Bool = true,
        _ body: (borrowing ServiceCall) throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        try run(deadline: CallDeadline(timeout: timeout), cancellation: cancellation, unlock: unlock, startsService: startsService, body)
    }

    /// Runs `body` against the process's Secret Service, by `deadline`: the public call's one
    /// deadline, which its other waits (the in-process creation lock) share.
    ///
    /// The service gate is waited on until the deadline too, so a call on a hung daemon, or one
    /// waiting on an unlock prompt, holds up other threads' calls at most until their own
    /// deadlines; and the gate is released for the prompt wait, which touches no libsecret state.
    ///
    /// A stale connection (the daemon restarted, so the cached session is gone) is dropped and
    /// the operation retried once on a fresh one, within the same deadline: it bounds the whole
    /// operation, retry included.
    ///
    /// Under `unlock: .prompt`, a `body` that throws `.locked` (whichever check found the lock)
    /// has the collections that could hold its item unlocked (`unlockTargets`), through the
    /// service's prompt, and runs once more,
    /// within the same deadline. Operations throw `.locked` before they change anything, so
    /// running one again is safe.
    ///
    /// With `startsService` false, a service with no running daemon is `.noSecretService`, never
    /// one the bus starts: a change watch's calls follow the daemon it watches, and one made as
    /// that daemon quit had the bus start another, locked, in its place (CI, under load).
    @discardableResult
    static func run<T>(
        deadline: CallDeadline,
        cancellation: Cancellation? = nil,
        unlock: UnlockPolicy = .never,
        startsService: Bool = true,
        _ body: (borrowing ServiceCall) throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        func attempt() throws(KeyringError) -> T {
            try Deadline.run(until: deadline, cancellation: cancellation) { callCancellation throws(KeyringError) -> T in
                let service = try connect(until: deadline, callCancellation, startsService: startsService)
                defer { g_object_unref(service) }
                // The KWallet session check runs where a secret first crosses the session (KWallet+SessionCheck.swift).
                let call = ServiceCall(cancellable: callCancellation.pointer, service: service, callDeadline: deadline)
                do throws(KeyringError) {
                    return try body(call)
                } catch .locked(let itemExists, .notAsked) where unlock == .prompt {
                    // The user may take the whole timeout: let other threads' calls through meanwhile.
                    try serviceGate.without(deadline, cancellation: callCancellation) { () throws(KeyringError) in
                        try promptGate.with(deadline, cancellation: callCancellation) { () throws(KeyringError) in
                            try call.unlockCollections(call.unlockTargets(), itemExists: itemExists)
                        }
                    }
                    return try body(call)
                }
            }
        }
        return try serviceGate.with(deadline, cancellation: cancellation) { () throws(KeyringError) -> T in
            var staleRetried = false
            var keyRetries = 0
            while true {
                do throws(KeyringError) {
                    return try attempt()
                } catch let error where !staleRetried && ServiceFailure(error)?.endsSession == true {
                    staleRetried = true
                    disconnect()
                } catch let error where keyRetries < maximumKeyRetries && ServiceFailure(error)?.rejectsSessionKey == true {
                    keyRetries += 1
                    disconnect()
                }
            }
        }
    }

    private static func connect(
        until deadline: CallDeadline, _ cancellation: Cancellation, startsService: Bool
    ) throws(KeyringError) -> UnsafeMutablePointer<SecretService> {
        if let problem = BusEnvironment.problem() ?? BusEnvironment.serviceNameProblem() { throw problem }
        // libsecret 0.21.8 (Debian 14) unrefs a non-object when secret_service_get_sync fails for a
        // name nobody owns or can start (a GLib critical): ask the bus first. A bus that does not
        // answer is left to libsecret, whose error says so. libsecret's proxy and its OpenSession
        // start an activatable daemon, so without `startsService` only a running one will do.
        // Within the call's deadline: a frozen bus answers neither the probe nor its connection.
        let listed = BusProbe.lists(BusEnvironment.serviceName, activatable: startsService, until: deadline, cancellation: cancellation)
        if startsService ? listed == false : listed != true {
            if deadline.hasPassed { throw deadline.timedOut }
            if cancellation.isCancelled { throw .cancelled }
            throw .noSecretService
        }
        let service: UnsafeMutablePointer<SecretService>?
        do throws(KeyringError) {
            service = try throwingGError(.connecting) {
                secret_service_get_sync(SECRET_SERVICE_OPEN_SESSION, cancellation.pointer, $0)
            }
        } catch .keyExchangeFailed(nil, let detail) {
            // Which daemon it is decides the fix (KWallet's Qt 5 or Qt 6 QCA plugin).
            let provider = BusProbe.processName(of: BusEnvironment.serviceName, until: deadline, cancellation: cancellation)
            throw .keyExchangeFailed(provider: provider, detail: detail)
        }
        guard let service else { throw .noSecretService }
        if let session = secret_service_get_session_dbus_path(service),
            let connection = g_dbus_proxy_get_connection(kr_service_proxy(service)),
            PlainRead.collides(withSession: String(cString: session), on: connection)
        {
            // A session left from a restarted daemon: start over on a new one.
            g_object_unref(service)
            disconnect()
            return try connect(until: deadline, cancellation, startsService: startsService)
        }
        rememberSessionOwner(service)
        return service
    }

    /// libsecret's current service and session, and who owned the Secret Service's name when
    /// this process first saw that session: the daemon the session lives in.
    private static let sessionOwner = Guarded<(service: UInt, session: String, owner: String)?>(nil)

    private static func rememberSessionOwner(_ service: UnsafeMutablePointer<SecretService>) {
        guard let sessionPointer = secret_service_get_session_dbus_path(service),
            let ownerPointer = g_dbus_proxy_get_name_owner(kr_service_proxy(service))
        else { return }
        defer { g_free(ownerPointer) }
        let address = UInt(bitPattern: Int(bitPattern: service))
        let session = String(cString: sessionPointer)
        sessionOwner.withLock { known in
            if known?.service != address || known?.session != session { known = (address, session, String(cString: ownerPointer)) }
        }
    }

    /// The unique name of the daemon libsecret's current session lives in, when known: raw calls
    /// that carry the session go there, so a restarted daemon (the name gone) fails them as a stale
    /// connection instead of meeting another session at the same path.
    var sessionDaemon: String? {
        let address = UInt(bitPattern: Int(bitPattern: service))
        let session = secret_service_get_session_dbus_path(service).map { String(cString: $0) }
        return Self.sessionOwner.withLock { known in
            guard let known, known.service == address, known.session == session else { return nil }
            return known.owner
        }
    }

    /// Drops libsecret's service and session; the next call opens new ones.
    private static func disconnect() {
        sessionOwner.withLock { $0 = nil }
        secret_service_disconnect()
    }

    /// GetNameOwner: the unique name that owns `name` on the bus now; nil when nobody does.
    /// - Parameter timeout: milliseconds at most; the time left when nil.
    /// - Throws: when the bus does not answer (a timeout, a cancellation).
    func nameOwner(_ name: String, on connection: OpaquePointer, timeout: Int32? = nil) throws(KeyringError) -> String? {
        try BusCall.call(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
            kr_variant_string_tuple(name), reply: "(s)", timeout: min(timeout ?? remainingMilliseconds, remainingMilliseconds),
            cancellable: cancellable, flags: kr_call_flags_none(),
            orOnError: { error -> String?? in
                KeyringError.remoteName(of: error) == "org.freedesktop.DBus.Error.NameHasNoOwner" ? .some(nil) : nil
            },
            parse: { reply -> String?? in
                guard let owner = kr_variant_tuple_string(reply) else { return nil }
                defer { g_free(owner) }
                return .some(String(cString: owner))
            })
    }

    /// Throws a stale-session error (which `run` retries on a new session) when the daemon that
    /// owns the Secret Service now is not the one libsecret's session was opened with. For writes,
    /// before a value is encoded: a restarted daemon may hold another client's session at the old
    /// session's path (KeePassXC does), and would store the value decoded with that one's key.
    func requireCurrentSession() throws(KeyringError) {
        let proxy = kr_service_proxy(service)
        guard let connection = g_dbus_proxy_get_connection(proxy) else { throw .noSessionBus(detail: BusCall.connectionClosed) }
        // Nobody owning it now is a gone session too.
        let current = try nameOwner(BusEnvironment.serviceName, on: connection)
        let address = UInt(bitPattern: Int(bitPattern: service))
        let known = Self.sessionOwner.withLock { $0 }
        guard let known, known.service == address, known.owner == current else {
            throw ServiceFailure.sessionGone.error
        }
    }

    /// Fresh session keys to try after a rejected one (`ServiceFailure.rejectsSessionKey`).
    private static let maximumKeyRetries = 4
}
