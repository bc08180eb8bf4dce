/// gnome-keyring (42 to 48): the reference the others are measured against.
extension Quirks {
    /// gnome-keyring lists locked matches, keeps paths, signals every change but `SetSecret`, and
    /// aborts when a prompt is dismissed while its dialog is open (42.1, gkd-secret-unlock.c).
    package static let gnomeKeyring = Quirks(
        listsLockedMatches: true, renumbersItems: false, savesValuesLate: false, keepsTypeMapAsJSON: false,
        rejectsFieldReferences: false, signalsSetSecret: false, dropsWritesWhileLocked: false, flushesOnRequest: false,
        mayMismatchSessionKeys: false, survivesPromptDismiss: false, signalsEveryItemChange: true, keepsContentType: false,
        answersReplacingCreate: true, savesBeforeAnswering: true, numbersPathsInCreationOrder: true, keepsItemChanges: true)
}

extension Provider {
    /// gnome-keyring's private interface on its service object (oo7-daemon exports it too).
    static let gnomeKeyringInterface = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"
}
