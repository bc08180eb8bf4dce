#!/usr/bin/python3
"""Another client on the chaos session's bus (jeepney: Debian's python3-jeepney, hence /usr/bin/python3).

Usage: busload.py hold NAME
  Owns NAME with RequestName(DO_NOT_QUEUE), as a process inside its creation does with the
  creation lock io.keyringidentity.Create.h<hash>. Tries for up to 2 s (an idtool may own it
  briefly), then prints "acquired" or "busy". Once acquired, it keeps the name until a line or
  EOF arrives on stdin, then releases it, prints "released" and exits.
Usage: busload.py flood COUNT
  Owns a media player's name (no Secret Service name) and broadcasts COUNT
  org.freedesktop.DBus.Properties.PropertiesChanged signals, as a player announcing metadata does:
  most on its own path, some on a Secret Service collection's path (a foreign sender a subscriber
  must not take for the keyring). Prints "sent N in S s" on stderr.
"""
import os
import sys
import time

from jeepney import new_signal, DBusAddress
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

DO_NOT_QUEUE = 4


def hold(name):
    conn = open_dbus_connection(bus="SESSION")
    deadline = time.monotonic() + 2
    while True:
        code = conn.send_and_get_reply(message_bus.RequestName(name, DO_NOT_QUEUE)).body[0]
        if code == 1:
            break
        if time.monotonic() >= deadline:
            print("busy", flush=True)
            return
        time.sleep(0.02)
    print("acquired", flush=True)
    sys.stdin.readline()
    conn.send_and_get_reply(message_bus.ReleaseName(name))
    print("released", flush=True)
    conn.close()


def flood(count):
    conn = open_dbus_connection(bus="SESSION")
    name = f"org.mpris.MediaPlayer2.chaos{os.getpid()}"
    conn.send_and_get_reply(message_bus.RequestName(name, DO_NOT_QUEUE))
    player = DBusAddress("/org/mpris/MediaPlayer2", interface="org.freedesktop.DBus.Properties")
    lookalike = DBusAddress("/org/freedesktop/secrets/collection/login", interface="org.freedesktop.DBus.Properties")
    started = time.monotonic()
    for n in range(count):
        if n % 10 == 9:
            message = new_signal(lookalike, "PropertiesChanged", "sa{sv}as",
                                 ("org.freedesktop.Secret.Collection", {"Locked": ("b", n % 20 == 9)}, []))
        else:
            message = new_signal(player, "PropertiesChanged", "sa{sv}as",
                                 ("org.mpris.MediaPlayer2.Player",
                                  {"Metadata": ("a{sv}", {"xesam:title": ("s", f"track {n}")}), "Position": ("x", n)}, []))
        conn.send(message)
    # A round trip: every signal before it has reached the bus.
    conn.send_and_get_reply(message_bus.GetId())
    print(f"sent {count} in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    conn.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["hold"] and len(sys.argv) == 3:
        hold(sys.argv[2])
    elif sys.argv[1:2] == ["flood"] and len(sys.argv) == 3:
        flood(int(sys.argv[2]))
    else:
        sys.exit(__doc__)
