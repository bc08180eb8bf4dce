import Foundation
import TestSupport
import Testing

@testable import Keyring

#if canImport(Glibc)
import Glibc
#endif

/// A file-keyring change that touches several items is killed (SIGKILL) at each durable step it
/// takes: afterwards every other item is there byte for byte, and the changed item is either as
/// it was or as the change left it, never lost. The steps are counted by the library's test hook
/// `KEYRING_TEST_KILL_AFTER_STEP` (the `.before-change` copy saved, the keyring file written).
@Suite("file backend: a change killed at any step loses nothing", .serialized, .needs(.providerFree))
struct FileAtomicChangeTests {
    /// One item as secret-tool prints it.
    struct Item: Equatable, CustomStringConvertible {
        var label: String
        var secret: String
        var attributes: [String: String]
        var description: String { "\(label): \(attributes.sorted { $0.key < $1.key }) = \(secret)" }
    }

    /// Every item of `service`, read in this process (its libsecret pointed at the sandbox's file
    /// for the read only; the suite is serialized for that).
    func items(_ sandbox: FileKeyringSandbox, service: String) throws -> [Item] {
        let names = ["SECRET_FILE_TEST_PATH", "SECRET_FILE_TEST_PASSWORD"]
        let saved = names.map { name in (name, getenv(name).map { String(cString: $0) }) }
        sandbox.activate()
        defer {
            for (name, value) in saved {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
        }
        return try Keyring(backend: .file, timeout: .seconds(20)).readAll(["service": service]).map {
            Item(label: $0.item.label, secret: String(decoding: $0.secret, as: UTF8.self), attributes: $0.item.attributes)
        }
    }

    /// Runs `body` with this process's libsecret pointed at the sandbox's file.
    func withActive<T>(_ sandbox: FileKeyringSandbox, _ body: () throws -> T) rethrows -> T {
        let names = ["SECRET_FILE_TEST_PATH", "SECRET_FILE_TEST_PASSWORD"]
        let saved = names.map { name in (name, getenv(name).map { String(cString: $0) }) }
        sandbox.activate()
        defer {
            for (name, value) in saved {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
        }
        return try body()
    }

    /// A keyring with our item, another wrapper's (the same identifier in an access group: its
    /// attributes include ours, so libsecret's clear would take it too) and an unrelated item;
    /// returns (ours, theirs, unrelated).
    func seed(_ sandbox: FileKeyringSandbox, service: String) throws -> (Item, Item, Item) {
        #expect(try sandbox.idtool(["item", "set", service], stdin: Data("our secret".utf8)).status == 0)
        #expect(try sandbox.idtool(["item", "set", service, "--group", "other"], stdin: Data("their secret".utf8)).status == 0)
        let other = try sandbox.secretTool(["store", "--label", "unrelated", "service", service + ".other"], stdin: Data("unrelated".utf8))
        #expect(other.status == 0, "\(other.stderr)")
        let ours = Item(label: service, secret: "our secret", attributes: ["service": service, "username": ""])
        let theirs = Item(
            label: service, secret: "their secret", attributes: ["service": service, "username": "", "access-group": "other"])
        let unrelated = Item(label: "unrelated", secret: "unrelated", attributes: ["service": service + ".other"])
        try #require(Set(try items(sandbox, service: service).map(\.description)) == [ours.description, theirs.description])
        return (ours, theirs, unrelated)
    }

    /// Runs `arguments` in idtool, killed after `step` durable steps; true when it was killed.
    func run(_ sandbox: FileKeyringSandbox, _ arguments: [String], stdin: Data, killedAfter step: Int) throws -> Bool {
        var environment = sandbox.environment()
        environment["KEYRING_TEST_KILL_AFTER_STEP"] = String(step)
        let result = try sandbox.idtool(arguments, stdin: stdin, environment: environment)
        #expect(result.status == 0 || result.status == 128 + 9, "step \(step): \(result.status) \(result.stderr)")
        // Every change saves a copy first: a run that passes step 1 is an idtool without the hook,
        // which only debug builds compile (`swift test` builds debug).
        if step == 1 { #expect(result.status == 128 + 9, "idtool ignored KEYRING_TEST_KILL_AFTER_STEP: not a debug build?") }
        return result.status == 128 + 9
    }

    @Test("an attribute change (SecretStore's account) killed at each step: the other items survive, ours is old or new")
    func attributeChange() throws {
        var completed = false
        for step in 1...8 where !completed {
            let sandbox = try FileKeyringSandbox()
            defer { sandbox.remove() }
            let service = uniqueID("atomic-account")
            let (ours, theirs, unrelated) = try seed(sandbox, service: service)
            var changed = ours
            changed.attributes["username"] = "bob"
            let killed = try run(sandbox, ["item", "set", service, "--key", "account"], stdin: Data("bob".utf8), killedAfter: step)
            completed = !killed
            let after = try items(sandbox, service: service)
            #expect(after.filter { $0 == theirs }.count == 1, "step \(step): the other wrapper's item is gone: \(after)")
            #expect(try items(sandbox, service: service + ".other") == [unrelated], "step \(step)")
            let mine = after.filter { $0 != theirs }
            #expect(mine == [ours] || mine == [changed], "step \(step): ours is neither old nor new: \(mine)")
            if !killed { #expect(mine == [changed], "the change completed") }
            // The file opens and takes the next change, whatever the kill left beside it.
            let again = try sandbox.idtool(["item", "set", service, "--key", "account"], stdin: Data("carol".utf8))
            #expect(again.status == 0, "step \(step): \(again.stderr)")
            #expect(try sandbox.idtool(["item", "get", service, "--key", "account"]).text == "carol")
        }
        #expect(completed, "some step let the change complete")
    }

    @Test("a reset that must keep an item including its attributes, killed at each step: that item survives, ours is old or gone")
    func resetKeepsWiderItem() throws {
        var completed = false
        for step in 1...8 where !completed {
            let sandbox = try FileKeyringSandbox()
            defer { sandbox.remove() }
            let service = uniqueID("atomic-reset")
            let (ours, theirs, unrelated) = try seed(sandbox, service: service)
            let killed = try run(sandbox, ["item", "reset", service], stdin: Data(), killedAfter: step)
            completed = !killed
            let after = try items(sandbox, service: service)
            #expect(after.filter { $0 == theirs }.count == 1, "step \(step): the other wrapper's item is gone: \(after)")
            #expect(try items(sandbox, service: service + ".other") == [unrelated], "step \(step)")
            let mine = after.filter { $0 != theirs }
            #expect(mine == [ours] || mine.isEmpty, "step \(step): ours is neither old nor removed: \(mine)")
            if !killed { #expect(mine.isEmpty, "the reset completed") }
            #expect(try sandbox.idtool(["item", "reset", service]).status == 0, "step \(step)")
        }
        #expect(completed, "some step let the reset complete")
    }

    /// One change that another libsecret program's write overtakes: secret-tool, which takes no
    /// lock of ours, stores an item after our change read the file and before it writes; then,
    /// with `cancel`, our change is cancelled. Returns the error our change ended with and the
    /// labels of the service's items afterwards.
    func overtaken(cancel: Bool) throws -> (KeyringError?, Set<String>) {
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let service = uniqueID("atomic-overtaken")
        let before = try sandbox.secretTool(
            ["store", "--label", "before", "service", service, "which", "before"], stdin: Data("before".utf8))
        try #require(before.status == 0, "\(before.stderr)")
        let token = OperationCancellation()
        let error = withActive(sandbox) {
            keyringError {
                try token.run { () throws(KeyringError) in
                    try FileKeyring.run(timeout: .seconds(20), exclusive: true) { file throws(KeyringError) in
                        try file.store(["service": service, "which": "ours"], label: "ours", secret: Data("ours".utf8))
                        let theirs = try? sandbox.secretTool(
                            ["store", "--label", "theirs", "service", service, "which", "theirs"], stdin: Data("theirs".utf8))
                        #expect(theirs?.status == 0, "\(theirs?.stderr ?? "")")
                        if cancel { token.cancel() }
                    }
                }
            }
        }
        #expect(!FileManager.default.fileExists(atPath: sandbox.keyringPath + ".before-change"), "the saved copy is left behind")
        return (error, Set(try items(sandbox, service: service).map(\.label)))
    }

    @Test("another program writes the file during our change: ours fails with a typed error, nothing is put back over theirs")
    func overtakenChangeKeepsTheirs() throws {
        let (error, labels) = try overtaken(cancel: false)
        guard case .keyringFileUnavailable(_, let detail)? = error else {
            Issue.record("an overtaken change ended with \(String(describing: error))")
            return
        }
        #expect(detail.contains("another program changed it"), "\(detail)")
        #expect(labels == ["before", "theirs"], "the other program's item is gone, or ours was written: \(labels)")
    }

    @Test("a change cancelled after another program wrote the file: cancelled, and nothing is put back over theirs")
    func cancelledChangeKeepsTheirs() throws {
        let (error, labels) = try overtaken(cancel: true)
        #expect(error == .cancelled, "\(String(describing: error))")
        #expect(labels == ["before", "theirs"], "the other program's item is gone, or ours was written: \(labels)")
    }
}
