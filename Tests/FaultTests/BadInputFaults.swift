// Bad input: identifiers, app IDs and groups that are empty, huge, have control characters or
// are not UTF-8; attribute names libsecret rejects; odd values; invalid legacy values.
import DeviceIdentity
import Foundation
import Keyring
import Testing
import TestSupport

@Suite("Faults: bad input", .serialized)
struct BadInputFaults {
    init() throws { try Fault.requireTestKeyring() }

    static let badNames = ["", String(repeating: "a", count: 300), "a\u{01}b", "tab\there", "a/b", ".", ".."]

    @Test("bad app IDs and vendor groups on the command line are usage errors and write nothing")
    func badAppIDs() throws {
        let box = try Sandbox()
        let row = FaultTable["input.app-id"]
        for name in Self.badNames {
            for arguments in [["get", "--app", name], ["get", "--app", "ok.app", "--vendor", name], ["reset", "--app", name],
                              ["show", "--app", name]] {
                let run = try box.idtool(arguments)
                #expect(run.status == row.exit, "\(arguments.map(\.debugDescription)): \(run.summary)")
                #expect(run.stdout.isEmpty)
                run.expectClean()
            }
            #expect(throws: IdentityError.self) { try IdentifierResolver(appID: name) }
            #expect(throws: IdentityError.self) { try IdentifierResolver(appID: "ok.app", vendorGroup: name) }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: box.stateHome) == [], "no state written")
    }

    @Test("non-UTF-8 bytes in --app or --vendor are usage errors, never silently replaced")
    func nonUTF8AppID() throws {
        let box = try Sandbox()
        let row = FaultTable["input.non-utf8-app-id"]
        let bad: [UInt8] = Array("fault.nonutf8.".utf8) + [0xFF, 0xFE, 0x41]
        for arguments in [[Array("get".utf8), Array("--app".utf8), bad],
                          [Array("get".utf8), Array("--app".utf8), Array("ok.app".utf8), Array("--vendor".utf8), bad]] {
            let run = try box.idtool(raw: arguments)
            #expect(run.status == row.exit, "\(run.summary); state dir now holds \((try? FileManager.default.contentsOfDirectory(atPath: box.stateHome)) ?? [])")
            run.expectClean(hiding: [run.line])
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: box.stateHome) == [], "no state written")
    }

    @Test("bad item identifiers and groups are rejected before anything is sent")
    func badItemIdentifiers() throws {
        let box = try Sandbox()
        let huge = String(repeating: "x", count: 5000)
        for arguments in [["item", "get", ""], ["item", "set", ""], ["item", "get", huge], ["item", "set", huge],
                          ["item", "get", "fault.ok", "--group", ""], ["item", "set", "fault.ok", "--group", huge]] {
            let row = FaultTable[arguments.contains("") ? "input.item-identifier.empty" : "input.item-identifier.huge"]
            let run = try box.idtool(arguments, stdin: Data("secret-in".utf8))
            #expect(run.status == row.exit, "\(arguments.map { $0.prefix(20) }): \(run.summary)")
            run.expectClean(hiding: ["secret-in"])
        }
        // Control characters other than NUL are legal attribute text: they round-trip.
        let control = "fault.ctl.\u{01}\u{1B}[31m.\(UUID().uuidString)"
        #expect(try box.idtool(["item", "set", control], stdin: Data("c".utf8)).status == 0)
        #expect(try box.idtool(["item", "get", control]).stdoutText == "c")
        #expect(try box.idtool(["item", "reset", control]).status == 0)
        // Library: the same rules.
        #expect(throws: KeyringError.self) { try SecretStore(identifier: "") }
        #expect(throws: KeyringError.self) { try SecretStore(identifier: huge) }
        #expect(throws: KeyringError.self) { try SecretStore(identifier: "a\u{0}b") }
        #expect(throws: KeyringError.self) { try SecretStore(identifier: "ok", accessGroup: "") }
    }

