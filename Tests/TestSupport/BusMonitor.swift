// What the session bus routes while a test runs: dbus-monitor --profile, one line per message.
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A `dbus-monitor --profile` on the session bus, from `init` (once the bus made it a monitor)
/// to `stop()`: every message in the order the bus routed it, which is the order each receiver
/// gets them in.
public final class BusMonitor {
    /// One routed message.
    public struct Message: Sendable, Equatable {
        /// "mc" (method call), "mr" (method return), "err" or "sig".
        public var type: String
        public var serial: Int
        public var sender: String
        public var destination: String
        /// A call's member ("SearchItems"); empty for replies.
        public var member: String
        /// A reply's call serial; nil for calls and signals.
        public var inReplyTo: Int?
    }

    private let child: ChildProcess
    private let log: String
    private var stopped = false

    /// Starts the monitor and returns once the bus has made it one.
    public init() throws {
        log = FileManager.default.temporaryDirectory.appendingPathComponent("monitor-\(UUID().uuidString).log").path
        child = try ChildProcess(
            "/bin/sh", ["-c", "exec dbus-monitor --session --profile >\"$0\" 2>&1", log].map { Array($0.utf8) },
            environment: ProcessInfo.processInfo.environment)
        // A monitor gets NameLost for its own name once BecomeMonitor took effect: an event, no clock.
        while !Self.lines(log).contains(where: { $0.last == "NameLost" }) {
            guard isRunning else { throw ChildProcessError(what: "dbus-monitor (\(Self.lines(log)))", code: ECHILD) }
            usleep(10_000)
        }
    }

    /// Whether dbus-monitor still runs (neither gone nor a zombie).
    private var isRunning: Bool {
        kill(child.pid, 0) == 0 && (try? String(contentsOfFile: "/proc/\(child.pid)/stat", encoding: .utf8))?.contains(") Z") != true
    }

    deinit { stop() }

    /// Stops the monitor (idempotent); `messages` then holds every message the bus routed before.
    /// A SIGTERM at once lost the last ones, still on their way to the monitor under load (CI:
    /// a check then saw none of a client's calls). So a signal on a path of its own goes first:
    /// the bus routes to the monitor in order, so once that signal is in the log, so is every
    /// message before it. The wait is for that event, with a deadline far above any load.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        let marker = "/io/keyringidentity/monitor/sync_" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        if let sender = try? ChildProcess(
            "/usr/bin/dbus-send", ["--session", "--type=signal", marker, "io.keyringidentity.Monitor.Sync"].map { Array($0.utf8) },
            environment: ProcessInfo.processInfo.environment)
        {
            _ = try? sender.wait()
            let deadline = ContinuousClock.now + .seconds(300)
            while ContinuousClock.now < deadline, isRunning,
                !Self.lines(log).contains(where: { $0.contains(where: { $0 == marker }) })
            {
                usleep(10_000)
            }
        }
        kill(child.pid, SIGTERM)
        _ = try? child.wait()
    }

    /// The messages seen so far, in routing order.
    public var messages: [Message] {
        Self.lines(log).compactMap { fields -> Message? in
            guard ["mc", "mr", "err", "sig"].contains(String(fields.first ?? "")), fields.count >= 5,
                let serial = Int(fields[2])
            else { return nil }
            let isReply = fields[0] == "mr" || fields[0] == "err"
            return Message(
                type: String(fields[0]), serial: serial, sender: String(fields[3]), destination: String(fields[4]),
                member: !isReply && fields.count >= 8 ? String(fields[7]) : "",
                inReplyTo: isReply && fields.count >= 6 ? Int(fields[5]) : nil)
        }
    }

    private static func lines(_ path: String) -> [[Substring]] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
    }

    /// Each client connection that sent `service` (its well-known name or `owner`, its unique name)
    /// a second call before the service answered the first: "SENDER: FIRST then SECOND". A
    /// connection's first calls must not reach gnome-keyring together (see PlainRead).
    public static func callsBeforeFirstReply(_ messages: [Message], service: String, owner: String) -> [String] {
        var violations: [String] = []
        var first: [String: Message] = [:]
        var answered: Set<String> = []
        for message in messages {
            if message.type == "mc", [service, owner].contains(message.destination), message.sender != owner {
                if let call = first[message.sender] {
                    if !answered.contains(message.sender) {
                        violations.append("\(message.sender): \(call.member) then \(message.member) before its reply")
                        answered.insert(message.sender)  // one finding per connection
                    }
                } else {
                    first[message.sender] = message
                }
            } else if message.type == "mr" || message.type == "err", message.sender == owner,
                let call = first[message.destination], message.inReplyTo == call.serial
            {
                answered.insert(message.destination)
            }
        }
        return violations
    }
}
