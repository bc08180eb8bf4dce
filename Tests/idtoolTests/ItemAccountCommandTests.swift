import Foundation
import Keyring
import TestSupport
import Testing

@testable import idtool

/// `idtool item list` and `--account`: the parser (pure), and the commands against the real keyring.
@Suite("idtool item list and --account", .serialized)
struct ItemAccountCommandTests {
    let ten: Duration = .seconds(10)

    func parse(_ line: String...) throws(UsageError) -> Command { try CommandLineParser.parse(line, environment: [:]) }

    @Test("--account goes to item get, set and reset; item list takes IDENTIFIER, --group or both")
    func parses() throws {
        #expect(try parse("item", "get", "id", "--account", "alice")
                == .itemGet(identifier: "id", group: nil, account: "alice", key: .valueData, timeout: ten))
        #expect(try parse("item", "set", "id", "--account=bob", "--group", "g")
                == .itemSet(identifier: "id", group: "g", account: "bob", key: .valueData, timeout: ten))
        #expect(try parse("item", "reset", "id", "--account", "alice", "--no-prompt")
                == .itemReset(identifier: "id", group: nil, account: "alice", timeout: ten, unlock: .never))
        #expect(try parse("item", "list", "id") == .itemList(identifier: "id", group: nil, json: false, timeout: ten))
        #expect(try parse("item", "list", "--group", "g", "--json") == .itemList(identifier: nil, group: "g", json: true, timeout: ten))
        #expect(try parse("item", "list", "id", "--group=g") == .itemList(identifier: "id", group: "g", json: false, timeout: ten))
        for line in [["item", "list"], ["item", "get", "id", "--account="], ["item", "list", "a", "b"], ["item", "list", "--account", "a"]] {
            #expect(throws: UsageError.self, "\(line)") { try CommandLineParser.parse(line, environment: [:]) }
        }
    }

    @Test("--help, the man page and the completions name item list and --account")
    func documented() {
        #expect(Usage.text(for: .itemList).contains("idtool item list [IDENTIFIER] [--group G] [--json]"))
        #expect(Usage.text(for: .item).contains("idtool item list  [IDENTIFIER]"))
        #expect(Usage.text(for: .itemGet).contains("--account A"))
        #expect(Usage.text(for: .overview).contains("item list"))
        #expect(ManPage.text.contains("idtool item list"))
        for shell in Shell.allCases { #expect(Completion.script(for: shell).contains("list"), "\(shell)") }
        #expect(ExitCode(.ambiguousItem(accounts: ["a", "b"])) == .dataError)
    }

    @Test("item set without --account refuses several accounts' items (65, naming them); --account reaches each; item list shows them")
    func accountsEndToEnd() throws {
        try requireTestKeyring()
        let id = Idtool.uniqueIdentifier()
        defer { _ = try? Keyring.default.delete(["service": id]) }
        #expect(try Idtool.run(["item", "set", id, "--account", "alice"], stdin: Data("A".utf8)).status == 0)
        #expect(try Idtool.run(["item", "set", id, "--account", "bob"], stdin: Data("B".utf8)).status == 0)
        let refused = try Idtool.run(["item", "set", id], stdin: Data("X".utf8))
        #expect(refused.status == 65)
        refused.expectOneLineError(hiding: ["A", "B", "X", id].filter { $0.count > 1 }, containing: "\"alice\", \"bob\"")
        #expect(try Idtool.run(["item", "reset", id]).status == 65)
        #expect(try Idtool.run(["item", "get", id, "--account", "bob"]).stdoutText == "B")
        #expect(try Idtool.run(["item", "get", id, "--account", "alice"]).stdoutText == "A")
        #expect(try Idtool.run(["item", "get", id, "--account", "carol"]).status == 1)

        let json = try Idtool.run(["item", "list", id, "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        let items = try #require(object["items"] as? [[String: Any]])
        #expect(items.compactMap { $0["account"] as? String }.sorted() == ["alice", "bob"])
        #expect(items.allSatisfy { $0.keys.sorted() == ["account", "created", "group", "identifier", "label", "locked", "modified", "schema", "writer"] })
        #expect(items.allSatisfy { $0["locked"] as? Bool == false && $0["identifier"] as? String == id })
        if !TestProvider.usesFileBackend { #expect(items.allSatisfy { $0["writer"] as? String == "secretstore" }) }
        #expect(!json.stdoutText.contains("\"A\"") && !json.stdoutText.contains("\"B\""))

        let table = try Idtool.run(["item", "list", id])
        let lines = table.stdoutText.split(separator: "\n")
        #expect(lines.count == 3 && lines.first?.hasPrefix("IDENTIFIER") == true, "\(table.stdoutText)")
        #expect(try Idtool.run(["item", "reset", id, "--account", "alice"]).status == 0)
        #expect(try Idtool.run(["item", "list", id, "--json"]).stdoutText.contains("\"account\":\"alice\"") == false)
    }
}
