#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The executable name of a process, from /proc (comm is truncated to 15 bytes, cmdline is not).
enum ProcessName {
    static func of(pid: UInt32) -> String? {
        if let cmdline = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")),
            let first = cmdline.split(separator: 0).first,
            let path = String(data: Data(first), encoding: .utf8), !path.isEmpty
        {
            return path.split(separator: "/").last.map(String.init)
        }
        return nil
    }
}
