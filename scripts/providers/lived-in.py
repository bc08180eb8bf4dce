#!/usr/bin/python3
"""Fills a throwaway gnome-keyring the way years of desktop use leave one, in one client process.

Usage (inside scripts/with-keyring, which runs it when given --lived-in):
  lived-in.py populate   other clients' items in login and session, an old "Default keyring" with
                         its own password left locked, a third keyring "Work" that the default alias
                         names, with a password of its own too (WITH_KEYRING_PASSWORD + "-work", what
                         keyring-ctl's mock prompter answers for it)
  lived-in.py unlock     after a daemon restart: unlock "Work" again (gnome-keyring's --unlock opens
                         login only), so a restarted lived-in keyring is as open as a pristine one

It talks D-Bus with jeepney over a plain session, through gnome-keyring's private interface for
collections with a given password (CreateWithMasterPassword, UnlockWithMasterPassword), because
the public CreateCollection and Unlock need a prompt. Calls are pipelined: every CreateItem is
sent before the replies are read, so 2,000 items take one process and a few seconds.
"""
import os
import sys

from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection
from jeepney.wrappers import unwrap_msg

SERVICE = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets",
                      interface="org.freedesktop.Secret.Service")
INTERNAL = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"
PROPS = "org.freedesktop.DBus.Properties"
LABEL = "org.freedesktop.Secret.Collection.Label"
OLD_PASSWORD = b"an-old-password-nobody-remembers"

# Other clients' items: (schema, attributes, label). Some share the `service` attribute apps use
# (python-keyring's and secret-tool's), as on a real desktop, and one is python-keyring's item for
# a service the suites use, under another user name.
def other_items(count, start=0):
    shapes = [
        ("org.freedesktop.NetworkManager.Connection",
         lambda i: {"connection-uuid": f"6f1c{i:04x}-0000-4000-8000-00000000{i:04x}", "setting-name": "802-11-wireless-security",
                    "setting-key": "psk"}, lambda i: f"Network secret for Wi-Fi {i}"),
        ("chrome_libsecret_os_crypt_password_v2", lambda i: {"application": "chrome"}, lambda i: f"Chrome Safe Storage {i}"),
        ("org.gnome.OnlineAccounts", lambda i: {"goa-identity": f"oauth2:account_{i}"}, lambda i: f"GOA google credentials {i}"),
        (None, lambda i: {"service": f"python-keyring-app-{i % 40}", "username": f"user{i}", "application": "Python keyring library"},
         lambda i: f"Password for 'user{i}' on 'python-keyring-app-{i % 40}'"),
        (None, lambda i: {"service": f"git:https://git{i % 7}.example.com", "username": f"dev{i}", "protocol": "https"},
         lambda i: f"Git: https://git{i % 7}.example.com/"),
        (None, lambda i: {"service": f"secret-tool-{i % 25}", "username": f"u{i}"}, lambda i: f"secret-tool item {i}"),
    ]
    for n in range(start, start + count):
        schema, attributes, label = shapes[n % len(shapes)]
        attrs = attributes(n)
        if schema:
            attrs["xdg:schema"] = schema
        yield attrs, label(n), f"secret-{n}".encode()


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    # Not the login password: gnome-keyring would then open "Work" on Unlock with no prompt at all.
    password = os.environ["WITH_KEYRING_PASSWORD"].encode() + b"-work"
    bus = open_dbus_connection(bus="SESSION")
    call = lambda msg: unwrap_msg(bus.send_and_get_reply(msg, timeout=30))  # raises on an error reply
    session = call(new_method_call(SERVICE, "OpenSession", "sv", ("plain", ("s", ""))))[1]
    secret = lambda value: (session, b"", value, "text/plain")

    def collection_by_label(label):
        paths = call(new_method_call(DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets", interface=PROPS),
                                     "Get", "ss", ("org.freedesktop.Secret.Service", "Collections")))[0][1]
        for path in paths:
            address = DBusAddress(path, bus_name="org.freedesktop.secrets", interface=PROPS)
            if call(new_method_call(address, "Get", "ss", ("org.freedesktop.Secret.Collection", "Label")))[0][1] == label:
                return path
        return None

    internal = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets", interface=INTERNAL)
    if command == "unlock":
        work = collection_by_label("Work")
        if work:
            call(new_method_call(internal, "UnlockWithMasterPassword", "o(oayays)", (work, secret(password))))
        return 0
    if command != "populate":
        print(__doc__, file=sys.stderr)
        return 64

    def create(collection, items):
        address = DBusAddress(collection, bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Collection")
        items = list(items)
        # In windows of 100, so that neither side's socket buffer fills while the other writes.
        for first in range(0, len(items), 100):
            window = items[first:first + 100]
            for attrs, label, value in window:
                properties = {"org.freedesktop.Secret.Item.Label": ("s", label),
                              "org.freedesktop.Secret.Item.Attributes": ("a{ss}", attrs)}
                bus.send(new_method_call(address, "CreateItem", "a{sv}(oayays)b", (properties, secret(value), False)))
            for _ in window:
                reply = bus.receive(timeout=60)
                while HeaderFields.reply_serial not in reply.header.fields:  # a signal: not ours
                    reply = bus.receive(timeout=60)
                # Each CreateItem must have made its item at once, with no prompt.
                if reply.header.message_type == MessageType.error or reply.body[0] == "/":
                    raise SystemExit(f"lived-in: CreateItem in {collection} failed: {reply.body}")

    login = "/org/freedesktop/secrets/collection/login"
    create(login, other_items(500))
    create("/org/freedesktop/secrets/collection/session", other_items(1500, start=500))
    old = call(new_method_call(internal, "CreateWithMasterPassword", "a{sv}(oayays)",
                               ({LABEL: ("s", "Default keyring")}, secret(OLD_PASSWORD))))[0]
    # One item a test addresses (TestProvider.livedInOldItem): SecretStore's shape, in the locked keyring.
    old_item = ({"service": "io.keyringidentity.lived-in.old", "username": "", "xdg:schema": "io.keyringidentity.SecretStore"},
                "io.keyringidentity.lived-in.old", b"from-the-old-keyring")
    create(old, list(other_items(40, start=2000)) + [old_item])
    work = call(new_method_call(internal, "CreateWithMasterPassword", "a{sv}(oayays)",
                                ({LABEL: ("s", "Work")}, secret(password))))[0]
    create(work, other_items(20, start=2040))
    call(new_method_call(SERVICE, "Lock", "ao", ([old],)))
    call(new_method_call(SERVICE, "SetAlias", "so", ("default", work)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
