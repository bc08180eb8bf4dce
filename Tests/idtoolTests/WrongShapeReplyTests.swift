// Replies of the wrong shape from a stand-in Secret Service: never "absent", never a new identifier.
import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `idtool` against a stand-in Secret Service (python3-jeepney) on a bus of its own, which answers
/// one method with a reply of the wrong shape per run. Each is a failure that names the method
/// (exit 69 or 70): nothing on stdout, no backup identifier, no CreateItem. Runs under any provider.
@Suite("wrong-shaped Secret Service replies", .serialized)
struct WrongShapeReplyTests {
    /// One stand-in run: its own bus, state and runtime directories.
    final class StandIn {
        let bus: BusWithoutSecretService
        let directory: URL
        let child: ChildProcess

        init(mode: String) throws {
            bus = try BusWithoutSecretService()
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("standin-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            chmod(directory.path, 0o700)
            let script = directory.appendingPathComponent("secret-standin.py")
            try WrongShapeReplyTests.script.write(to: script, atomically: true, encoding: .utf8)
            var environment = ProcessInfo.processInfo.environment
            environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
            child = try ChildProcess(
                "/usr/bin/python3", [script.path, mode, directory.path].map { Array($0.utf8) }, environment: environment)
            let ready = directory.appendingPathComponent("ready").path
            for _ in 0..<1000 where access(ready, F_OK) != 0 {
                if kill(child.pid, 0) != 0 { break }
                usleep(10_000)
            }
            if access(ready, F_OK) != 0 {
                kill(child.pid, SIGTERM)
                let result = try child.wait()
                Issue.record("the stand-in did not start: \(result.stderr)")
                throw CancellationError()
            }
        }

        var environment: [String: String] {
            var environment = Idtool.baseEnvironment
            environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
            environment["XDG_RUNTIME_DIR"] = directory.path
            environment["XDG_STATE_HOME"] = directory.appendingPathComponent("state").path
            environment["SECRET_BACKEND"] = nil
            return environment
        }

        var createdAnItem: Bool { access(directory.appendingPathComponent("created").path, F_OK) == 0 }

        /// Every file under the state directory whose name starts with "identifier" (backups, quarantined ones).
        var identifierFiles: [String] {
            let state = directory.appendingPathComponent("state").path
            let names = FileManager.default.enumerator(atPath: state)?.compactMap { $0 as? String } ?? []
            return names.filter { ($0 as NSString).lastPathComponent.hasPrefix("identifier") }
        }

        deinit {
            kill(child.pid, SIGTERM)
            _ = try? child.wait()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test(
        "idtool get fails naming the method, prints nothing and creates nothing",
        arguments: [
            ("search", "SearchItems"), ("getall", "Properties.GetAll"), ("collections", "Properties.Get(Collections)"),
            ("locked", "Properties.Get(Locked)"), ("unknownmethod", "Properties.GetAll"),
            // The service object itself answering "no such object/interface": a failure, never "no collection locked".
            ("collections-unknownobject", "Properties.Get(Collections)"),
            ("collections-nosuchinterface", "Properties.Get(Collections)"),
            ("collections-unknowninterface", "Properties.Get(Collections)"),
            // Nor "no default collection", which would let the backup keep a new identifier alone.
            ("readalias-unknownobject", "ReadAlias"), ("readalias-unknowninterface", "ReadAlias"),
            ("collection-vanished", "Properties.Get(Locked)"),
        ])
    func getFails(mode: String, method: String) throws {
        let standIn = try StandIn(mode: mode)
        let run = try Idtool.run(["get", "--app", "test.wrong-shape.\(mode)"], environment: standIn.environment)
        #expect(run.status == 69 || run.status == 70, "\(mode): exit \(run.status): \(run.stderr)")
        #expect(run.stdout.isEmpty, "\(mode): stdout \(run.stdoutText.debugDescription)")
        #expect(run.stderr.contains(method), "\(mode): \(run.stderr)")
        run.expectOneLineError()
        #expect(!standIn.createdAnItem, "\(mode): an item was created")
        #expect(standIn.identifierFiles.isEmpty, "\(mode): \(standIn.identifierFiles)")
    }

    @Test(
        "a failed ReadAlias or default collection fails a store naming the method, and creates no item",
        arguments: [
            ("readalias", "ReadAlias"), ("readalias-unknownobject", "ReadAlias"), ("readalias-unknowninterface", "ReadAlias"),
            ("collection-vanished", "Properties.Get(Locked)"),
        ])
    func readAliasFails(mode: String, method: String) throws {
        let standIn = try StandIn(mode: mode)
        let run = try Idtool.run(["item", "set", "test.wrong-shape.\(mode)"], stdin: Data("value".utf8), environment: standIn.environment)
        #expect(run.status == 69 || run.status == 70, "\(mode): exit \(run.status): \(run.stderr)")
        #expect(run.stderr.contains(method), "\(mode): \(run.stderr)")
        run.expectOneLineError()
        #expect(!standIn.createdAnItem)
    }

    /// The stand-in, written to a temp file for each run (SwiftPM would otherwise want it declared as a resource).
    static let script = #"""
#!/usr/bin/python3
"""A stand-in Secret Service that answers one method with a reply of the wrong shape.

Usage: secret-standin.py MODE DIR. Owns org.freedesktop.secrets on the session bus, writes DIR/ready
once it does, and DIR/created if anyone calls CreateItem. MODE is the broken answer:
search (SearchItems not (aoao)), getall (an item's GetAll with Created a string), collections
(Collections not ao), locked (Locked not b), unknownmethod (GetAll answers UnknownMethod),
readalias (ReadAlias not (o)); collections-unknownobject, collections-nosuchinterface and
collections-unknowninterface (the service object answers Get(Collections) with UnknownObject,
GDBus's "No such interface" UnknownMethod, or UnknownInterface); readalias-unknownobject and
readalias-unknowninterface (likewise for ReadAlias); collection-vanished (the login collection's
Get(Locked) answers UnknownObject, as if it vanished after ReadAlias).
"""
import os
import sys

from jeepney import HeaderFields, MessageType, new_error, new_method_return
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

mode, directory = sys.argv[1], sys.argv[2]
SERVICE = "/org/freedesktop/secrets"
ITEM = "/org/freedesktop/secrets/collection/login/1"
LOGIN = "/org/freedesktop/secrets/collection/login"

conn = open_dbus_connection(bus="SESSION")
if conn.send_and_get_reply(message_bus.RequestName("org.freedesktop.secrets", 4)).body[0] != 1:
    sys.exit("org.freedesktop.secrets is already owned")
open(os.path.join(directory, "ready"), "w").close()


def item_properties():
    if mode == "getall":
        return {"Attributes": ("a{ss}", {"service": "x"}), "Label": ("s", "x"), "Created": ("s", "0"),
                "Modified": ("s", "0"), "Locked": ("b", False)}
    return {"Attributes": ("a{ss}", {}), "Label": ("s", "x"), "Created": ("t", 1), "Modified": ("t", 1), "Locked": ("b", False)}


def missing(msg, kind, path, interface):
    """The error a missing object or interface gets, in the wording GDBus uses."""
    if kind == "unknownobject":
        return new_error(msg, "org.freedesktop.DBus.Error.UnknownObject", "s", (f"No such object path '{path}'",))
    name = "org.freedesktop.DBus.Error.UnknownMethod" if kind == "nosuchinterface" else "org.freedesktop.DBus.Error.UnknownInterface"
    return new_error(msg, name, "s", (f"No such interface '{interface}' on object at path {path}",))


def answer(msg):
    fields = msg.header.fields
    member, interface, path = fields.get(HeaderFields.member), fields.get(HeaderFields.interface), fields.get(HeaderFields.path)
    if mode.startswith("collections-") and member == "Get" and path == SERVICE and msg.body[1] == "Collections":
        return missing(msg, mode.split("-")[1], path, interface)
    if mode.startswith("readalias-") and member == "ReadAlias":
        return missing(msg, mode.split("-")[1], path, interface)
    if mode == "collection-vanished" and member == "Get" and path == LOGIN and msg.body[1] == "Locked":
        return missing(msg, "unknownobject", path, interface)
    if member == "OpenSession":
        if msg.body[0] == "plain":
            return new_method_return(msg, "vo", (("s", ""), "/org/freedesktop/secrets/session/1"))
        return new_error(msg, "org.freedesktop.DBus.Error.NotSupported", "s", ("plain only",))
    if member == "SearchItems":
        if mode == "search":
            return new_method_return(msg, "ao", ([],))
        found = [ITEM] if mode in ("getall", "unknownmethod") else []
        return new_method_return(msg, "aoao", (found, []))
    if member == "GetAll" and msg.body[0] == "org.freedesktop.Secret.Item":
        if mode == "unknownmethod":
            return new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", "s", ("not in this stand-in",))
        return new_method_return(msg, "a{sv}", (item_properties(),))
    if member == "GetAll":
        return new_method_return(msg, "a{sv}", ({"Collections": ("ao", [LOGIN])},))
    if member == "Get" and msg.body[1] == "Collections":
        if mode == "collections":
            return new_method_return(msg, "v", (("as", [LOGIN]),))
        return new_method_return(msg, "v", (("ao", [LOGIN]),))
    if member == "Get" and msg.body[1] == "Locked":
        return new_method_return(msg, "v", (("s", "no"),) if mode == "locked" else (("b", False),))
    if member == "ReadAlias":
        return new_method_return(msg, "s", (LOGIN,)) if mode == "readalias" else new_method_return(msg, "o", (LOGIN,))
    if member == "CreateItem":
        open(os.path.join(directory, "created"), "w").close()
        return new_method_return(msg, "oo", (LOGIN + "/2", "/"))
    return new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", "s", (f"not in this stand-in: {member}",))


while True:
    msg = conn.receive()
    if msg.header.message_type == MessageType.method_call:
        conn.send(answer(msg))
"""#
}
