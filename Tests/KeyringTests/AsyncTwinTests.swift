import Foundation
import Keyring
import TestSupport
import Testing

/// Runs `body` as sync code, so that a call in it picks the sync overload of its async twin.
func blocking<T>(_ body: () throws(KeyringError) -> T) throws(KeyringError) -> T { try body() }

/// Every async call runs its sync twin itself, so the two store and return the same things.
@Suite("Async twins do what their sync calls do")
struct AsyncTwinTests {
    // The async twin once built its own payload and stored text/plain, which KeePassXC resolves
    // placeholders in and KWallet cuts at a NUL. gnome-keyring reports every secret as text/plain,
    // so this fails on the old code only with KeePassXC or KWallet.
    @Test(
        "await setObject(_:forKey: .valueData) stores the content type the sync call stores",
        .enabled(if: !TestProvider.usesFileBackend, "the file backend keeps no content type; secretstorage needs the bus"))
    func setObjectContentType() async throws {
        try requireTestKeyring()
        let sync = try SecretStore(identifier: uniqueID("twin-sync")), async = try SecretStore(identifier: uniqueID("twin-async"))
        defer {
            try? sync.reset()
            try? async.reset()
        }
        try blocking { () throws(KeyringError) in try sync.setObject("plain {TITLE} text", forKey: .valueData) }
        try await async.setObject("plain {TITLE} text", forKey: .valueData)
        let syncType = try secretContentType(service: sync.identifier), asyncType = try secretContentType(service: async.identifier)
        #expect(asyncType == syncType)
        #expect(asyncType == (TestProvider.quirks.keepsContentType ? SecretStore.valueContentType : "text/plain"))
        #expect(try await async.object(forKey: .valueData) == "plain {TITLE} text")
    }

    struct Token: Codable, Equatable, Sendable {
        var name: String
        var expires: Int
    }

    @Test("every Keyring and SecretStore twin against the real keyring once")
    func everyTwin() async throws {
        try requireTestKeyring()
        let keyring = Keyring(timeout: .seconds(20))
        let service = uniqueID("twins")
        let attributes = ["service": service, "username": "a"]
        defer { _ = try? keyring.delete(["service": service]) }

        // Keyring
        try await keyring.store(Data("one".utf8), attributes: attributes, label: "twins")
        #expect(try await keyring.lookup(attributes) == Data("one".utf8))
        let found = try #require(try await keyring.search(attributes).first)
        #expect(try await keyring.firstItem(attributes)?.secret == Data("one".utf8))
        #expect(try await keyring.readAll(["service": service]).map(\.secret) == [Data("one".utf8)])
        #expect(try await keyring.secret(of: found) == Data("one".utf8))
        let other = ["service": service, "username": "b"]
        #expect(try await keyring.insertIfAbsent(Data("two".utf8), attributes: other, label: "twins") == .inserted)
        guard case .existing(_, let secret) = try await keyring.insertIfAbsent(Data("three".utf8), attributes: other, label: "twins") else {
            Issue.record("the second insertIfAbsent must find the first")
            return
        }
        #expect(secret == Data("two".utf8))
        #expect(try await keyring.withCreationLock(for: other) { () throws(KeyringError) in try keyring.search(other).count } == 1)
        try await keyring.delete(item: found)
        #expect(try await keyring.lookup(attributes) == nil)
        #expect(try await keyring.delete(other) == 1)
        #expect(await keyring.status().isReachable)

        // SecretStore
        let store = try SecretStore(identifier: service + ".store", keyring: keyring)
        defer { try? store.reset() }
        try await store.setObject("v", forKey: .valueData)
        try await store.setObject("alice", forKey: .account)
        #expect(try await store.object(forKey: .account) == "alice")
        try await store.setData(Data([0, 1, 0xff]), forKey: .valueData)
        #expect(try await store.data(forKey: .valueData) == Data([0, 1, 0xff]))
        #expect(try await store.storedItem()?.value == Data([0, 1, 0xff]))
        #expect(try await store.storedItem()?.item.attributes["username"] == "alice")
        let token = Token(name: "t", expires: 42)
        try await store.setValue(token)
        #expect(try await store.value(Token.self) == token)
        try await store.reset()
        #expect(try await store.storedItem() == nil)
        #expect(try await store.value(Token.self) == nil)
    }

    /// The public calls a source file declares, by name, with the body text of each (up to the next declaration).
    static func publicCalls(in path: String) throws -> [(name: String, isAsync: Bool, body: String)] {
        let text = try String(contentsOf: repoRoot.appendingPathComponent(path), encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: #"public (?:static )?func ([A-Za-z]+)[<(]"#)
        let matches = pattern.matches(in: text, range: NSRange(text.startIndex..., in: text))
        return matches.enumerated().map { index, match in
            let start = Range(match.range, in: text)!.lowerBound
            let end = index + 1 < matches.count ? Range(matches[index + 1].range, in: text)!.lowerBound : text.endIndex
            let declaration = text[start..<(text[start...].firstIndex(of: "{") ?? end)]
            return (String(text[Range(match.range(at: 1), in: text)!]), declaration.contains(" async "), String(text[start..<end]))
        }
    }

    // No keyring needed: this reads the sources, so a new public call without a twin, or a twin
    // with a body of its own, fails here.
    @Test("every public sync call of Keyring, SecretStore and IdentifierResolver has an async twin that only runs it")
    func twinsCoverThePublicAPI() throws {
        let pairs = [
            (
                ["Sources/Keyring/Keyring.swift", "Sources/Keyring/SecretStore.swift", "Sources/Keyring/Keyring+Changes.swift"],
                "Sources/Keyring/Keyring+Async.swift"
            ),
            (["Sources/Keyring/Keyring+LockState.swift"], "Sources/Keyring/Keyring+LockState+Async.swift"),
            (["Sources/DeviceIdentity/IdentifierResolver.swift"], "Sources/DeviceIdentity/IdentifierResolver+Async.swift"),
            (["Sources/Keyring/SecretStore+Listing.swift"], "Sources/Keyring/SecretStore+Listing+Async.swift"),
        ]
        for (syncFiles, asyncFile) in pairs {
            let sync = Set(try syncFiles.flatMap { try Self.publicCalls(in: $0) }.filter { !$0.isAsync }.map(\.name))
            let twins = try Self.publicCalls(in: asyncFile)
            let allAsync = twins.allSatisfy { $0.isAsync }
            #expect(allAsync, "\(asyncFile) declares only async twins")
            #expect(sync.subtracting(twins.map(\.name)).isEmpty, "public sync calls without an async twin in \(asyncFile)")
            for twin in twins {
                let runs = twin.body.contains("Offload.run") || twin.body.contains("try await offload")
                let callsItsSyncTwin = twin.body.contains("self.\(twin.name)(") || twin.body.contains("Self.\(twin.name)(")
                #expect(runs && callsItsSyncTwin, "the twin \(twin.name) runs its sync call through the offload helper")
            }
        }
    }
}
