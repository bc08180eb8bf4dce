import Foundation
import Keyring
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The file backend as a Flathub app gets it, with no stand-in: the real `xdg-desktop-portal` (1.16
/// on Debian 12) on the test bus with gnome-keyring as its Secret backend, and `idtool` (and the
/// consumer) in a bubblewrap sandbox that carries a `/.flatpak-info` naming an app ID and reaches
/// the bus only through a filtering xdg-dbus-proxy, as Flatpak sets one up (scripts/with-portal).
/// Needs scripts/with-keyring with gnome-keyring; skips, saying why, where a piece cannot run.
// Skips are traits, not Test.cancel (Swift 6.3): the tests build with Debian's Swift 6.2 too. What
// they ask lives outside the suite's type, which its own attribute cannot name.
private enum RealPortal {
    static let harness = repoRoot.appendingPathComponent("scripts/with-portal").path

    /// scripts/with-keyring's private bus, with gnome-keyring as the portal's Secret backend.
    static var hasItsBus: Bool {
        let environment = ProcessInfo.processInfo.environment
        return !(environment["DBUS_SESSION_BUS_ADDRESS"] ?? "").isEmpty && !(environment["WITH_KEYRING_ROOT"] ?? "").isEmpty
            && TestProvider.isGnomeKeyring && !TestProvider.usesFileBackend
    }

    /// False when `with-portal check` says a piece is missing here (69); any other failure is the test's.
    static func canRun() throws -> Bool { try ChildProcess.run(harness, ["check"]).status != 69 }

    static let consumerBinary = repoRoot.appendingPathComponent("Tests/Consumer/.build/debug/consumer").path

    /// Whether the consumer is built, and not older than this build's idtool: one built from older
    /// sources would test them, not these.
    static var consumerIsCurrent: Bool {
        func modified(_ path: String) -> Date? { (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date }
        guard FileManager.default.isExecutableFile(atPath: consumerBinary) else { return false }
        if let tool = idtoolPath, let built = modified(consumerBinary), let current = modified(tool), built < current { return false }
        return true
    }
}

@Suite(
    "file backend: the real Secret portal (xdg-desktop-portal, gnome-keyring, bubblewrap)", .serialized, .needs(.providerFree),
    .enabled(if: RealPortal.hasItsBus, "the real portal needs scripts/with-keyring's private bus, with gnome-keyring as its Secret backend"),
    .enabled("the real portal can run here (scripts/with-portal check does not exit 69)") { try RealPortal.canRun() })
struct FileRealPortalTests {
    static let root = repoRoot
    static let harness = RealPortal.harness

    /// The real portal, started for one test and stopped after it (so the stand-in suite can own its name).
    final class Portal {
        init() throws {
            let check = try Self.harness(["check"])
            try #require(check.status == 0, "with-portal check: \(check.stderr)")
            let start = try Self.harness(["start"])
            try #require(start.status == 0, "with-portal start: \(start.stderr)")
        }

        deinit { _ = try? Self.harness(["stop"]) }

        static func harness(_ arguments: [String], stdin: Data? = nil) throws -> ChildResult {
            try ChildProcess.run(FileRealPortalTests.harness, arguments, stdin: stdin)
        }

        /// Runs `program` as the Flatpak app `app` (the suite's G_DEBUG=fatal-criticals goes in too),
        /// under coreutils' timeout as a watchdog: a hang is a failure (124), not a stuck suite.
        func run(_ app: String, _ program: String, _ arguments: [String], stdin: Data? = nil) throws -> ChildResult {
            try ChildProcess.run(
                "/usr/bin/timeout", ["--kill-after=5", "120", FileRealPortalTests.harness, "run", app, program] + arguments, stdin: stdin)
        }

        func idtool(_ app: String, _ arguments: [String], stdin: Data? = nil) throws -> ChildResult {
            let binary = try #require(idtoolPath, "idtool was not built next to the tests; run `swift build --build-tests` first")
            return try run(app, binary, arguments, stdin: stdin)
        }

        /// ~/.var/app/APP, as Flatpak names it; its data/keyrings holds the app's keyring file.
        func appDirectory(_ app: String) throws -> String {
            try Self.harness(["app-dir", app]).text.trimmingCharacters(in: .newlines)
        }

        func keyringFile(_ app: String) throws -> String { try appDirectory(app) + "/data/keyrings/default.keyring" }
    }

    /// A valid app ID nobody used yet (the harness keeps each app's files under ~/.var/app/ID).
    static func appID(_ tag: String) -> String {
        "org.keyringidentity.Test\(tag).a" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12)
    }

    static let keyringCtl = root.appendingPathComponent("scripts/keyring-ctl").path

    /// The per-app secret gnome-keyring's portal backend keeps: one item, `app_id` = the app, in `login`.
    /// gnome-keyring 42 lists an item its portal backend made (SearchItems) but serves no D-Bus object
    /// for it until it loads the keyring again, so it is restarted first (the portal stays up).
    static func portalSecret(of app: String) throws -> [(item: KeyringItem, secret: Data)] {
        let restart = try ChildProcess.run(keyringCtl, ["restart"])
        try #require(restart.status == 0, "keyring-ctl restart: \(restart.stderr)")
        return try Keyring(backend: .secretService).readAll(["app_id": app])
    }

    @Test("a sandboxed idtool gets its key from the real portal, keeps items and identifier in ~/.var/app/ID, and reads them again")
    func sandboxedApp() throws {
        let portal = try Portal()
        let app = Self.appID("One")
        let item = uniqueID("portal")
        let doctor = try portal.idtool(app, ["doctor"])
        #expect(
            doctor.text.contains("ok keyring backend: file (libsecret's file backend), chosen in a sandbox"),
            "\(doctor.text)\(doctor.stderr)")
        let set = try portal.idtool(app, ["item", "set", item], stdin: Data("via the real portal".utf8))
        #expect(set.status == 0, "\(set.stderr)")
        let first = try portal.idtool(app, ["get", "--app", "com.example.editor"])
        #expect(first.status == 0 && first.stderr.isEmpty, "\(first.stderr)")
        let identifier = first.text.trimmingCharacters(in: .newlines)
        #expect(!identifier.isEmpty)
        // The file is the app's own, where Flatpak puts XDG_DATA_HOME.
        let file = try portal.keyringFile(app)
        #expect(FileManager.default.fileExists(atPath: file), "no keyring file at \(file)")
        // Each run is a new process in a new sandbox, so the key is asked for again: the same one.
        let again = try portal.idtool(app, ["get", "--app", "com.example.editor"])
        #expect(again.status == 0 && again.text.trimmingCharacters(in: .newlines) == identifier, "\(again.stderr)")
        let value = try portal.idtool(app, ["item", "get", item])
        #expect(value.status == 0 && value.text == "via the real portal", "\(value.stderr)")
        // gnome-keyring keeps one 64-byte secret for this app in its login collection, and nothing
        // of what the app stored: that is in the file.
        let secrets = try Self.portalSecret(of: app)
        #expect(secrets.count == 1, "\(secrets.map(\.item))")
        #expect(secrets.first?.secret.count == 64)
        #expect(
            secrets.first?.item.objectPath.hasPrefix("/org/freedesktop/secrets/collection/login/") == true,
            "\(secrets.map(\.item.objectPath))")
        #expect(try Keyring(backend: .secretService).search(["service": item]).isEmpty)
        // The sandbox's bus is the proxy's: the Secret Service is not there, the portal is.
        let secretsName = try portal.run(
            app, "/usr/bin/dbus-send",
            ["--session", "--print-reply", "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.DBus.Peer.Ping"])
        #expect(secretsName.status != 0 && secretsName.stderr.contains("ServiceUnknown"), "\(secretsName.stderr)")
        let portalName = try portal.run(
            app, "/usr/bin/dbus-send",
            [
                "--session", "--print-reply", "--dest=org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop",
                "org.freedesktop.DBus.Peer.Ping",
            ])
        #expect(portalName.status == 0, "\(portalName.stderr)")
    }

    @Test("a second app ID gets another key and cannot open the first app's file: a wrong key (65), no identifier made")
    func secondApp() throws {
        let portal = try Portal()
        let first = Self.appID("First")
        let second = Self.appID("Second")
        let item = uniqueID("portal")
        #expect(try portal.idtool(first, ["item", "set", item], stdin: Data("first's".utf8)).status == 0)
        let mine = try portal.idtool(first, ["get", "--app", "com.example.editor"])
        #expect(mine.status == 0, "\(mine.stderr)")
        let theirs = try portal.idtool(second, ["get", "--app", "com.example.editor"])
        #expect(theirs.status == 0 && theirs.text != mine.text, "\(theirs.stderr)")
        let firstSecret = try #require(Self.portalSecret(of: first).first?.secret)
        let secondSecret = try #require(Self.portalSecret(of: second).first?.secret)
        #expect(firstSecret != secondSecret)
        // The second app handed the first app's file (Flatpak never shows it; this is the key check).
        let target = try portal.keyringFile(second)
        let copied = try Data(contentsOf: URL(fileURLWithPath: try portal.keyringFile(first)))
        try copied.write(to: URL(fileURLWithPath: target))
        let get = try portal.idtool(second, ["item", "get", item])
        #expect(get.status == 65 && get.text.isEmpty, "\(get.status): \(get.text) \(get.stderr)")
        #expect(get.stderr.contains("does not open with this key"), "\(get.stderr)")
        // Its identifier: its own, from its backup file, said so; never the first app's, never a new one.
        let identifier = try portal.idtool(second, ["get", "--app", "com.example.editor"])
        #expect(identifier.status == 0 && identifier.text == theirs.text, "\(identifier.status): \(identifier.stderr)")
        #expect(
            identifier.stderr.contains("served from the backup file") && identifier.stderr.contains("does not open with this key"),
            "\(identifier.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == copied, "the refused file was changed")
    }

    @Test("the app's portal secret gone from gnome-keyring is a wrong key (65), never a new identifier; put back, all as before")
    func secretGone() throws {
        let portal = try Portal()
        let app = Self.appID("Gone")
        let item = uniqueID("portal")
        #expect(try portal.idtool(app, ["item", "set", item], stdin: Data("kept".utf8)).status == 0)
        let first = try portal.idtool(app, ["get", "--app", "com.example.editor"])
        #expect(first.status == 0, "\(first.stderr)")
        let original = try #require(Self.portalSecret(of: app).first)
        try Keyring(backend: .secretService).delete(item: original.item)
        let file = try portal.keyringFile(app)
        let before = try Data(contentsOf: URL(fileURLWithPath: file))
        // The portal makes a fresh secret for the app: the file does not open with it.
        let lost = try portal.idtool(app, ["item", "get", item])
        #expect(lost.status == 65 && lost.text.isEmpty, "\(lost.status): \(lost.text) \(lost.stderr)")
        let identifier = try portal.idtool(app, ["get", "--app", "com.example.editor"])
        #expect(
            identifier.status == 0 && identifier.text == first.text && identifier.stderr.contains("served from the backup file"),
            "\(identifier.status): \(identifier.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before, "the refused file was changed")
        // The original secret back in the login collection (the fresh one removed): all reads as before.
        for fresh in try Self.portalSecret(of: app) { try Keyring(backend: .secretService).delete(item: fresh.item) }
        try Keyring(backend: .secretService).store(
            original.secret, attributes: ["app_id": app], label: "", contentType: "application/octet-stream")
        let back = try portal.idtool(app, ["item", "get", item])
        #expect(back.status == 0 && back.text == "kept", "\(back.stderr)")
        let same = try portal.idtool(app, ["get", "--app", "com.example.editor"])
        #expect(same.status == 0 && same.text == first.text && same.stderr.isEmpty, "\(same.stderr)")
    }

    @Test("a portal whose backend does not answer ends in a typed timeout within --timeout, not a hang")
    func backendSilent() throws {
        let portal = try Portal()
        let app = Self.appID("Silent")
        #expect(try portal.idtool(app, ["item", "set", "x"], stdin: Data("v".utf8)).status == 0)
        // Stopped, gnome-keyring never writes the secret nor answers the portal, which never sends Response.
        let paused = try PausedDaemon()
        defer { paused.resume() }
        let get = try portal.idtool(app, ["item", "get", "--timeout", "2", "x"])
        paused.resume()
        #expect(get.status == 75, "\(get.status): \(get.stderr)")
        // gnome-keyring 42 then fails the portal's later requests ("The operation was cancelled", a
        // typed 69 here) until it restarts: the closed request seems to leave its portal backend cancelled.
        let restart = try ChildProcess.run(Self.keyringCtl, ["restart"])
        try #require(restart.status == 0, "keyring-ctl restart: \(restart.stderr)")
        let after = try portal.idtool(app, ["item", "get", "x"])
        #expect(after.status == 0 && after.text == "v", "\(after.status): \(after.stderr)")
    }

    @Test(
        "the consumer package (Keyring and DeviceIdentity linked from outside) runs in the sandbox on the portal's key",
        .enabled(
            if: RealPortal.consumerIsCurrent,
            "the consumer, built from these sources: run `swift build --package-path Tests/Consumer` after this build"))
    func consumer() throws {
        let portal = try Portal()
        let binary = RealPortal.consumerBinary
        let app = Self.appID("Consumer")
        let run = try portal.run(app, binary, [])
        #expect(run.status == 0, "\(run.text)\(run.stderr)")
        #expect(run.text.contains("consumer: OK: DeviceIdentity getting-started article"), "\(run.text)")
        #expect(FileManager.default.fileExists(atPath: try portal.keyringFile(app)))
    }
}
