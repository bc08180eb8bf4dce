// keyring-sandbox: runs a command with a throwaway, unlocked Secret Service keyring in a private
// D-Bus session, for an app's tests and CI (`swift run keyring-sandbox -- swift test`).
import Foundation

#if canImport(Glibc)
import Glibc
#endif

// First, before any thread exists, so that every thread inherits the mask and the run loop
// takes each forwarded signal with sigwaitinfo.
blockWaitedSignals()
becomeSubreaper()

do {
    switch try parse(Array(CommandLine.arguments.dropFirst())) {
    case .help:
        print(usage)
        exit(0)
    case .run(let options):
        exit(Sandbox(options: options, environment: ProcessInfo.processInfo.environment).run())
    }
} catch {
    report("\(error.message)\n\(usage.prefix { $0 != "\n" })")
    exit(64)
}
