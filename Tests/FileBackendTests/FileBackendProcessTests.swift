import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// idtool and secret-tool as separate processes on one file keyring, with SECRET_BACKEND=file and
/// no session bus at all: the automatic backend choice, interop, concurrency and the identifier.
@Suite("file backend: idtool and secret-tool, no bus", .needs(.providerFree))
struct FileBackendProcessTests {
    @Test("idtool item set/get works with SECRET_BACKEND=file and no bus (the automatic choice)")
    func itemRoundTrip() throws {
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let id = uniqueID("item")
        let set = try sandbox.idtool(["item", "set", id], stdin: Data("hello".utf8))
        #expect(set.status == 0, "\(set.stderr)")
        let get = try sandbox.idtool(["item", "get", id])
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.text == "hello")
        let doctor = try sandbox.idtool(["doctor"])
        #expect(
            doctor.text.contains("ok keyring backend: file (libsecret's file backend), chosen by SECRET_BACKEND=file"), "\(doctor.text)")
        #expect(doctor.text.contains("ok keyring file: \(sandbox.keyringPath)"), "\(doctor.text)")
    }

    @Test("secret-tool reads what idtool stored, and idtool reads what secret-tool stored")
    func interop() throws {
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let ours = uniqueID("ours")
        #expect(try sandbox.idtool(["item", "set", ours], stdin: Data("from idtool".utf8)).status == 0)
        let lookup = try sandbox.secretTool(["lookup", "service", ours, "username", ""])
        #expect(lookup.status == 0, "\(lookup.stderr)")
        #expect(lookup.text == "from idtool")
        let theirs = uniqueID("theirs")
        let stored = try sandbox.secretTool(
            ["store", "--label", "x", "service", theirs, "username", "bob"], stdin: Data("from secret-tool".utf8))
        #expect(stored.status == 0, "\(stored.stderr)")
        let get = try sandbox.idtool(["item", "get", theirs])
        #expect(get.text == "from secret-tool", "\(get.stderr)")
        #expect(try sandbox.idtool(["item", "get", theirs, "--key", "account"]).text == "bob")
    }

    @Test("secret-tool store with a SecretStore item's attributes updates that item, as on the Secret Service")
    func secretToolReplacesOurItem() throws {
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let id = uniqueID("replace")
        #expect(try sandbox.idtool(["item", "set", id], stdin: Data("ours".utf8)).status == 0)
        let stored = try sandbox.secretTool(["store", "--label", id, "service", id, "username", ""], stdin: Data("theirs".utf8))
        #expect(stored.status == 0, "\(stored.stderr)")
        #expect(try sandbox.idtool(["item", "get", id]).text == "theirs")
        let search = try sandbox.secretTool(["search", "--all", "service", id])
        #expect(search.text.components(separatedBy: "[no path]").count - 1 == 1, "\(search.text)")
    }

    @Test("concurrent first writes from several processes leave one item")
    func concurrentItemCreation() throws {
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let id = uniqueID("race")
        let binary = try requireIdtool()
        let children = try (0..<8).map { index in
            try ChildProcess(
                binary, [Array("item".utf8), Array("set".utf8), Array(id.utf8)], stdin: Data("value \(index)".utf8),
                environment: sandbox.environment())
        }
        for child in children {
            let result = try child.wait()
            #expect(result.status == 0, "\(result.stderr)")
        }
        let search = try sandbox.secretTool(["search", "--all", "service", id])
        #expect(search.text.components(separatedBy: "[no path]").count - 1 == 1, "\(search.text)")
    }

    @Test("concurrent idtool get from several processes yields one identifier and one item")
    func concurrentIdentifier() throws {
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let app = uniqueID("app")
        let binary = try requireIdtool()
        let children = try (0..<8).map { _ in
            try ChildProcess(binary, ["get", "--app", app].map { Array($0.utf8) }, environment: sandbox.environment())
        }
        var identifiers: Set<String> = []
        for child in children {
            let result = try child.wait()
            #expect(result.status == 0, "\(result.stderr)")
            identifiers.insert(result.text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        #expect(identifiers.count == 1, "\(identifiers)")
        let search = try sandbox.secretTool(["search", "--all", "identity-name", app])
        #expect(search.text.components(separatedBy: "[no path]").count - 1 == 1, "\(search.text)")
    }

    @Test("the identifier lives in the file keyring: stable across processes and after its backup is deleted, with no headless notice")
    func identifierInSandbox() throws {
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let app = uniqueID("app")
        let first = try sandbox.idtool(["get", "--app", app])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.isEmpty, "no notice expected: \(first.stderr)")
        let identifier = first.text.trimmingCharacters(in: .whitespacesAndNewlines)
        let show = try sandbox.idtool(["show", "--app", app, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: show.stdout) as? [String: Any])
        #expect(object["storedIn"] as? [String] == ["keyring", "backup"])
        #expect(object["degraded"] as? Bool == false)
        let backup = try #require(object["backupPath"] as? String)
        #expect(backup.hasPrefix(sandbox.root.path))
        try FileManager.default.removeItem(atPath: backup)
        let again = try sandbox.idtool(["get", "--app", app])
        #expect(again.text.trimmingCharacters(in: .whitespacesAndNewlines) == identifier)
        #expect(FileManager.default.fileExists(atPath: backup), "the backup is rewritten from the file keyring")
        let lookup = try sandbox.secretTool(["lookup", "identity-scope", "app", "identity-name", app])
        #expect(lookup.text == identifier)
    }

    @Test("a wrong key never yields a new identifier: idtool fails with a clear error (65)")
    func wrongKeyNoNewIdentifier() throws {
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let app = uniqueID("app")
        let first = try sandbox.idtool(["get", "--app", app])
        #expect(first.status == 0, "\(first.stderr)")
        let backup = sandbox.root.appendingPathComponent("state/keyring-identity/app/\(app)/identifier").path
        try? FileManager.default.removeItem(atPath: backup)
        let wrong = try sandbox.idtool(["get", "--app", app], environment: sandbox.environment(password: "wrong"))
        #expect(wrong.status != 0, "a wrong key must not serve or make an identifier: \(wrong.text)")
        #expect(wrong.stderr.contains("does not open with this key"), "\(wrong.stderr)")
        let item = try sandbox.idtool(["item", "get", "x"], environment: sandbox.environment(password: "wrong"))
        #expect(item.status == 65, "\(item.stderr)")
        #expect(try sandbox.idtool(["get", "--app", app]).text == first.text)
    }

    // Found by scripts/chaos --provider file: no MAC covers an item's stored attribute hashes, and
    // libsecret's clear matches on them, so after one flipped bit a reset reported success while
    // the item (and the identifier) stayed.
    @Test("a damaged attribute hash makes reset fail with 65 instead of succeeding while the identifier stays")
    func damagedAttributeHashFailsReset() throws {
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let app = uniqueID("app")
        let first = try sandbox.idtool(["get", "--app", app])
        try #require(first.status == 0, "\(first.stderr)")
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: sandbox.keyringPath)))
        let name = Array("identity-name\u{0}".utf8)
        let at = try #require((0...(bytes.count - name.count)).first { Array(bytes[$0..<($0 + name.count)]) == name })
        bytes[at + name.count + 5] ^= 1  // inside the 32-byte hash that follows the attribute's name
        try Data(bytes).write(to: URL(fileURLWithPath: sandbox.keyringPath))

        let reset = try sandbox.idtool(["reset", "--app", app])
        #expect(reset.status == 65, "the removal did not happen, so the reset fails: \(reset.stderr)")
        #expect(reset.stderr.contains("damaged"), "\(reset.stderr)")
        let again = try sandbox.idtool(["get", "--app", app])
        #expect(again.status == 0 && again.text == first.text, "nothing changed: \(again.stderr)")
    }

    // Found by scripts/chaos --provider file: a file modification time past year 9999 made
    // libsecret's next write log a GLib critical (fatal under G_DEBUG=fatal-criticals).
    @Test("a keyring file whose modification time is out of range is damaged (65), never a GLib critical")
    func outOfRangeModificationTime() throws {
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let app = uniqueID("app")
        let first = try sandbox.idtool(["get", "--app", app])
        try #require(first.status == 0, "\(first.stderr)")
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: sandbox.keyringPath)))
        // Header (18 bytes), then (u ay u t ...): the salt's size, the salt, the iterations, then
        // the time, 8-aligned within the variant.
        let saltSize = Int(bytes[18]) | Int(bytes[19]) << 8 | Int(bytes[20]) << 16 | Int(bytes[21]) << 24
        let time = 18 + ((4 + saltSize + 4 + 7) / 8) * 8
        for index in time..<(time + 8) { bytes[index] = 0xFF }
        try Data(bytes).write(to: URL(fileURLWithPath: sandbox.keyringPath))

        for command in [["reset", "--app", app], ["item", "set", "x"]] {
            let run = try sandbox.idtool(command, stdin: Data("v".utf8))
            #expect(run.status == 65, "\(command): \(run.stderr)")
            #expect(run.stderr.contains("damaged") && !run.stderr.contains("CRITICAL"), "\(command): \(run.stderr)")
        }
        let get = try sandbox.idtool(["get", "--app", app])
        #expect(get.status == 0 && get.text == first.text, "the backup serves the same identifier: \(get.stderr)")
    }

    // Found by scripts/chaos --provider file (seed 4, shrunk to 3 steps): a twin another client
    // stored in the identifier's second won, since the file backend's object paths come from the
    // attributes and do not order items by creation.
    @Test("a foreign twin stored in the identifier's own second never replaces it")
    func sameSecondTwinLoses() throws {
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        var checked = 0
        for _ in 0..<8 where checked < 3 {
            let app = uniqueID("app")
            let first = try sandbox.idtool(["get", "--app", app])
            try #require(first.status == 0, "\(first.stderr)")
            let twin = UUID().uuidString.lowercased()
            let store = try sandbox.secretTool(
                ["store", "--label=twin", "identity-scope", "app", "identity-name", app, "twin", "1"],
                stdin: Data(twin.utf8))
            try #require(store.status == 0, "\(store.stderr)")
            // Only a twin made in the identifier's second tests the tie.
            let show = try sandbox.idtool(["show", "--app", app, "--json"])
            let object = try #require(try JSONSerialization.jsonObject(with: show.stdout) as? [String: Any])
            let items = try sandbox.secretTool(["search", "--all", "identity-scope", "app", "identity-name", app])
            let created = items.text.split(separator: "\n").filter { $0.hasPrefix("created = ") }.map { String($0.dropFirst(10)) }
            guard created.count == 2, created[0] == created[1] else { continue }
            checked += 1
            #expect(
                object["identifier"] as? String == first.text.trimmingCharacters(in: .whitespacesAndNewlines),
                "ours stays: \(object)")
            let again = try sandbox.idtool(["get", "--app", app])
            #expect(again.text == first.text, "\(again.stderr)")
        }
        #expect(checked > 0, "no twin landed in the identifier's second in 8 tries")
    }

    @Test("a vendor identifier in a file keyring says it is not shared with the vendor's other sandboxed apps")
    func vendorNotice() throws {
        let sandbox = try FileKeyringSandbox()
        defer { sandbox.remove() }
        let get = try sandbox.idtool(["get", "--vendor", uniqueID("vendor")])
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.stderr.contains("each sandboxed app has its own keyring file"), "\(get.stderr)")
    }
}
