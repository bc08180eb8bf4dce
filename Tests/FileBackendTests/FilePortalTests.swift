import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The file backend's key from the Secret portal, through libsecret's real portal code: a stand-in
/// for `org.freedesktop.portal.Desktop` on the test bus answers `RetrieveSecret` through the fd, as
/// xdg-desktop-portal does. The sandbox is marked with `SNAP_NAME`, which libsecret 0.20 treats like
/// `/.flatpak-info` (that file cannot be created here without changing the machine for everyone).
/// Needs the private session bus of scripts/with-keyring.
@Suite("file backend: the key from a Secret portal stand-in", .serialized, .needs(.providerFree))
struct FilePortalTests {
    static let standIn = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("portal-standin.py").path

    /// A running stand-in portal whose per-app secret derives from `seed`.
    final class Portal {
        let child: ChildProcess
        /// `mode`: "response-first", "short" (10 bytes, not 64) or "hold-open" (the pipe's write end kept open).
        init(seed: String, in sandbox: FileKeyringSandbox, mode: String? = nil) throws {
            let ready = sandbox.root.appendingPathComponent("portal-ready-\(UUID().uuidString)").path
            child = try ChildProcess(
                "/usr/bin/python3",
                Self.arguments(FilePortalTests.standIn, seed, ready) + (mode.map { Self.arguments($0) } ?? []),
                environment: ProcessInfo.processInfo.environment)
            // It writes the file once it owns the portal's name; it exits at once if it cannot.
            for _ in 0..<1000 where access(ready, F_OK) != 0 {
                if kill(child.pid, 0) != 0 { break }
                usleep(10_000)
            }
            guard access(ready, F_OK) == 0 else {
                let result = try? stop()
                throw StandInError(detail: result?.stderr ?? "no output")
            }
        }
        static func arguments(_ values: String...) -> [[UInt8]] { values.map { Array($0.utf8) } }
        @discardableResult
        func stop() throws -> ChildResult {
            kill(child.pid, SIGTERM)
            return try child.wait()
        }
    }

    struct StandInError: Error, CustomStringConvertible {
        var detail: String
        var description: String { "the portal stand-in did not start: \(detail)" }
    }

