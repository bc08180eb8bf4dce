/// What one provider does differently from the Secret Service specification, as data. Each
/// provider's file defines its value; code asks these, never which provider it talks to. A daemon
/// nobody knows gets `strict`: the answers that lose nothing whichever provider it turns out to be.
/// `package`, so that the tests ask the same facts (TestSupport's `TestProvider.quirks`) instead of
/// provider names.
package struct Quirks: Equatable, Sendable {
    /// SearchItems lists a locked collection's matches in its locked list, so a search that
    /// returns no path at all proves the item absent. Where false (KeePassXC hides a locked
    /// database's items), a miss while a collection is locked is unknown.
    package var listsLockedMatches: Bool
    /// Item paths are numbered anew on every start: an earlier search's path may name another item.
    package var renumbersItems: Bool
    /// A write is answered before its value is saved, its attributes at once: an item written
    /// non-empty carries `ProviderAttributes.nonEmptyValue`, so that a loss reads as `.valueLost`.
    package var savesValuesLate: Bool
    /// An item whose `type` attribute is `map` is kept as a JSON object of strings, whatever it held.
    package var keepsTypeMapAsJSON: Bool
    /// A value holding a field reference (`{REF:P@I:…}`) is refused, leaving an empty item behind.
    package var rejectsFieldReferences: Bool
    /// `Item.SetSecret` is signalled (ItemChanged); elsewhere a secret-only update sets the item's
    /// label again to announce it to watchers.
    package var signalsSetSecret: Bool
    /// A write to a locked collection is answered with success and dropped: the item's lock state
    /// is read back after a secret-only update.
    package var dropsWritesWhileLocked: Bool
    /// The store is written to disk on a timer, not on exit, unless asked to (`KWalletFlush`).
    package var flushesOnRequest: Bool
    /// The session key may differ from libsecret's without an error (`SessionCheck`).
    package var mayMismatchSessionKeys: Bool
    /// A prompt may be dismissed while its dialog is open; gnome-keyring 42 aborts on that, so its
    /// dialog is left open for the user instead.
    package var survivesPromptDismiss: Bool
    /// Every item change is signalled, as the tests verify: a read may trust `ItemPathCache`.
    package var signalsEveryItemChange: Bool
    /// A secret's content type is kept; gnome-keyring reads every secret back as `text/plain`.
    package var keepsContentType: Bool
    /// Another client's replacing `CreateItem` over this library's item (`secret-tool store`,
    /// python-keyring's `set_password`) replaces it, headless. KeePassXC (2.7.4 to 2.7.10) opens a
    /// dialog or leaves it unanswered; oo7-daemon replaces only items of exactly the attributes
    /// sent, and ours have more, so a second item appears beside ours. This library's own updates
    /// send one only where `keepsItemChanges` is false, with the item's exact attributes.
    package var answersReplacingCreate: Bool
    /// A write is on disk when it is answered (KWallet once `KWalletFlush` ran): a kill right after
    /// loses nothing. KeePassXC saves its database a moment later, ksecretd a value 5 s later.
    package var savesBeforeAnswering: Bool
    /// Item paths number items in the order they were made, so two made within one `Created` second
    /// are still ordered (`ItemOrder`); KeePassXC's are random UUIDs.
    package var numbersPathsInCreationOrder: Bool
    /// `Item.SetSecret` and the item's `Label` and `Attributes` are saved. oo7-daemon keeps them in
    /// memory only, and its restart brings the old item back: there every update is a replacing
    /// `CreateItem`, which it saves before it answers.
    package var keepsItemChanges: Bool
    /// `Item.Delete` also removes from the provider's file every item of the collection whose
    /// attributes include the deleted one's (oo7-daemon deletes by attributes); they stay on the bus
    /// until its restart. Each is saved again after the delete, as it was.
    package var deletesAttributeSupersets = false

    /// For a daemon nobody knows: a miss is not proof while a collection is locked, paths may move,
    /// writes are read back, prompts are never dismissed, and no path is cached.
    package static let strict = Quirks(
        listsLockedMatches: false, renumbersItems: true, savesValuesLate: false, keepsTypeMapAsJSON: false,
        rejectsFieldReferences: false, signalsSetSecret: false, dropsWritesWhileLocked: true, flushesOnRequest: false,
        mayMismatchSessionKeys: false, survivesPromptDismiss: false, signalsEveryItemChange: false, keepsContentType: false,
        answersReplacingCreate: false, savesBeforeAnswering: false, numbersPathsInCreationOrder: false,
        keepsItemChanges: true)
}
