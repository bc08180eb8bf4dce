#!/usr/bin/python3
# Usage: scripts/with-keyring --provider PROVIDER /usr/bin/python3 scripts/providers/watch-reads.py [ROUNDS]
#
# A diagnostic (not a test): what a client that reads another client's item on each signal, as a
# change watch does, can see. Each round secret-tool stores a new item, and this client reads it
# (Properties.GetAll, GetSecret over a plain session, GetSecrets over an encrypted one) on every
# signal that names it; then secret-tool clears it while this client reads in a tight loop.
#
# Measured on these machines (40 rounds each), which is why a secret that cannot be read is not a
# change for the watch (ServiceChangeSource.seen):
# - while an item is deleted, GetSecrets leaves it out with no error in 16-23 of 40 rounds, after
#   GetAll read it (gnome-keyring 43, KeePassXC 2.7.4; 0 on kwalletd5, whose reads fail instead).
#   It is a race, not a provider bug: GetAll fails right after in every such round.
# - KeePassXC shows a new item before it holds the client's attributes (0-2 of 40 rounds: only its
#   own Title, Uuid, Path... attributes), and sends ItemChanged naming the path "/".
# Exits 1 when a read saw an unfinished item or GetSecrets left out an item that is still there.
import subprocess
import sys

from jeepney import DBusAddress, MatchRule, message_bus, new_method_call
from jeepney.io.blocking import open_dbus_connection

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 50
conn = open_dbus_connection(bus="SESSION")
service = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets",
                      interface="org.freedesktop.Secret.Service")
for member in ("ItemCreated", "ItemChanged"):
    rule = MatchRule(type="signal", interface="org.freedesktop.Secret.Collection", member=member)
    conn.send_and_get_reply(message_bus.AddMatch(rule))
_, session = conn.send_and_get_reply(new_method_call(service, "OpenSession", "sv", ("plain", ("s", "")))).body
# An encrypted session too, read as libsecret reads: AES-128-CBC, then PKCS#7 padding checked.
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from secretstorage.util import open_session
encrypted = open_session(conn)

def decrypt(iv, data):
    decryptor = Cipher(algorithms.AES(encrypted.aes_key), modes.CBC(bytes(iv))).decryptor()
    padded = decryptor.update(bytes(data)) + decryptor.finalize()
    pad = padded[-1] if padded else 0
    if not 1 <= pad <= 16 or padded[-pad:] != bytes([pad]) * pad:
        return ("undecryptable", len(data))
    return padded[:-pad]

def call(path, interface, member, signature=None, body=()):
    address = DBusAddress(path, bus_name="org.freedesktop.secrets", interface=interface)
    reply = conn.send_and_get_reply(new_method_call(address, member, signature, body), timeout=10)
    if reply.header.message_type.name == "error":
        raise RuntimeError("%s: %s" % (member, reply.body[0] if reply.body else "error"))
    return reply.body

def look(path):
    properties = call(path, "org.freedesktop.DBus.Properties", "GetAll", "s", ("org.freedesktop.Secret.Item",))[0]
    attributes = dict(properties["Attributes"][1])
    try:
        secret = bytes(call(path, "org.freedesktop.Secret.Item", "GetSecret", "o", (session,))[0][2])
        # As libsecret and this library read: GetSecrets on the service, over the encrypted session.
        found = call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "GetSecrets", "aoo",
                     ([path], encrypted.object_path))[0]
        _, iv, data, _ = found[path]
        read = decrypt(iv, data)
        if read != secret:
            secret = ("plain read %r, encrypted read %r" % (secret, read))
    except Exception as error:  # the item may be gone again, or unreadable for a moment
        secret = ("error", str(error))
    return attributes, secret

seen = unfinished = empty_paths = deleting_reads = omitted = raced = 0
examples = []
for n in range(rounds):
    marker = "repro-early-%d" % n
    value = ("value %d" % n).encode()
    child = subprocess.Popen(["secret-tool", "store", "--label", marker, "service", marker],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    child.stdin.write(value)
    child.stdin.close()
    looked = set()
    while True:
        try:
            message = conn.receive(timeout=0.05)
        except TimeoutError:
            if child.poll() is not None:
                break
            continue
        if message.header.message_type.name != "signal" or not message.body:
            continue
        path = message.body[0]
        if path == "/":
            empty_paths += 1  # a signal naming no item
            continue
        try:
            attributes, secret = look(path)
        except RuntimeError as error:
            seen += 1
            unfinished += 1
            if len(examples) < 3:
                examples.append("%s: %s" % (path, error))
            continue
        if attributes.get("service", marker) != marker:
            continue  # another client's item
        looked.add(path)
        seen += 1  # every signal: a change watch reads on each one
        if attributes.get("service") != marker or secret != value:
            unfinished += 1
            if len(examples) < 3:
                examples.append("%s: attributes %s, secret %r" % (path, sorted(attributes), secret))
    child.wait()
    # Deleting: read the item in a tight loop while secret-tool clears it, until its properties go.
    path = next(iter(looked), None)
    clearing = subprocess.Popen(["secret-tool", "clear", "service", marker])
    while path is not None:
        try:
            call(path, "org.freedesktop.DBus.Properties", "GetAll", "s", ("org.freedesktop.Secret.Item",))
            found = call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "GetSecrets", "aoo",
                         ([path], encrypted.object_path))[0]
        except RuntimeError:
            break  # gone
        deleting_reads += 1
        if path not in found:
            # Left out with no error; it may just have gone between the two calls. Still there after?
            try:
                call(path, "org.freedesktop.DBus.Properties", "GetAll", "s", ("org.freedesktop.Secret.Item",))
                omitted += 1
            except RuntimeError:
                raced += 1
            break
        if clearing.poll() is not None:
            break
    clearing.wait()
print("%d rounds, %d looks, %d saw an unfinished item; %d signals named the path /"
      % (rounds, seen, unfinished, empty_paths))
print("while deleting: %d reads; GetSecrets left the item out in %d rounds while its properties read before and"
      " after, and in %d as it went" % (deleting_reads, omitted, raced))
for example in examples:
    print("  e.g. " + example)
sys.exit(1 if unfinished or omitted else 0)
