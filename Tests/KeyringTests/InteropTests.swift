import Foundation
import Keyring
import Testing
import TestSupport

/// The interop contract: service = identifier, username = account.
@Suite("Interop with python-keyring, secret-tool and secretstorage, both directions")
struct InteropTests {
    /// python-keyring (forced to its SecretService backend) and secretstorage speak D-Bus only, so
    /// under libsecret's file backend (scripts/test's SECRET_BACKEND=file run) they see another store.
    static let onTheBus = !TestProvider.usesFileBackend

    @Test("SecretStore reads what python-keyring set_password wrote", .enabled(if: onTheBus, "python-keyring and secretstorage talk to the Secret Service on the bus; the file backend has none"))
    func readsPythonKeyring() throws {
        try requireTestKeyring()
        let id = uniqueID("py-in"), account = "acct-\(UUID().uuidString)", password = uniqueSecret()
        try mustRun(python, ["-c", "import sys, keyring; keyring.set_password(sys.argv[1], sys.argv[2], sys.argv[3])", id, account, password],
                    environment: pythonEnvironment)
        let store = try SecretStore(identifier: id)
        defer { try? store.reset() }
        #expect(try store.object(forKey: .valueData) == password)
        #expect(try store.object(forKey: .account) == account)
        // Writing through SecretStore updates python's item rather than adding one.
        try store.setObject("updated", forKey: .valueData)
        #expect(try items(service: id).count == 1)
        let back = try mustRun(python, ["-c", "import sys, keyring; print(keyring.get_password(sys.argv[1], sys.argv[2]), end='')", id, account],
                               environment: pythonEnvironment)
        // What each client then reads tells a lost write from a misread one (seen once on KeePassXC 2.7.10: "").
        #expect(
            back.text == "updated",
            "SecretStore now reads \(String(describing: try? store.object(forKey: .valueData))), secret-tool \(String(describing: try? mustRun(secretTool, ["lookup", "service", id, "username", account]).text))"
        )
    }

    @Test("secret-tool lookup reads what SecretStore wrote, and secret-tool clear removes it")
    func secretToolReadsSecretStore() throws {
        try requireTestKeyring()
        let id = uniqueID("st-out"), account = "acct-\(UUID().uuidString)", password = uniqueSecret()
        let store = try SecretStore(identifier: id)
        defer { try? store.reset() }
        try store.setObject(password, forKey: .valueData)
        try store.setObject(account, forKey: .account)
        #expect(try mustRun(secretTool, ["lookup", "service", id, "username", account]).text == password)
        #expect(try secretToolCount(service: id) == 1)
        try mustRun(secretTool, ["clear", "service", id])
        #expect(try store.object(forKey: .valueData) == nil)
    }

    @Test("SecretStore reads what secret-tool store wrote")
    func readsSecretTool() throws {
        try requireTestKeyring()
        let id = uniqueID("st-in"), account = "acct-\(UUID().uuidString)", password = uniqueSecret()
        try mustRun(secretTool, ["store", "--label=x", "service", id, "username", account], input: Data(password.utf8))
        let store = try SecretStore(identifier: id)
        defer { try? store.reset() }
        #expect(try store.object(forKey: .valueData) == password)
        #expect(try store.object(forKey: .account) == account)
        #expect(try store.object(forKey: .label) == "x")
    }

    /// secretstorage's default content type is text/plain, which KWallet stores as text (cut at
    /// the first NUL, invalid UTF-8 replaced) and KeePassXC keeps in the password field, a string
    /// that cannot hold these bytes. A writer of bytes there must say they are bytes.
    static let binaryContentType = TestProvider.quirks.keepsContentType ? "application/octet-stream" : "text/plain"

    @Test("SecretStore reads what secretstorage wrote, including binary bytes", .enabled(if: onTheBus, "python-keyring and secretstorage talk to the Secret Service on the bus; the file backend has none"))
    func readsSecretStorage() throws {
        try requireTestKeyring()
        let id = uniqueID("ss-in"), account = "acct-\(UUID().uuidString)"
        try mustRun(python, ["-c", """
            import sys, secretstorage
            conn = secretstorage.dbus_init()
            coll = secretstorage.get_default_collection(conn)
            coll.create_item("ss label", {"service": sys.argv[1], "username": sys.argv[2]}, bytes([0, 255, 1, 254]),
                             content_type=sys.argv[3])
            """, id, account, Self.binaryContentType])
        let store = try SecretStore(identifier: id)
        defer { try? store.reset() }
        #expect(try store.data(forKey: .valueData) == Data([0, 255, 1, 254]))
        #expect(try store.object(forKey: .account) == account)
        #expect(try store.object(forKey: .label) == "ss label")
    }

    @Test("python-keyring get_password and secret-tool lookup read what SecretStore wrote", .enabled(if: onTheBus, "python-keyring and secretstorage talk to the Secret Service on the bus; the file backend has none"))
    func othersReadSecretStore() throws {
        try requireTestKeyring()
        let id = uniqueID("out"), account = "acct-\(UUID().uuidString)", password = uniqueSecret()
        let store = try SecretStore(identifier: id)
        defer { try? store.reset() }
        try store.setObject(password, forKey: .valueData)
        try store.setObject(account, forKey: .account)

        let py = try mustRun(python, ["-c", "import sys, keyring; print(keyring.get_password(sys.argv[1], sys.argv[2]), end='')", id, account],
                             environment: pythonEnvironment)
        #expect(py.text == password)

        let st = try mustRun(secretTool, ["lookup", "service", id, "username", account])
        #expect(st.text == password)

        let ss = try mustRun(python, ["-c", """
            import sys, secretstorage
            conn = secretstorage.dbus_init()
            items = list(secretstorage.get_default_collection(conn).search_items({"service": sys.argv[1], "username": sys.argv[2]}))
            assert len(items) == 1, items
            sys.stdout.write(items[0].get_secret().decode())
            """, id, account])
        #expect(ss.text == password)
    }

    @Test("python-keyring delete_password removes what SecretStore wrote; SecretStore then reads nil", .enabled(if: onTheBus, "python-keyring and secretstorage talk to the Secret Service on the bus; the file backend has none"))
    func pythonDeleteIsSeen() throws {
        try requireTestKeyring()
        let id = uniqueID("py-del"), account = "a"
        let store = try SecretStore(identifier: id)
        defer { try? store.reset() }
        try store.setObject("pw", forKey: .valueData)
        try store.setObject(account, forKey: .account)
        try mustRun(python, ["-c", "import sys, keyring; keyring.delete_password(sys.argv[1], sys.argv[2])", id, account],
                    environment: pythonEnvironment)
        #expect(try store.object(forKey: .valueData) == nil)
        #expect(try store.object(forKey: .account) == nil)
    }
}
