// A private session bus on which nothing can be activated: "a bus with no Secret Service".
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A dbus-daemon with no service directories, stopped when this is released.
public final class BusWithoutSecretService {
    /// The bus address, for DBUS_SESSION_BUS_ADDRESS.
    public let address: String
    private let pid: pid_t
    private let directory: URL

    /// Starts the bus.
    /// - Throws: `ChildProcessError`, or `StartFailure` when dbus-daemon did not start.
    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // No <servicedir> and no <standard_session_servicedirs/>: nothing can be activated.
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:tmpdir=/tmp</listen>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        let configPath = directory.appendingPathComponent("bus.conf").path
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        let daemon = try ChildProcess.run(
            "/usr/bin/dbus-daemon", ["--config-file=\(configPath)", "--print-address=1", "--print-pid=1", "--fork"])
        let lines = String(decoding: daemon.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        guard daemon.status == 0, lines.count >= 2, let pid = pid_t(lines[1]) else {
            throw StartFailure(detail: "exit \(daemon.status): \(daemon.stderr)")
        }
        address = lines[0]
        self.pid = pid
    }

    deinit {
        kill(pid, SIGTERM)
        try? FileManager.default.removeItem(at: directory)
    }

    /// dbus-daemon did not start.
    public struct StartFailure: Error {
        /// Its exit status and stderr.
        public let detail: String
    }
}

extension ChildResult {
    /// stdout as text.
    public var text: String { String(decoding: stdout, as: UTF8.self) }
}
