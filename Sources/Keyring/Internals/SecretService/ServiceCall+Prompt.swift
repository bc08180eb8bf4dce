internal import CLibSecret
internal import KeyringShim

/// Locking and unlocking: Service.Unlock or Service.Lock on a collection, then the prompt the
/// service asks for (Prompt.Prompt, wait for Completed), in raw D-Bus so that the wait ends at the
/// call's deadline and on cancellation, which libsecret's prompt wait does not promise.
///
/// `ServiceCall.run` calls `unlockCollections(unlockTargets())` when an operation under `UnlockPolicy.prompt`
/// threw `.locked`, whatever found it, and retries the operation once. `Keyring.lockCollection()` and
/// `unlockCollection()` (Keyring+LockState.swift) come here too: this is the one home of lock changes.
extension ServiceCall {
    private static let serviceInterface = "org.freedesktop.Secret.Service"
    private static let promptInterface = "org.freedesktop.Secret.Prompt"

    /// The Secret Service's two lock calls.
    enum LockChange: String {
        case lock = "Lock"
        case unlock = "Unlock"
    }

    /// How a lock change ended.
    enum LockChangeOutcome {
        /// Done at once, or its prompt completed (the caller reads the state back when it matters).
        case completed
        /// Its prompt was dismissed.
        case dismissed
        /// Nobody answered its prompt before the deadline.
        case unanswered
    }

    /// `.locked(itemExists:)` for the objects at `paths` (items or collections), which the unlock
    /// under `.prompt` then opens (`unlockTargets`): every throw site that knows what is locked names it.
    func lockedError(at paths: [String], itemExists: Bool = true) -> KeyringError {
        notes.paths = paths
        return .locked(itemExists: itemExists)
    }

    /// Throws `.locked(itemExists: true)`, naming them for the unlock, when any of `items` is locked.
    func throwIfAnyLocked(_ items: [KeyringItem]) throws(KeyringError) {
        let locked = items.filter(\.isLocked)
        if !locked.isEmpty { throw lockedError(at: locked.map(\.objectPath)) }
    }

    /// The collections to unlock after an operation threw `.locked`: those holding what its throw
    /// site named (`lockedError`), or else the locked matches its last search saw; else, where the
    /// provider hides locked items (KeePassXC), every locked collection, since any of them may hold
    /// the item; else the default collection (a write into it). Never just the default when the
    /// item's collection is another one.
    func unlockTargets() throws(KeyringError) -> [String] {
        let all = try collections()
        var targets: [String] = []
        for match in notes.paths {
            // An item's collection is its parent object where the service has one by that path.
            let parent = match.lastIndex(of: "/").map { String(match[..<$0]) }
            let target = parent.flatMap { all.contains($0) ? $0 : nil } ?? match
            if !targets.contains(target) { targets.append(target) }
        }
        if targets.isEmpty, !provider().quirks.listsLockedMatches { targets = try lockedCollections() }
        if targets.isEmpty, let path = try defaultCollectionPath() { targets = [path] }
        return targets
    }

    /// Unlocks each of `paths` (collections or items), showing the service's unlock prompt when it
    /// has one. Returns once every prompt completed (or none was needed); the caller then retries.
    /// - Parameter itemExists: carried into the `.locked` this throws.
    /// - Throws: `.locked(itemExists:unlock: .dismissed)` when a prompt was dismissed,
    ///   `.locked(…, unlock: .unanswered)` when the deadline passed first (the prompt is dismissed,
    ///   except on gnome-keyring), `.cancelled` when the caller cancelled (likewise), or a failure
    ///   of the calls themselves; `.locked(itemExists:)` when there is nothing to unlock.
    func unlockCollections(_ paths: [String], itemExists: Bool) throws(KeyringError) {
        if paths.isEmpty { throw .locked(itemExists: itemExists) }
        for path in paths {
            switch try changeLock(.unlock, of: path) {
            case .completed: continue
            case .dismissed: throw .locked(itemExists: itemExists, unlock: .dismissed)
            case .unanswered: throw .locked(itemExists: itemExists, unlock: .unanswered)
            }
        }
    }

