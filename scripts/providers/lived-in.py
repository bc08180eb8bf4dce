#!/usr/bin/python3
"""Fills a throwaway keyring the way years of desktop use leave one, in one client process.

Usage (inside scripts/with-keyring, which runs it when given --lived-in):
  lived-in.py populate   other clients' items in login and session, an old "Default keyring" with
                         its own password left locked, a third keyring "Work" that the default alias
                         names, with a password of its own too (WITH_KEYRING_PASSWORD + "-work", what
                         keyring-ctl's mock prompter answers for it)
  lived-in.py unlock     after a daemon restart: unlock "Work" again (gnome-keyring's --unlock opens
                         login only), so a restarted lived-in keyring is as open as a pristine one
  lived-in.py unlock-default   unlock the default collection with WITH_KEYRING_PASSWORD, no prompt
                         (oo7-daemon, which exports the same private interface: keyring-ctl unlock)
  lived-in.py fill OTHERS OLD    KWallet (scripts/providers/kwallet.sh): 300 other clients' items in
                         collection OTHERS and 40 plus the old SecretStore item in collection OLD,
                         which the caller then locks
  lived-in.py fill-file   libsecret's file backend (SECRET_BACKEND=file, SECRET_FILE_TEST_PATH and
                         SECRET_FILE_TEST_PASSWORD set): 2,000 other clients' items in that keyring
                         file, through libsecret itself (about a minute: each store rewrites the file)
  lived-in.py kdbx-entries others|old   KeePassXC (scripts/providers/keepassxc.sh): the same items as
                         KeePass XML <Entry> elements, which keepassxc-cli imports into a database:
                         made through KeePassXC's CreateItem, a database's entries now and then lost
                         every attribute when it was saved (1 run in 3), so they are made offline

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


# One item a test addresses (TestProvider.livedInOldItem): SecretStore's shape, in the locked keyring.
OLD_ITEM = ({"service": "io.keyringidentity.lived-in.old", "username": "", "xdg:schema": "io.keyringidentity.SecretStore"},
            "io.keyringidentity.lived-in.old", b"from-the-old-keyring")


def kdbx_entries(which):
    """KeePass XML entries: the label is the Title, the secret the Password, each attribute a string field."""
    from xml.sax.saxutils import escape
    import base64
    import uuid
    items = other_items(300) if which == "others" else list(other_items(40, start=2000)) + [OLD_ITEM]
    for attrs, label, value in items:
        fields = {"Title": label, "Password": value.decode(), **attrs}
        strings = "".join(f"<String><Key>{escape(k)}</Key><Value>{escape(v)}</Value></String>" for k, v in fields.items())
        print(f"<Entry><UUID>{base64.b64encode(uuid.uuid4().bytes).decode()}</UUID>{strings}</Entry>")
    return 0


def fill_file():
    """Stores the items through libsecret, which writes them to its file backend's keyring file."""
    if os.environ.get("SECRET_BACKEND") != "file" or not os.environ.get("SECRET_FILE_TEST_PATH"):
        raise SystemExit("lived-in: fill-file needs SECRET_BACKEND=file and SECRET_FILE_TEST_PATH")
    import gi
    gi.require_version("Secret", "1")
    from gi.repository import Secret
    for attrs, label, value in other_items(2000):
        if not Secret.password_store_sync(None, attrs, None, label, value.decode(), None):
            raise SystemExit(f"lived-in: storing {label} in the keyring file failed")
    return 0


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "kdbx-entries":
        return kdbx_entries(sys.argv[2])
    if command == "fill-file":
        return fill_file()
    # Not the login password: gnome-keyring would then open "Work" on Unlock with no prompt at all.
    password = os.environ["WITH_KEYRING_PASSWORD"].encode() + b"-work"
    bus = open_dbus_connection(bus="SESSION")
    # Prompts' Completed signals (KeePassXC's CreateItem), which a plain connection is not sent.
    bus.send_and_get_reply(new_method_call(DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus",
                                                       interface="org.freedesktop.DBus"), "AddMatch", "s",
                                           ("type='signal',interface='org.freedesktop.Secret.Prompt',member='Completed'",)), timeout=30)
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
    if command == "unlock-default":
        default = call(new_method_call(SERVICE, "ReadAlias", "s", ("default",)))[0]
        call(new_method_call(internal, "UnlockWithMasterPassword", "o(oayays)",
                             (default, secret(os.environ["WITH_KEYRING_PASSWORD"].encode()))))
        return 0
    if command == "unlock":
        work = collection_by_label("Work")
        if work:
            call(new_method_call(internal, "UnlockWithMasterPassword", "o(oayays)", (work, secret(password))))
        return 0
    if command not in ("populate", "fill"):
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
            prompts = []
            for _ in window:
                reply = bus.receive(timeout=60)
                while HeaderFields.reply_serial not in reply.header.fields:  # a signal: not ours
                    reply = bus.receive(timeout=60)
                if reply.header.message_type == MessageType.error or (reply.body[0] == "/" and reply.body[1] == "/"):
                    raise SystemExit(f"lived-in: CreateItem in {collection} failed: {reply.body}")
                if reply.body[0] == "/":
                    prompts.append(reply.body[1])
            # KeePassXC answers every CreateItem with a prompt, which completes at once with every
            # confirmation off; gnome-keyring and KWallet make the item at once.
            for path in prompts:
                bus.send(new_method_call(DBusAddress(path, bus_name="org.freedesktop.secrets",
                                                     interface="org.freedesktop.Secret.Prompt"), "Prompt", "s", ("",)))
            completed = replied = 0  # both counted: the bus limits a connection's pending replies
            while completed < len(prompts) or replied < len(prompts):
                message = bus.receive(timeout=60)
                if message.header.message_type == MessageType.error:
                    raise SystemExit(f"lived-in: a CreateItem prompt in {collection} failed: {message.body}")
                if message.header.message_type == MessageType.method_return:
                    replied += 1
                elif message.header.fields.get(HeaderFields.member) == "Completed":
                    if message.body[0]:
                        raise SystemExit(f"lived-in: a CreateItem prompt in {collection} was dismissed")
                    completed += 1

    old_item = OLD_ITEM
    if command == "fill":
        others, old = sys.argv[2], sys.argv[3]
        create(others, other_items(300))
        create(old, list(other_items(40, start=2000)) + [old_item])
        return 0

    login = "/org/freedesktop/secrets/collection/login"
    create(login, other_items(500))
    create("/org/freedesktop/secrets/collection/session", other_items(1500, start=500))
    old = call(new_method_call(internal, "CreateWithMasterPassword", "a{sv}(oayays)",
                               ({LABEL: ("s", "Default keyring")}, secret(OLD_PASSWORD))))[0]
    create(old, list(other_items(40, start=2000)) + [old_item])
    work = call(new_method_call(internal, "CreateWithMasterPassword", "a{sv}(oayays)",
                                ({LABEL: ("s", "Work")}, secret(password))))[0]
    create(work, other_items(20, start=2040))
    call(new_method_call(SERVICE, "Lock", "ao", ([old],)))
    call(new_method_call(SERVICE, "SetAlias", "so", ("default", work)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
