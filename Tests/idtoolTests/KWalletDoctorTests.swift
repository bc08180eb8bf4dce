import Foundation
import TestSupport
import Testing

@testable import idtool

#if canImport(Glibc)
import Glibc
#endif

/// `idtool doctor` against a real KWallet daemon (ksecretd, kwalletd6 or kwalletd5, whichever serves
/// the Secret Service on this system) whose Secret Service API is off, on a bus of its own with
/// nothing activatable (so no other provider answers instead); and against a bus that could only
/// start one. Runs under any provider.
@Suite("doctor and KWallet", .needs(.secretService))
struct KWalletDoctorTests {
    @Test("KWallet with apiEnabled=false: doctor says to turn on kwalletrc's apiEnabled")
    func apiDisabled() throws {
        try requireTestKeyring()
        let bus = try BusWithoutSecretService()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("kwallet-off-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let config = home.appendingPathComponent(".config")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        try "[Wallet]\nFirst Use=false\n\n[org.freedesktop.secrets]\napiEnabled=false\n"
            .write(to: config.appendingPathComponent("kwalletrc"), atomically: true, encoding: .utf8)
        var environment = Idtool.baseEnvironment
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        environment["HOME"] = home.path
        environment["XDG_CONFIG_HOME"] = config.path
        environment["XDG_DATA_HOME"] = home.appendingPathComponent(".local/share").path
        environment["QT_QPA_PLATFORM"] = "offscreen"
        let kwalletd = TestProvider.kwalletDaemon
        let daemon = try ChildProcess("/usr/bin/\(kwalletd)", [], environment: environment)
        defer {
            kill(daemon.pid, SIGKILL)
            _ = try? daemon.wait()
        }
        // Wait until it owns its name (a call to it succeeds); bounded, not timed.
        var up = false
        for _ in 0..<400 where !up {
            let ping = try Idtool.runProgram(
                URL(fileURLWithPath: "/usr/bin/dbus-send"),
                ["--session", "--print-reply", "--dest=org.kde.\(kwalletd)", "/", "org.freedesktop.DBus.Peer.Ping"],
                environment: environment)
            up = ping.status == 0
            if !up { usleep(25_000) }
        }
        try #require(up, "\(kwalletd) did not come up on the private bus")

        let run = try Idtool.run(["doctor"], environment: environment)
        #expect(run.status == 69, "\(run.stdoutText)\(run.stderr)")
        #expect(run.stdoutText.contains("FAIL secret service: org.freedesktop.secrets has no owner, but KWallet"), "\(run.stdoutText)")
        #expect(run.stdoutText.contains("apiEnabled=true under [org.freedesktop.secrets]"), "\(run.stdoutText)")
        #expect(run.stdoutText.contains("restart \(kwalletd)"), "\(run.stdoutText)")
    }

    // Issue 34: with ksecretd installed but not started, doctor claimed its API was off.
    @Test(
        "a KWallet daemon the bus could start but that does not run: doctor says how to start it, not that its API is off",
        arguments: KWalletOnBus.daemons.map(\.daemon))
    func notRunning(daemon: String) throws {
        let names = try #require(KWalletOnBus.daemons.first { $0.daemon == daemon }).names
        let bus = try BusWithoutSecretService(activatable: [names.last!])
        var environment = Idtool.baseEnvironment
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        environment["XDG_CONFIG_HOME"] = FileManager.default.temporaryDirectory.appendingPathComponent("none-\(UUID().uuidString)").path
        let run = try Idtool.run(["doctor"], environment: environment)
        #expect(run.status == 69, "\(run.stdoutText)\(run.stderr)")
        #expect(run.stdoutText.contains("FAIL secret service: org.freedesktop.secrets has no owner; KWallet's \(daemon) is installed but not running"), "\(run.stdoutText)")
        #expect(run.stdoutText.contains("--dest=\(names.last!)"), "\(run.stdoutText)")
        #expect(!run.stdoutText.contains("is off"), "\(run.stdoutText)")
    }
}
