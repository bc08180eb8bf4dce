/// What one provider does differently from the Secret Service specification, as data. Each
/// provider's file defines its value; code asks these, never which provider it talks to. A daemon
/// nobody knows (oo7-daemon among them) gets `strict`: the answers that lose nothing whichever
/// provider it turns out to be.
struct Quirks: Equatable {
    /// SearchItems lists a locked collection's matches in its locked list, so a search that
    /// returns no path at all proves the item absent. Where false (KeePassXC hides a locked
    /// database's items), a miss while a collection is locked is unknown.
    var listsLockedMatches: Bool
    /// Item paths are numbered anew on every start: an earlier search's path may name another item.
    var renumbersItems: Bool
    /// A write is answered before its value is saved, its attributes at once: an item written
    /// non-empty carries `ProviderAttributes.nonEmptyValue`, so that a loss reads as `.valueLost`.
    var savesValuesLate: Bool
    /// An item whose `type` attribute is `map` is kept as a JSON object of strings, whatever it held.
    var keepsTypeMapAsJSON: Bool
    /// A value holding a field reference (`{REF:P@I:…}`) is refused, leaving an empty item behind.
    var rejectsFieldReferences: Bool
    /// `Item.SetSecret` is signalled (ItemChanged); elsewhere a secret-only update sets the item's
    /// label again to announce it to watchers.
    var signalsSetSecret: Bool
    /// A write to a locked collection is answered with success and dropped: the item's lock state
    /// is read back after a secret-only update.
    var dropsWritesWhileLocked: Bool
    /// The store is written to disk on a timer, not on exit, unless asked to (`flushAfterWrite`).
    var flushesOnRequest: Bool
    /// The session key may differ from libsecret's without an error (`checkSession`).
    var mayMismatchSessionKeys: Bool
    /// A prompt may be dismissed while its dialog is open; gnome-keyring 42 aborts on that, so its
    /// dialog is left open for the user instead.
    var survivesPromptDismiss: Bool
    /// Every item change is signalled, as the tests verify: a read may trust `ItemPathCache`.
    var signalsEveryItemChange: Bool

    /// For a daemon nobody knows: a miss is not proof while a collection is locked, paths may move,
    /// writes are read back, prompts are never dismissed, and no path is cached.
    static let strict = Quirks(
        listsLockedMatches: false, renumbersItems: true, savesValuesLate: false, keepsTypeMapAsJSON: false,
        rejectsFieldReferences: false, signalsSetSecret: false, dropsWritesWhileLocked: true, flushesOnRequest: false,
        mayMismatchSessionKeys: false, survivesPromptDismiss: false, signalsEveryItemChange: false)
}
