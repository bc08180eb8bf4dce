#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if DEBUG && canImport(Glibc)
import Glibc
#endif

#if DEBUG
/// Test-only: with `KEYRINGIDENTITY_TEST_PAUSE=<stage>:<dir>`, the code writes `<dir>/reached` at
/// `stage` and waits (up to 30 s) for `<dir>/go`, so a test can act at an exact point: store a
/// twin during a creation (`insertIfAbsent`), unlock a collection between a watch's search and its
/// lock read. Debug builds only.
enum TestPause {
    static func at(_ stage: String) {
        guard let spec = ProcessInfo.processInfo.environment["KEYRINGIDENTITY_TEST_PAUSE"], spec.hasPrefix(stage + ":") else { return }
        let directory = String(spec.dropFirst(stage.count + 1))
        _ = FileManager.default.createFile(atPath: directory + "/reached", contents: Data())
        let files = FileManager.default
        for _ in 0..<3000 where !files.fileExists(atPath: directory + "/go") && files.fileExists(atPath: directory) { usleep(10_000) }
    }
}
#else
enum TestPause {
    @inline(__always) static func at(_ stage: String) {}
}
#endif