    /// Every item in every collection, locked or not, as the Secret Service itself lists them
    /// (SearchItems with no attributes, sent with dbus-send: an independent client).
    static func allKeyringItems(sourceLocation: SourceLocation = #_sourceLocation) throws -> Set<String> {
        // KeePassXC's SearchItems matches nothing for no attributes: list the default collection's Items.
        let call = TestProvider.isKeePassXC
            ? ["/org/freedesktop/secrets/aliases/default", "org.freedesktop.DBus.Properties.Get",
               "string:org.freedesktop.Secret.Collection", "string:Items"]
            : ["/org/freedesktop/secrets", "org.freedesktop.Secret.Service.SearchItems", "dict:string:string:"]
        let reply = try Fault.run(
            "/usr/bin/dbus-send", ["--session", "--print-reply", "--dest=org.freedesktop.secrets"] + call)
        try #require(reply.status == 0, "SearchItems: \(reply.summary)", sourceLocation: sourceLocation)
        return Set(reply.stdoutText.split(separator: "\n").compactMap { line in
            line.contains("object path \"") ? line.split(separator: "\"").dropFirst().first.map(String.init) : nil
        })
    }

    @Test("non-UTF-8 bytes in an item identifier or --group are rejected, never silently replaced: no item is created", .needs(.secretService))
    func nonUTF8ItemIdentifier() throws {
        let box = try Sandbox()
        let row = FaultTable["input.non-utf8-item-identifier"]
        let bad: [UInt8] = Array("fault.nonutf8item.".utf8) + [0xC3, 0x28, 0xFF]
        // The list must be able to show a new item: one made now appears in it.
        let probe = "fault.nonutf8item.probe.\(UUID().uuidString)"
        let empty = try Self.allKeyringItems()
        #expect(try box.idtool(["item", "set", probe], stdin: Data("p".utf8)).status == 0)
        let before = try Self.allKeyringItems()
        try #require(before.subtracting(empty).count == 1, "the item list shows a new item")

        let item = [Array("item".utf8)]
        for arguments in [item + [Array("set".utf8), bad],
                          item + [Array("set".utf8), Array("fault.ok".utf8), Array("--group".utf8), bad],
                          item + [Array("get".utf8), Array("fault.ok".utf8), Array("--group".utf8), bad],
                          item + [Array("reset".utf8), bad]] {
            let run = try box.idtool(raw: arguments, stdin: Data("secret-in".utf8))
            let shown = arguments.map { String(decoding: $0, as: UTF8.self) }.joined(separator: " ")
            #expect(run.status == row.exit, "\(shown): \(run.summary)")
            #expect(run.stdout.isEmpty, "\(shown)")
            run.expectClean(hiding: ["secret-in"])
        }
        let after = try Self.allKeyringItems()
        #expect(after == before, "items created: \(after.subtracting(before)), removed: \(before.subtracting(after))")
        #expect(try box.idtool(["item", "reset", probe]).status == 0)
    }

    @Test("attribute names libsecret would reject are refused with invalidArgument, with no GLib critical")
    func badAttributes() throws {
        // Searching with no attributes lists every item: on the lived-in keyring (2,000 of them) a
        // loaded machine took over 10 s. The budget only turns a hang into a failure.
        let keyring = Keyring(timeout: .seconds(120))
        let marker = "fault.attr.\(UUID().uuidString)"
        var many: [String: String] = ["service": marker]
        for i in 0..<32 { many["a\(i)"] = "v" }
        let cases: [[String: String]] = [
            ["": "v", "service": marker], ["xdg:foo": "v", "service": marker], ["na\u{0}me": "v", "service": marker],
            ["service": "a\u{0}b"], many, [String(repeating: "n", count: 5000): "v", "service": marker], [:],
        ]
        for attributes in cases {
            let described = attributes.keys.map { String($0.prefix(12)).debugDescription }.sorted()
            for call in ["store", "lookup", "search", "delete"] {
                do {
                    switch call {
                    case "store": try keyring.store(Data("v".utf8), attributes: attributes, label: "l")
                    case "lookup": _ = try keyring.lookup(attributes)
                    case "search": _ = try keyring.search(attributes)
                    default: _ = try keyring.delete(attributes)
                    }
                    if !(attributes.isEmpty && call == "search") {
                        Issue.record("\(call) accepted \(described)")
                    }
                } catch {
                    guard case .invalidArgument = error else { Issue.record("\(call) \(described): \(error)"); continue }
                }
            }
        }
        #expect(try keyring.search(["service": marker]).isEmpty, "nothing stored")
        _ = FaultTable["input.attributes"]
    }

