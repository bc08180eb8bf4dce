/// What a store gives the one change watch (`ChangeWatch`): when to look (its triggers) and what
/// a look sees (snapshots). The watch compares the snapshots with `ChangeRule`; a source decides no
/// change itself.
///
/// The watch calls `firstLook` and `look` on its own serial queue only, so a source may keep state
/// of its own there.
protocol ChangeSource: Sendable {
    associatedtype Trigger: ChangeTrigger

    /// Starts handing triggers to `fire`, from any thread, until the returned closure runs. The
    /// watch subscribes before its first look, so that no change between the two is missed.
    func subscribe(_ fire: @escaping @Sendable (Trigger) -> Void) throws(KeyringError) -> @Sendable () -> Void

    /// The scope as it is now. Its errors are the watch's start errors.
    func firstLook() throws(KeyringError) -> ChangeSnapshot

    /// What `trigger` shows, given the last snapshot: the snapshots to compare in turn, usually one
    /// (none: nothing to compare). A look that fails is left to the next trigger.
    func look(after trigger: Trigger, from last: ChangeSnapshot) throws(KeyringError) -> [ChangeSnapshot]
}

/// A reason to look again, as a source's subscription hands it over.
protocol ChangeTrigger: Sendable {
    /// The trigger that stands for those dropped when too many wait: a full look.
    static var fullLook: Self { get }

    /// Whether a full look may stand for this trigger when too many wait (a change of owner may not).
    var mayDrop: Bool { get }

    /// Whether this trigger adds nothing to the waiting ones: looking at them shows what it would.
    func repeats(in waiting: [Self]) -> Bool
}

/// The trigger of a store that has one kind only: "something changed, look again" (an inotify
/// event, the memory keyring's notice).
enum LookAgain: ChangeTrigger {
    case look

    static var fullLook: LookAgain { .look }
    var mayDrop: Bool { true }
    /// One look waiting sees every change made before it runs.
    func repeats(in waiting: [LookAgain]) -> Bool { !waiting.isEmpty }
}