    /// Sends Lock or Unlock for the collection at `path` and runs the prompt the service returns, if any.
    /// - Returns: how it ended; `.completed` does not prove the new state (a "/" prompt may also
    ///   mean "nothing this call can change"): callers that must know read `Locked` back.
    /// - Throws: `.cancelled` when the caller cancelled while the prompt was open (it is dismissed,
    ///   except on gnome-keyring), or a failure of the calls themselves.
    func changeLock(_ change: LockChange, of path: String) throws(KeyringError) -> LockChangeOutcome {
        let (connection, owner) = try ownerConnection()
        defer { g_free(owner) }

        // Signals are dispatched on the thread-default context at subscription: a private one,
        // iterated below, so the wait needs no main loop of the caller's.
        let context = g_main_context_new()
        g_main_context_push_thread_default(context)
        defer {
            g_main_context_pop_thread_default(context)
            g_main_context_unref(context)
        }
        // Lock and Unlock both answer (aoo): the objects changed at once, and a prompt.
        let prompt = try callReturning(
            Self.string(kr_unlock_reply_prompt), connection, owner, BusCall.servicePath, Self.serviceInterface, change.rawValue,
            kr_variant_objpath_array_tuple(path), reply: "(aoo)")
        // "/" means done at once, or nothing this call can change: the caller's read-back tells which.
        if prompt == "/" { return .completed }

        // gnome-keyring (seen with 42.1) aborts when a prompt is dismissed while its dialog is
        // open (assertion in gkd-secret-unlock.c, perform_next_unlock): its dialog is left open
        // for the user instead, as a daemon nobody knows has it. Asked now, while the call can still talk.
        let mayDismiss = provider().quirks.survivesPromptDismiss
        let wait = PromptWait()
        let subscription = g_dbus_connection_signal_subscribe(
            connection, owner, Self.promptInterface, "Completed", prompt, nil, kr_signal_flags_none(), promptCompleted,
            Unmanaged.passRetained(wait).toOpaque(), releaseWait)
        defer {
            g_dbus_connection_signal_unsubscribe(connection, subscription)
            // GDBus frees the subscription's data from an idle on this context: run it (and
            // anything else queued there) before the context goes, as libsecret does.
            while g_main_context_iteration(context, 0) != 0 {}
        }
        // Cancellation (the caller's, or ServiceCall's deadline timer) wakes the wait.
        let wakeup = g_cancellable_connect(cancellable, wakeContext, UnsafeMutableRawPointer(context), nil)
        defer { g_cancellable_disconnect(cancellable, wakeup) }

        do throws(KeyringError) {
            // Prompt(window-id): "" as libsecret sends when it knows no window.
            _ = try callReturning(
                { _ in () }, connection, owner, prompt, Self.promptInterface, "Prompt", kr_variant_string_tuple(""), reply: "()")
            while !wait.completed && g_cancellable_is_cancelled(cancellable) == 0 {
                // A timeout source as a backstop; cancellation normally wakes the loop first.
                let timer = g_timeout_source_new(UInt32(remainingMilliseconds))!
                g_source_set_callback(timer, { _ in 0 }, nil, nil)
                g_source_attach(timer, context)
                g_main_context_iteration(context, 1)
                g_source_destroy(timer)
                g_source_unref(timer)
                if ContinuousClock.now >= deadline { break }
            }
        } catch .cancelled {
            // Cancelled while sending Prompt: handled below like a cancelled wait.
        } catch .serviceFailure {
            // No dialog could be shown at all: oo7-daemon answers Prompt with an error when no
            // prompter of its own is on the bus, as gnome-keyring dismisses one without a display.
            return .dismissed
        }
        if wait.completed { return wait.dismissed ? .dismissed : .completed }
        if mayDismiss {
            // Close the dialog: nobody is waiting for it any more. No reply is awaited.
            BusCall.send(connection, String(cString: owner), prompt, Self.promptInterface, "Dismiss", nil)
        }
        // The deadline timer cancels at the deadline; a cancellation before it is the caller's.
        if ContinuousClock.now >= deadline - .milliseconds(20) { return .unanswered }
        throw .cancelled
    }

    /// The service's connection and the unique name of its owner (free it with g_free).
    private func ownerConnection() throws(KeyringError) -> (OpaquePointer, UnsafeMutablePointer<gchar>) {
        let proxy = kr_service_proxy(service)
        guard let connection = g_dbus_proxy_get_connection(proxy), let owner = g_dbus_proxy_get_name_owner(proxy) else {
            throw .noSessionBus(detail: BusCall.connectionClosed)
        }
        return (connection, owner)
    }

    /// Wraps a shim reader that returns an owned C string.
    private static func string(_ read: @escaping (OpaquePointer?) -> UnsafeMutablePointer<gchar>?) -> (OpaquePointer) -> String? {
        { reply in
            guard let text = read(reply) else { return nil }
            defer { g_free(text) }
            return String(cString: text)
        }
    }

    /// One method call with the time left; `parse` reads the reply (freed here), nil meaning a wrong shape.
    private func callReturning<T>(
        _ parse: (OpaquePointer) -> T?, _ connection: OpaquePointer, _ owner: UnsafeMutablePointer<gchar>, _ path: String,
        _ interface: String, _ method: String, _ parameters: OpaquePointer?, reply replyType: String
    ) throws(KeyringError) -> T {
        try BusCall.call(
            connection, String(cString: owner), path, interface, method, parameters, reply: replyType, timeout: remainingMilliseconds,
            cancellable: cancellable, parse: parse)
    }
}

/// What the Completed signal said. Touched only on the waiting thread (the signal is dispatched
/// on its private context), so no lock is needed.
private final class PromptWait: @unchecked Sendable {
    var completed = false
    var dismissed = true
}

private let promptCompleted: GDBusSignalCallback = { _, _, _, _, _, parameters, data in
    guard let data else { return }
    let wait = Unmanaged<PromptWait>.fromOpaque(data).takeUnretainedValue()
    wait.dismissed = kr_prompt_completed_dismissed(parameters) != 0
    wait.completed = true
}

private let releaseWait: GDestroyNotify = { data in
    if let data { Unmanaged<PromptWait>.fromOpaque(data).release() }
}

private let wakeContext: GCallback = unsafeBitCast(
    { (_: UnsafeMutablePointer<GCancellable>?, data: gpointer?) in
        g_main_context_wakeup(OpaquePointer(data))
    } as @convention(c) (UnsafeMutablePointer<GCancellable>?, gpointer?) -> Void, to: GCallback.self)
