// idtool on a keyring as years of use leave it (scripts/with-keyring --lived-in): an old keyring
// left locked beside login and the default "Work". Before issue 29's fix, `get --app NEW` and
// `item get` of an absent item exited 75 there, with or without a prompt allowed.
import Foundation
import Testing
import TestSupport

@Suite(
    "idtool on a lived-in keyring", .serialized,
    .enabled(if: TestProvider.isLivedIn && TestProvider.isGnomeKeyring, "needs scripts/with-keyring --lived-in (gnome-keyring)"))
struct LivedInCommandTests {
    @Test("a new app gets one identifier, the same on every run, while an old keyring stays locked")
    func newAppGetsAnIdentifier() throws {
        try Idtool.requireTestKeyring()
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
        try Idtool.requireTestKeyring()
        for extra in [["--no-prompt"], ["--timeout", "5"]] {
            let get = try Idtool.run(["item", "get", Idtool.uniqueIdentifier()] + extra)
            #expect(get.status == 1, "\(extra): \(get.stderr)")
            get.expectOneLineError(containing: "no such item")
        }
    }

    @Test("doctor lists every keyring with its lock state and passes")
    func doctorListsKeyrings() throws {
        try Idtool.requireTestKeyring()
        let doctor = try Idtool.run(["doctor", "--no-prompt"])
        #expect(doctor.status == 0, "\(doctor.stdoutText)")
        let line = doctor.stdoutText.split(separator: "\n").first { $0.hasPrefix("ok collections: ") }
        #expect(line?.hasPrefix(#"ok collections: 4: "Work" (default, unlocked), "#) == true, "\(doctor.stdoutText)")
        #expect(line?.contains(#""Default keyring" (locked)"#) == true)
        #expect(line?.contains(#""Login" (unlocked)"#) == true)
    }
}
