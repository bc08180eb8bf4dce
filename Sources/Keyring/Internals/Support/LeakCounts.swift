/// Counts of long-lived objects, for leak tests in this package: a count that returns to where it
/// was after thousands of cycles is a deterministic check, where memory figures move with the
/// allocator and the machine's load.
package enum LeakCounts {
    /// Secret Service change watches alive now.
    package static var serviceWatches: Int { ServiceChangeSource.liveCount.load(ordering: .relaxed) }
    /// libsecret file-backend change watches alive now (each holds a thread and an inotify descriptor until it ends).
    package static var fileWatches: Int { FileDirectoryWatch.liveCount.load(ordering: .relaxed) }
    /// Listeners registered with the one subscription to the Secret Service's signals.
    package static var signalListeners: Int { ServiceSignals.listenerCount }
}