    /// A sandboxed app's environment: SNAP_NAME marks the sandbox, the test bus carries the portal,
    /// and neither SECRET_BACKEND nor SECRET_FILE_TEST_PASSWORD is set (the path stays in the temp dir).
    func sandboxed(_ sandbox: FileKeyringSandbox, backend: String? = nil) -> [String: String] {
        var environment = sandbox.environment(backend: backend)
        environment["SECRET_FILE_TEST_PASSWORD"] = nil
        environment["DBUS_SESSION_BUS_ADDRESS"] = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]
        environment["SNAP_NAME"] = "keyring-identity-test"
        return environment
    }

    /// Sandboxed idtool under coreutils' timeout as a watchdog: a lost Response or a pipe read that
    /// never ends is a hang that --timeout did not end (exit 124).
    func watchedIdtool(_ arguments: [String], stdin: Data? = nil, in sandbox: FileKeyringSandbox) throws -> ChildResult {
        let binary = try #require(idtoolPath, "idtool was not built next to the tests; run `swift build --build-tests` first")
        return try ChildProcess.run("/usr/bin/timeout", ["30", binary] + arguments, stdin: stdin, environment: sandboxed(sandbox))
    }

    func requireBus() throws {
        let address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"] ?? ""
        try #require(!address.isEmpty, "the portal stand-in needs a session bus: run this under scripts/with-keyring")
    }

    @Test("in a sandbox whose portal answers, the automatic choice is the file backend, keyed by the portal; secret-tool agrees")
    func portalKey() throws {
        try requireBus()
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let portal = try Portal(seed: "app-secret-1", in: sandbox)
        defer { _ = try? portal.stop() }
        let environment = sandboxed(sandbox)
        let id = uniqueID("portal")
        let set = try sandbox.idtool(["item", "set", id], stdin: Data("via portal".utf8), environment: environment)
        #expect(set.status == 0, "\(set.stderr)")
        #expect(try sandbox.idtool(["item", "get", id], environment: environment).text == "via portal")
        let lookup = try ChildProcess.run("/usr/bin/secret-tool", ["lookup", "service", id, "username", ""], environment: environment)
        #expect(String(decoding: lookup.stdout, as: UTF8.self) == "via portal", "\(lookup.stderr)")
        #expect(FileManager.default.fileExists(atPath: sandbox.keyringPath))
        let doctor = try sandbox.idtool(["doctor"], environment: environment)
        #expect(doctor.text.contains("ok keyring backend: file (libsecret's file backend), chosen in a sandbox"), "\(doctor.text)")
        // libsecret looks at the sandbox before SECRET_BACKEND, and so does the automatic choice.
        let service = try sandbox.idtool(["item", "get", id], environment: sandboxed(sandbox, backend: "service"))
        #expect(service.text == "via portal", "\(service.stderr)")
        let first = try sandbox.idtool(["get", "--app", id], environment: environment)
        #expect(first.status == 0 && first.stderr.isEmpty, "\(first.stderr)")
        #expect(try sandbox.idtool(["get", "--app", id], environment: environment).text == first.text)
    }

    @Test("a portal that hands out another secret is a wrong key (65), not an empty keyring")
    func portalWrongKey() throws {
        try requireBus()
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let id = uniqueID("portal")
        do {
            let portal = try Portal(seed: "app-secret-1", in: sandbox)
            defer { _ = try? portal.stop() }
            #expect(try sandbox.idtool(["item", "set", id], stdin: Data("v".utf8), environment: sandboxed(sandbox)).status == 0)
        }
        let other = try Portal(seed: "app-secret-2", in: sandbox)
        defer { _ = try? other.stop() }
        let get = try sandbox.idtool(["item", "get", id], environment: sandboxed(sandbox))
        #expect(get.status == 65, "\(get.stderr)")
        #expect(get.stderr.contains("does not open with this key"), "\(get.stderr)")
    }

    // libsecret 0.20 subscribed to the Response only after RetrieveSecret returned, so a portal that
    // answers at once (xdg-desktop-portal with gnome-keyring, FileRealPortalTests) sometimes sent it
    // first and the open hung past any timeout; the key is now asked for with the subscription made first.
    @Test("a portal whose Response comes before its reply (a fast portal) is not missed: no hang")
    func portalResponseFirst() throws {
        try requireBus()
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let portal = try Portal(seed: "app-secret-1", in: sandbox, mode: "response-first")
        defer { _ = try? portal.stop() }
        let id = uniqueID("portal")
        let set = try watchedIdtool(["item", "set", "--timeout", "5", id], stdin: Data("first".utf8), in: sandbox)
        #expect(set.status == 0, "\(set.status): \(set.stderr)")
        let get = try watchedIdtool(["item", "get", "--timeout", "5", id], in: sandbox)
        #expect(get.status == 0 && get.text == "first", "\(get.status): \(get.stderr)")
    }

    /// libsecret reads the portal's 64 bytes and does not wait for the pipe's end; a backend that keeps
    /// its write end open (a forked child holding it) must not hang the open past the deadline.
    @Test("a portal whose pipe stays open after the 64 bytes is read without waiting for its end")
    func portalHoldsPipeOpen() throws {
        try requireBus()
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let portal = try Portal(seed: "app-secret-1", in: sandbox, mode: "hold-open")
        defer { _ = try? portal.stop() }
        let id = uniqueID("portal")
        let set = try watchedIdtool(["item", "set", "--timeout", "5", id], stdin: Data("kept".utf8), in: sandbox)
        #expect(set.status == 0, "\(set.status): \(set.stderr)")
        let get = try watchedIdtool(["item", "get", "--timeout", "5", id], in: sandbox)
        #expect(get.status == 0 && get.text == "kept", "\(get.status): \(get.stderr)")
    }

    /// A portal fault says nothing about the keyring file: not "damaged" (65, which tells the user to
    /// reset the file), but unavailable (69), and the file is left as it was.
    @Test("a portal that hands out 10 bytes instead of 64 is an unavailable keyring (69), not a damaged file")
    func portalShortSecret() throws {
        try requireBus()
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let portal = try Portal(seed: "app-secret-1", in: sandbox, mode: "short")
        defer { _ = try? portal.stop() }
        let get = try watchedIdtool(["item", "get", "--timeout", "5", uniqueID("portal")], in: sandbox)
        #expect(get.status == 69, "\(get.status): \(get.stderr)")
        #expect(get.stderr.contains("10 bytes"), "\(get.stderr)")
        #expect(!get.stderr.contains("damaged"), "\(get.stderr)")
    }
}
