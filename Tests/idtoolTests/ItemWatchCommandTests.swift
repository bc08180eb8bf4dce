import Foundation
import Keyring
import Testing

@testable import idtool

/// `idtool item watch`: its parsing, its help and its output lines (the watching itself is tested
/// against the real providers in KeyringTests and FileBackendTests).
@Suite("idtool item watch")
struct ItemWatchCommandTests {
    @Test("item watch parses IDENTIFIER, --group, --account, --json and --timeout, and takes no --key")
    func parses() throws {
        #expect(
            try CommandLineParser.parse(["item", "watch", "id"], environment: [:])
                == .itemWatch(identifier: "id", group: nil, json: false, timeout: .seconds(10)))
        #expect(
            try CommandLineParser.parse(["item", "watch", "--json", "id", "--group=g", "--timeout", "3"], environment: [:])
                == .itemWatch(identifier: "id", group: "g", json: true, timeout: .seconds(3)))
        #expect(
            try CommandLineParser.parse(["item", "watch", "id", "--account", "alice"], environment: [:])
                == .itemWatch(identifier: "id", group: nil, account: "alice", json: false, timeout: .seconds(10)))
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["item", "watch", "id", "--account", ""], environment: [:]) }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["item", "watch", "id", "--key", "label"], environment: [:]) }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["item", "watch"], environment: [:]) }
    }

    @Test("idtool item --help and idtool item watch --help name it")
    func help() throws {
        #expect(Usage.text(for: .item).contains("watch"))
        #expect(Usage.text(for: .itemWatch).contains("idtool item watch IDENTIFIER"))
        #expect(ManPage.text.contains("item watch"))
        #expect(Completion.script(for: .bash).contains("watch"))
    }

    @Test("one line per change: KIND PATH, or a JSON object with fixed keys")
    func lines() {
        let item = KeyringItem(
            objectPath: "/org/freedesktop/secrets/collection/login/7", attributes: ["service": "s", "username": "alice"], label: "l",
            isLocked: false, created: nil, modified: nil)
        #expect(ItemWatch.line(KeyringChange(.created, item: item), json: false) == "created /org/freedesktop/secrets/collection/login/7")
        #expect(ItemWatch.line(KeyringChange(.serviceStopped), json: false) == "service-stopped")
        #expect(
            ItemWatch.line(KeyringChange(.locked, collection: "/org/freedesktop/secrets/collection/login"), json: false)
                == "locked /org/freedesktop/secrets/collection/login")
        #expect(
            ItemWatch.line(KeyringChange(.deleted, item: item), json: true)
                == #"{"event":"deleted","path":"/org/freedesktop/secrets/collection/login/7","account":"alice","collection":null}"#)
        #expect(
            ItemWatch.line(KeyringChange(.serviceStarted), json: true)
                == #"{"event":"service-started","path":null,"account":null,"collection":null}"#)
    }
}
