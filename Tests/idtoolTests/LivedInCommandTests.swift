// idtool on a keyring as years of use leave it (scripts/with-keyring --lived-in): an old keyring
// left locked beside login and the default "Work" (gnome-keyring), or a second wallet left closed
// (KWallet). Before issue 29's fix, `get --app NEW` and `item get` of an absent item exited 75
// there, with or without a prompt allowed. KeePassXC, which hides a locked database's items: below.
import Foundation
import TestSupport
import Testing

@Suite(
    "idtool on a lived-in keyring", .serialized,
    .enabled(
        if: TestProvider.isLivedIn && !TestProvider.usesFileBackend && TestProvider.listsLockedItems,
        "needs scripts/with-keyring --lived-in on a provider that lists locked items (gnome-keyring, KWallet)"))
struct LivedInCommandTests {
    @Test("a new app gets one identifier, the same on every run, while an old keyring stays locked")
    func newAppGetsAnIdentifier() throws {
        try requireTestKeyring()
        let app = "test.idtool.lived-in.\(UUID().uuidString.lowercased())"
        for arguments in [["get", "--app", app, "--no-prompt"], ["get", "--app", app, "--timeout", "5"]] {
            let first = try Idtool.run(arguments)
            #expect(first.status == 0, "\(arguments): \(first.stderr)")
            #expect(first.stdoutText.count == 37, "one UUID line: \(first.stdoutText)")
            #expect(try Idtool.run(["get", "--app", app]).stdoutText == first.stdoutText)
            #expect(try Idtool.run(["reset", "--app", app]).status == 0)
        }
    }

    @Test("item get of an absent item is 'no such item' (1), not locked (75)")
    func absentItemIsAbsent() throws {
        try requireTestKeyring()
        for extra in [["--no-prompt"], ["--timeout", "5"]] {
            let get = try Idtool.run(["item", "get", Idtool.uniqueIdentifier()] + extra)
            #expect(get.status == 1, "\(extra): \(get.stderr)")
            get.expectOneLineError(containing: "no such item")
        }
    }

    // A Flatpak with --talk-name=org.freedesktop.secrets reaches the bus through xdg-dbus-proxy,
    // which hides every other name: the daemon could not be recognised by the names it owns, so it
    // counted as one that hides locked items, and every new app there exited 75.
    @Test("behind a Flatpak's bus proxy (org.freedesktop.secrets alone) a new app gets one identifier while an old keyring stays locked")
    func newAppBehindBusProxy() throws {
        try requireTestKeyring()
        let proxy = try FilteringBusProxy()
        var sandboxed = Idtool.baseEnvironment
        sandboxed["DBUS_SESSION_BUS_ADDRESS"] = proxy.address
        let app = "test.idtool.lived-in.proxy.\(UUID().uuidString.lowercased())"
        let first = try Idtool.run(["get", "--app", app, "--no-prompt"], environment: sandboxed)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdoutText.count == 37, "one UUID line: \(first.stdoutText)")
        #expect(try Idtool.run(["get", "--app", app]).stdoutText == first.stdoutText, "the host reads the same identifier")
        let absent = try Idtool.run(["item", "get", Idtool.uniqueIdentifier(), "--no-prompt"], environment: sandboxed)
        #expect(absent.status == 1, "\(absent.stderr)")
        absent.expectOneLineError(containing: "no such item")
        #expect(try Idtool.run(["reset", "--app", app]).status == 0)
    }

    @Test("doctor lists every keyring with its lock state and passes")
    func doctorListsKeyrings() throws {
        try requireTestKeyring()
        let doctor = try Idtool.run(["doctor", "--no-prompt"])
        #expect(doctor.status == 0, "\(doctor.stdoutText)")
        let line = doctor.stdoutText.split(separator: "\n").first { $0.hasPrefix("ok collections: ") }
        let count = TestProvider.livedInCollectionCount
        #expect(
            line?.hasPrefix("ok collections: \(count): \"\(TestProvider.livedInDefaultKeyring)\" (default, unlocked), ") == true,
            "\(doctor.stdoutText)")
        #expect(line?.contains("\"\(TestProvider.livedInOldKeyring.label)\" (locked)") == true)
        if let other = TestProvider.livedInOtherUnlockedKeyring { #expect(line?.contains("\"\(other)\" (unlocked)") == true) }
    }
}

@Suite(
    "idtool on a lived-in KeePassXC", .serialized,
    .enabled(if: TestProvider.isLivedIn && TestProvider.isKeePassXC, "needs scripts/with-keepassxc --lived-in"))
struct LivedInKeePassXCCommandTests {
    @Test("a new app is locked (75) while the old database is locked, naming the database, and nothing is made")
    func newAppIsLockedNamingTheDatabase() throws {
        try requireTestKeyring()
        let app = "test.idtool.lived-in.\(UUID().uuidString.lowercased())"
        let get = try Idtool.run(["get", "--app", app, "--no-prompt"])
        #expect(get.status == 75, "\(get.stderr)")
        #expect(get.stdoutText.isEmpty)
        get.expectOneLineError(containing: #"the keyring is locked"#)
        get.expectOneLineError(containing: #"(locked: "old")"#)
        let item = try Idtool.run(["item", "get", Idtool.uniqueIdentifier(), "--no-prompt"])
        #expect(item.status == 75, "\(item.stderr)")
        item.expectOneLineError(containing: #"(locked: "old")"#)
    }

    @Test("behind a Flatpak's bus proxy (org.freedesktop.secrets alone) a new app is locked (75) too, naming the database")
    func newAppBehindBusProxyIsLocked() throws {
        try requireTestKeyring()
        let proxy = try FilteringBusProxy()
        var sandboxed = Idtool.baseEnvironment
        sandboxed["DBUS_SESSION_BUS_ADDRESS"] = proxy.address
        let get = try Idtool.run(["get", "--app", "test.idtool.lived-in.proxy.\(UUID().uuidString.lowercased())", "--no-prompt"], environment: sandboxed)
        #expect(get.status == 75, "\(get.stderr)")
        #expect(get.stdoutText.isEmpty)
        get.expectOneLineError(containing: #"(locked: "old")"#)
    }

    @Test("doctor lists the three databases, the active one as the default")
    func doctorListsDatabases() throws {
        try requireTestKeyring()
        let doctor = try Idtool.run(["doctor", "--no-prompt"])
        let line = doctor.stdoutText.split(separator: "\n").first { $0.hasPrefix("ok collections: ") }
        #expect(line == #"ok collections: 3: "keyring" (default, unlocked), "old" (locked), "other" (unlocked)"#, "\(doctor.stdoutText)")
    }
}
