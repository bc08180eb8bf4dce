#!/usr/bin/python3
"""A stand-in for xdg-desktop-portal's Secret portal, for tests on a private session bus.

Usage: portal-standin.py SEED READY_FILE [response-first]

Owns org.freedesktop.portal.Desktop and answers as the real portal does:
- Properties.Get(org.freedesktop.portal.Secret, version) -> 1, libsecret's version check;
- RetrieveSecret(h fd, a{sv} options) -> the request's object path; then it writes the app's
  64-byte secret (SHA-512 of SEED) into the fd, closes it, and emits Request.Response(0, {}) on
  that path, which is what libsecret's file backend waits for.
It writes READY_FILE once it owns the name, and serves until it is killed.
With response-first it sends the Response once, before the reply, as a fast real portal can
(xdg-desktop-portal answers before it asks its backend): a client must have subscribed first.

libsecret 0.20 may subscribe to the Response signal only after the RetrieveSecret reply has
arrived (the real portal answers after the user's interaction, never at once), so the stand-in
sends the Response a few times, spaced out; libsecret acts on the first it sees and unsubscribes.
"""
import hashlib
import os
import sys
import time

from jeepney import DBusAddress, HeaderFields, MessageType, new_error, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

seed, ready_file = sys.argv[1], sys.argv[2]
mode = sys.argv[3] if len(sys.argv) > 3 else ""
response_first = mode == "response-first"  # the Response before the call's reply, as a fast portal can
secret = hashlib.sha512(seed.encode()).digest()  # 64 bytes, as libsecret requires
if mode == "short":  # a broken backend: fewer bytes than a secret
    secret = secret[:10]
held = []  # mode "hold-open": write ends kept open after the secret, as a backend that forks can

conn = open_dbus_connection(bus="SESSION", enable_fds=True)
owned = conn.send_and_get_reply(message_bus.RequestName("org.freedesktop.portal.Desktop", 4))
if owned.body[0] != 1:
    sys.exit("org.freedesktop.portal.Desktop is already owned")
with open(ready_file, "w") as ready:
    ready.write("ready\n")

pending = []  # [when, response, sends left]

while True:
    now = time.monotonic()
    for entry in pending:
        if entry[0] <= now:
            conn.send(entry[1])
            entry[2] -= 1
            entry[0] = now + 0.1 * 2 ** (6 - entry[2])
    pending = [entry for entry in pending if entry[2] > 0]
    try:
        msg = conn.receive(timeout=min([entry[0] for entry in pending], default=now + 60) - now if pending else None)
    except TimeoutError:
        continue
    if msg.header.message_type != MessageType.method_call:
        continue
    fields = msg.header.fields
    member = fields.get(HeaderFields.member)
    interface = fields.get(HeaderFields.interface)
    if interface == "org.freedesktop.portal.Secret" and member == "RetrieveSecret":
        fd, options = msg.body
        token = options.get("handle_token", ("s", "t"))[1]
        sender = fields[HeaderFields.sender]
        path = "/org/freedesktop/portal/desktop/request/" + sender[1:].replace(".", "_") + "/" + token
        if not response_first:
            conn.send(new_method_return(msg, "o", (path,)))
        if mode == "hold-open":
            held.append(fd.to_raw_fd())
            os.write(held[-1], secret)
        else:
            with fd.to_file("wb") as pipe:
                pipe.write(secret)
        response = new_signal(DBusAddress(path, interface="org.freedesktop.portal.Request"), "Response", "ua{sv}", (0, {}))
        # Sent to the caller alone, as the portal does: libsecret subscribes without a match rule.
        response.header.fields[HeaderFields.destination] = sender
        if response_first:
            conn.send(response)
            conn.send(new_method_return(msg, "o", (path,)))
        else:
            pending.append([time.monotonic(), response, 7])
    elif interface == "org.freedesktop.DBus.Properties" and member == "Get" and msg.body == (
        "org.freedesktop.portal.Secret",
        "version",
    ):
        conn.send(new_method_return(msg, "v", (("u", 1),)))
    else:
        conn.send(new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", "s", (f"not in this stand-in: {member}",)))
