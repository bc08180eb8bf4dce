internal import CLibSecret

/// Remembers which item answered a `SecretStore` read, so a warm read is a single GetSecrets
/// call instead of SearchItems + GetAll + GetSecrets. The secret itself is never cached.
///
/// Correctness rests on Secret Service signals: any signal on the Service or Collection
/// interfaces (item created, deleted or changed, collection locked or unlocked), any
/// PropertiesChanged from the service, and any change of owner of `org.freedesktop.secrets`
/// empties the cache. The service emits a change's signal before it answers later calls, and the
/// bus keeps that order, so signals received by the time a reply arrives cover every change made
/// before it. A read therefore checks for signals after its GetSecrets reply and falls back to a
/// full search if any arrived.
///
/// The signals come from `ServiceSignals`, the one subscription to them, which counts them as they
/// arrive: nothing is queued for later.
///
/// It is used only where every item change is signalled, as the tests verify
/// (`Quirks.signalsEveryItemChange`: gnome-keyring).
///
/// Its state is touched only inside `ServiceCall.run`, which holds
/// the process-wide gate.
enum ItemPathCache {
    private struct State: ~Copyable {
        var entries: [String: String] = [:]
        /// Whether the service's owner was known at the last synchronize. Until it is, no rules match its
        /// signals, so nothing is served or remembered; each read asks again.
        var ownerKnown = false
        var seenSignals: UInt64 = 0
        /// Only for providers whose signals were verified (gnome-keyring): with a provider that
        /// misses ItemDeleted/ItemCreated, a reused path could name another item.
        /// Decided on the first cache hit, so a process that reads once never asks.
        var enabled: Bool?
    }

    private static let state = Guarded(State())

    /// Returns the signal count, emptying the cache if it moved; subscribes first when needed.
    static func synchronize(_ call: borrowing ServiceCall) -> UInt64 {
        state.withLock { state in
            let (now, ownerKnown, subscribed) = ServiceSignals.synchronize(call)
            if subscribed { state.enabled = nil }
            state.ownerKnown = ownerKnown
            if now != state.seenSignals || subscribed || !ownerKnown {
                state.entries.removeAll()
                state.seenSignals = now
            }
            return now
        }
    }

    static func path(for key: String, _ call: borrowing ServiceCall) -> String? {
        state.withLock { state in
            guard state.ownerKnown, let path = state.entries[key] else { return nil }
            if state.enabled == nil { state.enabled = call.provider().quirks.signalsEveryItemChange }
            return state.enabled == true ? path : nil
        }
    }

    /// Remembers `path` for `key`, unless a signal arrived since `signalCount` was taken.
    static func remember(_ path: String, for key: String, ifNoSignalsSince signalCount: UInt64) {
        state.withLock { state in
            guard state.ownerKnown, state.enabled != false, ServiceSignals.signalCount == signalCount else { return }
            state.entries[key] = path
        }
    }

    /// True when no signal arrived since `signalCount`.
    static func isQuiet(since signalCount: UInt64) -> Bool {
        ServiceSignals.signalCount == signalCount
    }

    static func forget(_ key: String) {
        state.withLock { _ = $0.entries.removeValue(forKey: key) }
    }
}
