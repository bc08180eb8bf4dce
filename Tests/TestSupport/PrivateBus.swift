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
    /// - Parameter activatable: names the bus lists as activatable (their activation runs
    ///   /bin/false): a daemon that is installed but not running, as ListActivatableNames shows it.
    /// - Throws: `ChildProcessError`, or `StartFailure` when dbus-daemon did not start.
    public init(activatable: [String] = []) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("bus-\(UUID().uuidString)")
        let services = directory.appendingPathComponent("services")
        try FileManager.default.createDirectory(at: services, withIntermediateDirectories: true)
        for name in activatable {
            try "[D-BUS Service]\nName=\(name)\nExec=/bin/false\n"
                .write(to: services.appendingPathComponent("\(name).service"), atomically: true, encoding: .utf8)
        }
        // Only that <servicedir>, no <standard_session_servicedirs/>: nothing else can be activated.
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:tmpdir=/tmp</listen>
              <servicedir>\(services.path)</servicedir>
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

/// The session bus as a sandboxed app sees it: xdg-dbus-proxy --filter in front of this process's
/// bus, letting it talk to `talk` alone (a Flatpak's `--talk-name`), which hides every other name
/// and refuses RequestName. Stopped when this is released.
public final class FilteringBusProxy {
    /// The proxy's address, for DBUS_SESSION_BUS_ADDRESS.
    public let address: String
    private let proxy: ChildProcess
    private let directory: URL

    /// Starts the proxy and waits for its socket.
    /// - Throws: `ChildProcessError`, or `StartFailure` when xdg-dbus-proxy is missing or made no socket.
    public init(talk: [String] = ["org.freedesktop.secrets"]) throws {
        let environment = ProcessInfo.processInfo.environment
        guard let bus = environment["DBUS_SESSION_BUS_ADDRESS"], !bus.isEmpty else {
            throw BusWithoutSecretService.StartFailure(detail: "no session bus to put the proxy in front of")
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/xdg-dbus-proxy") else {
            throw BusWithoutSecretService.StartFailure(detail: "xdg-dbus-proxy is missing: run scripts/bootstrap")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("proxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("bus").path
        proxy = try ChildProcess(
            "/usr/bin/xdg-dbus-proxy", ([bus, socket, "--filter"] + talk.map { "--talk=\($0)" }).map { Array($0.utf8) },
            environment: environment)
        address = "unix:path=" + socket
        // The socket exists once the proxy listens; a proxy that exited made none.
        for _ in 0..<3000 where access(socket, F_OK) != 0 {
            if waitpid(proxy.pid, nil, WNOHANG) == proxy.pid {
                throw BusWithoutSecretService.StartFailure(detail: "xdg-dbus-proxy exited before it listened")
            }
            usleep(10_000)
        }
        guard access(socket, F_OK) == 0 else { throw BusWithoutSecretService.StartFailure(detail: "xdg-dbus-proxy made no socket in 30 s") }
    }

    deinit {
        kill(proxy.pid, SIGTERM)
        _ = try? proxy.wait()
        try? FileManager.default.removeItem(at: directory)
    }
}

extension ChildResult {
    /// stdout as text.
    public var text: String { String(decoding: stdout, as: UTF8.self) }
}