    @Test("item values of 0 bytes, 1 MiB and binary round-trip byte for byte")
    func values() throws {
        let box = try Sandbox()
        let row = FaultTable["input.values"]
        let mebibyte = Data((0..<(1 << 20)).map { _ in UInt8.random(in: 0...255) })
        for value in [Data(), mebibyte, Data([0, 0xFF, 0xFE, 0, 0xC3, 0x28, 0x0A])] {
            let id = "fault.value.\(UUID().uuidString)"
            let set = try box.idtool(["item", "set", id, "--timeout", "60"], stdin: value)
            #expect(set.status == row.exit, "\(set.summary)")
            let get = try box.idtool(["item", "get", id, "--timeout", "60"])
            #expect(get.status == row.exit)
            #expect(get.stdout == value, "\(value.count) bytes round-trip")
            #expect(try box.idtool(["item", "reset", id]).status == 0)
        }
        let store = try SecretStore(identifier: "fault.value.lib.\(UUID().uuidString)")
        for value in [Data(), mebibyte] {
            try store.setData(value, forKey: .valueData)
            #expect(try store.data(forKey: .valueData) == value)
        }
        try store.reset()
    }

    static let invalidLegacy: [(String, Data)] = [
        ("empty", Data()), ("whitespace", Data("  \n\t ".utf8)), ("control", Data("ab\u{01}cd".utf8)),
        ("not UTF-8", Data([0x61, 0xFF, 0xFE, 0x62])), ("300 bytes", Data(repeating: UInt8(ascii: "a"), count: 300)),
    ]

    @Test("an invalid legacy value in each migration source is rejected: nothing adopted, legacy untouched")
    func invalidLegacyValues() throws {
        let box = try Sandbox()
        let keyring = Keyring(timeout: .seconds(60))
        for (name, bytes) in Self.invalidLegacy {
            let tag = UUID().uuidString.prefix(8)
            let legacyAttributes = ["service": "fault.legacy.\(tag)", "username": "udid"]
            try keyring.store(bytes, attributes: legacyAttributes, label: "legacy", contentType: "application/octet-stream")
            let legacyStore = try SecretStore(identifier: "fault.legacy-store.\(tag)")
            try legacyStore.setData(bytes, forKey: .valueData)
            let file = box.root.appendingPathComponent("legacy-\(tag)").path
            try bytes.write(to: URL(fileURLWithPath: file))
            let machineID = box.root.appendingPathComponent("machine-id-\(tag)").path
            try bytes.write(to: URL(fileURLWithPath: machineID))

            let sources: [MigrationSource] = [
                .keyringItem(legacyAttributes, removeAfterMigration: true),
                .secretStore(identifier: legacyStore.identifier, removeAfterMigration: true),
                .file(file, removeAfterMigration: true), .machineID(path: machineID),
            ]
            for source in sources {
                let app = Fault.newApp("legacy")
                let resolver = try IdentifierResolver(scope: .app(app), migrations: [source], keyring: keyring,
                                                      backup: .directory(box.backupDirectory(app)), lockDirectories: [box.runtimeDir])
                let report = try resolver.migrate()
                #expect(report.outcome == .nothingToMigrate, "\(name) in \(source): \(report.outcome)")
                #expect(report.rejected.count == 1, "\(name) in \(source) is reported as rejected")
                #expect(report.resolution == nil)
                #expect(try Fault.keyringValue(app: app) == nil, "nothing written to the keyring")
                #expect(box.backupIdentifier(app) == nil, "nothing written to the backup")
            }
            #expect(try keyring.lookup(legacyAttributes) == bytes, "\(name): legacy keyring item untouched")
            #expect(try legacyStore.data(forKey: .valueData) == bytes, "\(name): legacy SecretStore untouched")
            #expect(FileManager.default.contents(atPath: file) == bytes, "\(name): legacy file untouched")

            let cli = try box.idtool(["migrate", "--app", Fault.newApp("legacy-cli"), "--from", "file:\(file)", "--remove-legacy"])
            cli.expectExit(FaultTable["input.legacy"])
            cli.expectClean()
            #expect(FileManager.default.contents(atPath: file) == bytes, "\(name): idtool migrate left the file")
            let cliKeyring = try box.idtool(["migrate", "--app", Fault.newApp("legacy-cli"),
                                             "--from", "keyring:service=\(legacyAttributes["service"]!),username=udid"])
            cliKeyring.expectExit(FaultTable["input.legacy"])
            _ = try keyring.delete(legacyAttributes)
            try legacyStore.reset()
        }
    }
}
