internal import CLibSecret
internal import KeyringShim

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A file's times as the resolver's rules need them. Shared with DeviceIdentity, which has no C
/// module of its own.
package enum FileTimes {
    /// When the file at `path` was last modified (a final symlink's own time); nil when it is gone.
    package static func modified(_ path: String) -> Date? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
    }

    /// When the file at `path` was created (its inode's birth: a write by rename makes a new one,
    /// a change in place keeps it), or nil where the filesystem records none.
    package static func born(_ path: String) -> Date? {
        var seconds: gint64 = 0
        var nanoseconds: guint32 = 0
        guard kr_birth_time(path, &seconds, &nanoseconds) != 0 else { return nil }
        return Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9)
    }

    /// The best answer to "when was this content written by whoever wrote it whole": the birth
    /// time, else the last modification (later than the truth after a change in place).
    package static func bornOrModified(_ path: String) -> Date? {
        born(path) ?? modified(path)
    }
}
