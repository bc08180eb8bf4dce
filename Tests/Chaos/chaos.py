#!/usr/bin/env python3
"""A randomized, model-based test of idtool against a real Secret Service provider (run by
scripts/chaos; gnome-keyring unless --provider names another of scripts/providers/).

The world: three scopes (two apps, and a vendor group two apps share) and three environments:
  desktop  the session bus, the session's XDG_STATE_HOME and XDG_RUNTIME_DIR;
  sandbox  the same bus, its own XDG_STATE_HOME and XDG_RUNTIME_DIR (a Flatpak, cron, another version);
  ssh      no bus at all, sharing the desktop's XDG_STATE_HOME (an SSH session into the desktop).

Each step picks an operation: get (alone or in a concurrent burst), show, reset, migrate, lock,
unlock, daemon kill (D-Bus activation brings it back locked), daemon restart, SIGSTOP with a short
--timeout, deleting the identity item behind our back, planting a younger twin item, deleting or
corrupting a backup, and SIGKILL of an in-flight get or reset. Apart from that schedule (from a
generator of their own, so every seed's steps stay as they were; --without leaves them out), a
step may also run:
  slow_creator  another process holds a scope's creation lock (the bus name
                io.keyringidentity.Create.h<hash>; with the file backend the keyring file's write
                lock) for 1-4 s while gets with --timeout 1 or 2 run, and on a first run stores a
                value of its own before releasing it, as a creator slow inside its creation does;
  flood         a media player broadcasts 10,000-40,000 foreign PropertiesChanged signals in the
                background while the next steps run (Tests/Chaos/busload.py, also the lock holder).

The model gives each scope an epoch; a successful reset starts a new one. Invariants:
  1. within an epoch, every successful get/show/migrate of a scope prints the same bytes;
  2. at the end, with the keyring healthy, one identity item per scope, equal to the last value;
  3. no crash, no GLib critical, no call past its --timeout plus a margin;
  4. stderr never holds an identifier.
While another process holds a first run's creation lock, a get either adopts the value the keyring
ends up holding or fails (75) printing nothing: handing out an identifier of its own that the
keyring's then replaces, or keeping a new one in the backup alone (the keyring was reachable), is a
violation of invariant 1, which no exception below excuses.
Where the design allows a change, the change is named, counted and listed (never hidden):
  killed-reset       a reset SIGKILLed mid-way may or may not have happened;
  pending-reset      a reset made without a bus reaches other environments once the state
                     directory it shares reaches the keyring;
  headless-overruled an identifier made with no keyring (the backup alone held it) loses to
                     the keyring's, which another environment made meanwhile;
  double-loss        every store that held the identifier was deleted;
  planted-item       a foreign item planted while the scope's own item was missing wins (and,
                     when it lived only in memory, a restart brings the scope's own back);
  provider-crash-loss a provider that saves its file later (KWallet, KeePassXC) was killed right
                     after a write, and the environment's backup was gone too.
With --backend file (scripts/chaos --provider file) the keyring is libsecret's file backend, what a
sandboxed app gets: desktop and sandbox share one keyring file and its key (SECRET_BACKEND=file,
SECRET_FILE_TEST_PATH, SECRET_FILE_TEST_PASSWORD), each with its own state directory as before;
ssh has no keyring at all. The daemon operations are replaced by file faults: a wrong key, a
damaged file (empty, truncated, garbage, a flipped byte), an unreadable file (a directory at its
path), each lasting until a heal step restores it; the file deleted; the file replaced by an older
copy; the file's write lock held during a get with --timeout 1. While a fault lasts, desktop and
sandbox may only serve their backup or fail (65, 69, 75), never make or adopt an identifier, and
the damaged file must be left byte for byte as it was; a one-bit flip may leave a file that still
opens (the format authenticates each item, not the whole file), so that one may also be read and
written (--no-flip leaves it out). Two more named exceptions:
  keyring-rollback   the file was replaced by an older copy: an identifier that copy holds wins
                     (the keyring is the source of truth), even one reset since;
  reset-record-lost  the file was deleted or rolled back, and with it the record of a reset: a
                     backup from before that reset brings the reset identifier back;
  reset-redone       an identifier that an older or lost keyring file brought back (either
                     exception above) is replaced again, by the value it replaced or a new one: the
                     environment that completed a reset keeps it (identifier.reset-done) and makes
                     it again when the identifier is one it voids (its recorded value, or with none
                     recorded, any older than the reset).
--scenario reset-redone and reset-redone-older run those sequences on purpose (the reset
identifier brought back by another backup; an older foreign item brought back by the file), so
the model's handling of them is checked in every run, not only when a seed's timing produces it.
Exit status: 0 when no invariant broke, 1 otherwise (every violation is printed with its step).
"""
import argparse
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

TIMEOUT = 4          # idtool --timeout for every call
MARGIN = 3.0         # allowed overrun of --timeout (process start-up, a loaded machine)
PROVIDER = os.environ.get("KEYRING_PROVIDER", "gnome-keyring")
# gnome-keyring writes its file before it answers; the others save later, so a kill may lose
# what they were told last.
SAVES_BEFORE_ANSWERING = PROVIDER == "gnome-keyring"
# Twins go where the daemon keeps them only in memory when it can (gnome-keyring's session
# collection); elsewhere into the default collection.
TWIN_COLLECTION = ["--collection=/org/freedesktop/secrets/collection/session"] if PROVIDER == "gnome-keyring" else []
BACKEND = "service"   # or "file": libsecret's file backend (set by main)
# Another client on the bus (the slow creator's lock, the signal flood) runs Tests/Chaos/busload.py,
# which needs jeepney: Debian's python3-jeepney, for the system's python3.
BUSLOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "busload.py")
BUS_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def use_file_backend():
    global BACKEND, PROVIDER, SAVES_BEFORE_ANSWERING, TWIN_COLLECTION
    BACKEND, PROVIDER, SAVES_BEFORE_ANSWERING, TWIN_COLLECTION = "file", "file", True, []


UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Scope:
    def __init__(self, kind, name, apps):
        self.kind, self.name, self.apps = kind, name, apps
        self.epoch = 0
        self.value = None          # the value handed out in this epoch
        self.places = set()        # where that value is known to be stored: keyring, desktop, sandbox
        self.headless_only = False  # handed out while only a backup held it
        self.maybe_reset = set()   # state dirs where a reset was killed mid-way (its marker may be left)
        self.pending = set()       # the values a reset made without a bus voids, until it reaches the keyring
        self.history = set()       # every value handed out for this scope
        self.planted = False       # a twin was planted while the item was missing
        self.crash_exposed = False  # the provider was killed before it may have saved the item
        self.twin_vanished = False  # the value handed out was a twin in memory, gone with a restart
        self.superseded = set()    # values of this epoch that an allowed change replaced
        self.void = set()          # values a successful reset removed
        self.rollback = set()      # values an older copy of the keyring file brought back
        self.unrecorded = set()    # void values whose reset record a lost keyring file took with it
        self.came_back = set()     # values adopted because an older or lost keyring file brought them back

    def args(self, rng):
        app = rng.choice(self.apps)
        return ["--app", app] + (["--vendor", self.name] if self.kind == "vendor" else [])

    def backup_path(self, state):
        return os.path.join(state, "keyring-identity", self.kind, self.name, "identifier")


class Chaos:
    def __init__(self, args, idtool=None, quiet=False):
        self.args = args
        self.quiet = quiet
        self.rng = random.Random(args.seed)
        self.idtool = idtool or args.idtool
        self.transcript = []
        self.ctl = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "keyring-ctl")
        root = tempfile.mkdtemp(prefix="chaos-", dir=os.environ.get("WITH_KEYRING_ROOT", "/tmp"))
        base = dict(os.environ, G_DEBUG="fatal-criticals")
        base.pop("IDTOOL_APP", None)
        dirs = ("desktop-state", "desktop-run", "sandbox-state", "sandbox-run", "ssh-run")
        desktop_state, desktop_run, sandbox_state, sandbox_run, ssh_run = (os.path.join(root, d) for d in dirs)
        for d in (desktop_state, desktop_run, sandbox_state, sandbox_run, ssh_run):
            os.makedirs(d, mode=0o700)
        base = dict(base, XDG_STATE_HOME=desktop_state, XDG_RUNTIME_DIR=desktop_run)
        self.states = {"desktop": desktop_state, "sandbox": sandbox_state}
        self.envs = {
            "desktop": base,
            "sandbox": dict(base, XDG_STATE_HOME=sandbox_state, XDG_RUNTIME_DIR=sandbox_run),
            "ssh": {k: v for k, v in dict(base, XDG_RUNTIME_DIR=ssh_run).items() if k != "DBUS_SESSION_BUS_ADDRESS"},
        }
        self.file_fault = None       # file backend: "wrong-key", "damaged" or "unreadable" until healed
        self.file_saved = None       # the good bytes a lasting fault replaced
        self.file_faulty = None      # the damaged bytes, which must stay untouched
        self.snapshots = []          # older copies of the keyring file, for rollback
        if BACKEND == "file":
            data = os.path.join(root, "data")
            os.makedirs(os.path.join(data, "keyrings"), mode=0o700)
            self.keyring_file = os.path.join(data, "keyrings", "default.keyring")
            self.key = "chaos-key-" + uuid.uuid4().hex
            files = dict(SECRET_BACKEND="file", SECRET_FILE_TEST_PATH=self.keyring_file,
                         SECRET_FILE_TEST_PASSWORD=self.key, XDG_DATA_HOME=data)
            self.envs["desktop"] = dict(self.envs["desktop"], **files)
            self.envs["sandbox"] = dict(self.envs["sandbox"], **files)
            for name in ("SECRET_BACKEND", "SECRET_FILE_TEST_PATH", "SECRET_FILE_TEST_PASSWORD"):
                self.envs["ssh"].pop(name, None)
            self.OPS = self.FILE_OPS
            if os.environ.get("KEYRING_LIVED_IN") == "1":
                self.fill_lived_in_file(files)
        tag = self.tag = uuid.uuid4().hex[:6]
        self.scopes = [
            Scope("app", f"chaos.{tag}.one", [f"chaos.{tag}.one"]),
            Scope("app", f"chaos.{tag}.two", [f"chaos.{tag}.two"]),
            Scope("vendor", f"chaos.{tag}.group", [f"chaos.{tag}.a", f"chaos.{tag}.b"]),
        ]
        self.legacy_dir = os.path.join(root, "legacy")
        os.makedirs(self.legacy_dir)
        self.seen_values = set()
        self.session_values = set()  # twins live in the in-memory session collection
        self.planted_at = {}         # twin value -> wall-clock time it was planted
        self.reset_at = []           # wall-clock times of successful resets
        self.violations = []
        self.exceptions = {}
        self.counts = {}
        self.step = 0
        self.stopped_pid = None
        self.locked = False
        self.ssh_marker_before = False
        self.fresh_scopes = []       # one-off apps the slow creator op made (no other op touches them)
        self.flooder = None          # the running signal flood (busload.py flood), if any

    # ---- plumbing -------------------------------------------------------------------------
    def fill_lived_in_file(self, files):
        """--lived-in with the file backend: the keyring file starts with 2,000 other clients' items.

        A file already filled (scripts/test's, named by LIVED_IN_KEYRING_FILE with its key in
        LIVED_IN_KEYRING_KEY) is copied; else scripts/providers/lived-in.py fills one (about a minute).
        """
        filled, key = os.environ.get("LIVED_IN_KEYRING_FILE"), os.environ.get("LIVED_IN_KEYRING_KEY")
        if filled and key and os.path.exists(filled):
            with open(filled, "rb") as source, open(self.keyring_file, "wb") as target:
                target.write(source.read())
            os.chmod(self.keyring_file, 0o600)
            self.key = key
            files["SECRET_FILE_TEST_PASSWORD"] = key
            self.envs["desktop"]["SECRET_FILE_TEST_PASSWORD"] = key
            self.envs["sandbox"]["SECRET_FILE_TEST_PASSWORD"] = key
            return
        filler = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "providers", "lived-in.py")
        subprocess.run(["/usr/bin/python3", filler, "fill-file"], env=dict(os.environ, **files), check=True)

    def ctl_run(self, command):
        if command != "pid":
            self.transcript.append(f"scripts/keyring-ctl {command}")
        return subprocess.run([self.ctl, command], capture_output=True, text=True, timeout=60)

    def daemon_pid(self):
        out = self.ctl_run("pid").stdout.strip()
        return int(out) if out.isdigit() else None

    def violate(self, what, invariant=1):
        self.violations.append((invariant, f"step {self.step}: {what}"))
        self.transcript.append(f"# VIOLATION (invariant {invariant}): {what}")
        if not self.quiet:
            print(f"VIOLATION step {self.step}: {what}", file=sys.stderr, flush=True)

    def allow(self, name, detail):
        self.exceptions[name] = self.exceptions.get(name, 0) + 1
        if self.args.verbose:
            print(f"  exception {name}: {detail}", file=sys.stderr)

    def start(self, env, argv):
        proc = subprocess.Popen([self.idtool] + argv, env=self.envs[env], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        started = time.monotonic()
        # Its output and the moment it ended are collected on a thread of its own: finish() may come
        # long after (a slow creator's gets are finished once the hold and the creator's store are
        # over), and --timeout bounds the child's own time, not the checker's. Measured when finish()
        # ran, a get with --timeout 1 that began a 3 s hold "took 4.1 s" (seed 308).
        proc.chaos_done = threading.Event()

        def collect():
            proc.chaos_output = proc.communicate()
            proc.chaos_ended = time.monotonic()
            proc.chaos_done.set()
        threading.Thread(target=collect, daemon=True).start()
        return proc, started

    def finish(self, env, argv, proc, started, killed=False, budget=TIMEOUT):
        if not proc.chaos_done.wait(budget + MARGIN + 30):
            proc.kill()
            proc.chaos_done.wait()
            self.violate(f"{env} {' '.join(argv)} hung past {budget + MARGIN + 30} s", 3)
        out, err = proc.chaos_output
        elapsed = proc.chaos_ended - started
        err = err.decode(errors="replace")
        rc = proc.returncode
        if not killed:
            if rc < 0 or rc >= 128:
                self.violate(f"{env} {' '.join(argv)} crashed (status {rc}): {err.strip()[:300]}", 3)
            if elapsed > budget + MARGIN:
                self.violate(f"{env} {' '.join(argv)} took {elapsed:.1f} s, past --timeout {budget} + {MARGIN}", 3)
        self.transcript.append(
            f"[{env}] idtool {' '.join(argv)}{'  (SIGKILLed)' if killed else ''}   # exit {rc}: {out.decode(errors='replace').strip()[:80]}")
        if self.args.verbose:
            shown = out.decode(errors="replace").strip().replace("\n", " ")[:int(os.environ.get("CHAOS_LOG_WIDTH", "160"))]
            notes = " | ".join(line for line in err.splitlines() if line)[:300]
            print(f"    {env}: {' '.join(argv[:-2] if '--timeout' in argv else argv)} -> {rc}{' (killed)' if killed else ''} "
                  f"[{elapsed:.2f}s] {shown} {notes}", file=sys.stderr, flush=True)
        for noise in ("CRITICAL", "WARNING **", "Fatal error"):
            if noise in err:
                self.violate(f"{env} {' '.join(argv)}: stderr has {noise}: {err.strip()[:300]}", 3)
        for value in self.seen_values:
            if value in err:
                self.violate(f"{env} {' '.join(argv)}: stderr holds an identifier", 4)
        return rc, out, err

    def idtool_run(self, env, argv, budget=TIMEOUT):
        proc, started = self.start(env, argv)
        return self.finish(env, argv, proc, started, budget=budget)

    # ---- the model ------------------------------------------------------------------------
    def observe(self, scope, env, value, stored_in=None, provenance="", pending_at_start=None, pending_kept=False):
        """A value a successful command printed for `scope` in `env`. In a burst, the calls ran
        concurrently with any pending reset's completion, so `pending_at_start` still applies."""
        self.seen_values.add(value)
        scope.history.add(value)
        landed = set()  # the values a pending reset this answer shows to have landed removed
        if self.file_fault and not self.fault_may_read() and env != "ssh" and provenance != "backup":
            self.violate(f"{scope.kind} {scope.name}: {env} answered with provenance {provenance!r} while the keyring file "
                         f"was {self.file_fault} (only its backup may serve)")
        if pending_at_start and not scope.pending and value in pending_at_start and env != "desktop":
            self.allow("pending-reset", f"{env} read the keyring before a concurrent call completed a bus-less reset")
            return
        if scope.pending:
            old = scope.pending
            if value in old and env != "desktop":
                self.allow("pending-reset", f"{env} still sees the identifier a bus-less reset removed")
                return
            # Only the desktop's state directory holds the marker, so only a desktop answer shows
            # that the reset reached the keyring; a new value elsewhere shows nothing about it.
            if env == "desktop" and not pending_kept:
                landed = old
                scope.pending = set()  # the pending reset reached the keyring; this is the new epoch
                if value in old and not self.same_second(value):
                    self.violate(f"{scope.kind} {scope.name}: the desktop got back the identifier a reset removed")
                    return
        if value in scope.void and value != scope.value:
            if value in scope.rollback or value in scope.unrecorded:
                self.allow("keyring-rollback" if value in scope.rollback else "reset-record-lost",
                           f"{env} got back a reset identifier that a lost or older keyring file no longer records as reset")
                self.adopt_changed(scope, env, value, stored_in, provenance)
                scope.came_back.add(value)
                return
            if self.same_second(value):
                self.allow("same-second", "a foreign item made within a second of a reset outlived it")
                return
            if provenance == "backup":
                # Another environment's backup still holds the reset identifier, and its keyring read
                # fails (locked, timed out): the reset record in the keyring cannot be seen yet.
                self.allow("reset-not-yet-visible", f"{env} served a reset identifier from its backup while the keyring was unreadable")
            else:
                self.violate(f"{scope.kind} {scope.name}: {env} got back a reset identifier (provenance {provenance})")
            return
        if scope.value is None or scope.value == value:
            if scope.value is None:
                scope.value = value
                scope.places = set()
                scope.planted = False
            self.record_places(scope, env, stored_in, provenance)
            # A killed reset may leave its pending marker in its own state directory; only an answer
            # from there, through the keyring, shows it did not happen.
            if self.state_of(env) in scope.maybe_reset and env != "ssh" and stored_in and "keyring" in stored_in:
                scope.maybe_reset.discard(self.state_of(env))
            return
        if (scope.value in scope.came_back and stored_in and "keyring" in stored_in
                and (value in scope.superseded or provenance.startswith("generated"))):
            # The value in hand came back with a lost or older keyring file, and a reset completed
            # before voids it (its recorded value, or with none recorded every older one): the
            # environment that completed the reset made it again, back to the value it replaced
            # or a new one (or another environment reads its result).
            self.allow("reset-redone", f"{env} replaced an identifier that a lost or older keyring file brought back")
            self.adopt_changed(scope, env, value, stored_in, provenance)
            return
        if value in scope.superseded and provenance == "backup":
            # An environment whose backup still holds the value an allowed change replaced, while
            # its keyring read fails: it cannot know better until the keyring answers.
            self.allow("stale-backup", f"{env} served an identifier an allowed change replaced, from its backup")
            return
        # The value changed within an epoch: only a named exception may explain it.
        if scope.twin_vanished and value in scope.superseded:
            # The twin that won lived in memory only; the restart took it, and the scope's own
            # identifier came back from where it was kept.
            self.allow("planted-item", "a planted twin that won vanished with the daemon's memory; the scope's own identifier is back")
        elif value in scope.rollback:
            self.allow("keyring-rollback", "an older copy of the keyring file holds another identifier, and the keyring wins")
            scope.came_back.add(value)
        elif scope.value in landed:
            # Others still saw a value the bus-less reset voids (an older keyring file brought it
            # back, say); the desktop's pending reset has now removed it.
            self.allow("pending-reset", "the desktop's pending reset removed a value other environments still saw")
        elif scope.maybe_reset:
            self.allow("killed-reset", "a reset killed mid-way took effect")
            scope.maybe_reset = set()  # its marker is spent
        elif self.same_second(scope.value):
            self.allow("same-second", "a foreign item made within a second of a reset counted as older than it")
            # If a bus-less reset voided it, environments that cannot see that reset still serve it
            # from the keyring until the reset lands, as with the values the reset recorded.
            scope.pending.add(scope.value)
        elif scope.headless_only:
            self.allow("headless-overruled", "a backup-only identifier lost to the keyring's")
        elif env == "ssh" and stored_in == ["backup"] and provenance.startswith("generated") and not self.ssh_marker_before:
            self.allow("headless-unaware", "a bus-less environment whose state never saw the keyring generated")
        elif "keyring" not in scope.places and not ({"desktop", "sandbox"} <= scope.places) and scope.crash_exposed:
            self.allow("provider-crash-loss", "the provider was killed before saving the item, and a backup was gone")
        elif "keyring" not in scope.places and not ({"desktop", "sandbox"} <= scope.places):
            # Some environment (this one, or another that then wrote the keyring) saw every store
            # it can see, the keyring item and its own backup, lose the identifier.
            self.allow("double-loss", "every store one environment can see (keyring, its backup) lost the identifier")
        elif scope.planted and "keyring" not in scope.places:
            self.allow("planted-item", "a foreign item planted while ours was missing won")
        else:
            self.violate(f"{scope.kind} {scope.name}: {env} printed a different identifier within one epoch "
                         f"(stores then: {sorted(scope.places)}, provenance now: {provenance}, storedIn now: {stored_in})")
        self.adopt_changed(scope, env, value, stored_in, provenance)

    def adopt_changed(self, scope, env, value, stored_in, provenance):
        """The scope's value changed (allowed or not): the model follows the new one."""
        if scope.value is not None:
            scope.superseded.add(scope.value)
        scope.rollback = set()
        scope.value = value
        scope.places = set()
        # A killed reset's marker not yet spent can still take effect later.
        scope.planted = False
        scope.twin_vanished = False
        self.record_places(scope, env, stored_in, provenance)

    def record_places(self, scope, env, stored_in, provenance):
        if stored_in is None:
            return
        if "keyring" in stored_in:
            scope.places.add("keyring")
            scope.headless_only = False
            scope.crash_exposed = False
        if "backup" in stored_in and env in ("desktop", "ssh"):
            scope.places.add("desktop")
        if "backup" in stored_in and env == "sandbox":
            scope.places.add("sandbox")
        if stored_in == ["backup"] and provenance.startswith("generated"):
            scope.headless_only = True

    @staticmethod
    def state_of(env):
        return "sandbox" if env == "sandbox" else "desktop"

    def same_second(self, value):
        """A foreign item (a twin, with whole-second times) planted within a second of a reset:
        at that resolution nobody can tell which came first."""
        planted = self.planted_at.get(value)
        return planted is not None and any(abs(planted - t) < 1.0 for t in self.reset_at)

    def new_epoch(self, scope, env):
        self.reset_at.append(time.time())
        scope.epoch += 1
        # Every identifier handed out before a reset is void after it.
        scope.void |= scope.history
        if env == "ssh":
            scope.pending = set(scope.history)
        scope.value = None
        scope.places = set()
        scope.headless_only = False
        scope.maybe_reset = set()
        scope.planted = False
        scope.twin_vanished = False
        scope.superseded = set()
        scope.rollback = set()
        scope.came_back = set()

    # ---- operations -----------------------------------------------------------------------
    def op_get(self):
        scope, env = self.rng.choice(self.scopes), self.rng.choice(list(self.envs))
        argv = ["get"] + scope.args(self.rng) + ["--json", "--timeout", str(TIMEOUT)]
        rc, out, _ = self.idtool_run(env, argv)
        self.get_result(scope, env, rc, out)

    def failures(self, env):
        """The exit statuses a failing call may have: temporary (75), unavailable (69), and while
        the keyring file is wrong or damaged, bad data (65)."""
        return (65, 69, 75) if self.file_fault and env != "ssh" else (69, 75)

    def get_result(self, scope, env, rc, out, pending_at_start=None):
        if rc == 0:
            try:
                result = json.loads(out)
            except ValueError:
                self.violate(f"get printed no JSON: {out[:200]!r}")
                return
            # A desktop answer that says its pending reset could not be completed yet (the
            # item it voids sits in a locked collection) is no sign that the reset took effect.
            kept = any("pending reset could not be completed" in c for c in result.get("conflicts") or [])
            self.observe(scope, env, result["identifier"], result.get("storedIn"), result.get("provenance") or "", pending_at_start,
                         pending_kept=kept)
        elif rc not in self.failures(env):
            self.violate(f"get in {env} exited {rc}")

    def op_burst(self):
        scope = self.rng.choice(self.scopes)
        pending_at_start = set(scope.pending)
        rollback_at_start = set(scope.rollback)
        procs = []
        for _ in range(self.rng.randint(3, 8)):
            env = self.rng.choice(list(self.envs))
            argv = ["get"] + scope.args(self.rng) + ["--json", "--timeout", str(TIMEOUT)]
            procs.append((env, argv) + self.start(env, argv))
        results = [(env,) + self.finish(env, argv, proc, started)[:2] for env, argv, proc, started in procs]
        self.observe_overlapping(scope, results, pending_at_start, rollback_at_start)

    def observe_overlapping(self, scope, results, pending_at_start, rollback_at_start):
        """The answers of calls that ran at the same time (a burst, the gets beside a slow creator)."""
        # The calls overlapped, so any order is a valid history: take the answers that still
        # agree with the model first, then those after a transition (a reset completing).
        before = scope.value
        def agrees(result):
            try:
                return json.loads(result[2])["identifier"] == before
            except (ValueError, KeyError, TypeError):
                return False
        def generated(result):
            try:
                return json.loads(result[2])["provenance"].startswith("generated")
            except (ValueError, KeyError, TypeError, AttributeError):
                return False
        # Of the others, a call that generated a value came before those that read it back.
        for env, rc, out in sorted(results, key=lambda r: (not agrees(r), not generated(r))):
            # What an older keyring file brought back stays readable for the whole burst, even after
            # one of its calls replaced it (a pending reset voiding it).
            scope.rollback |= rollback_at_start
            self.get_result(scope, env, rc, out, pending_at_start)
        if scope.value not in rollback_at_start:
            scope.rollback -= rollback_at_start

    def op_show(self):
        scope, env = self.rng.choice(self.scopes), self.rng.choice(list(self.envs))
        rc, out, _ = self.idtool_run(env, ["show"] + scope.args(self.rng) + ["--json", "--timeout", str(TIMEOUT)])
        if rc == 0:
            result = json.loads(out)
            self.observe(scope, env, result["identifier"], None, result.get("provenance") or "")
        elif rc not in (1,) + self.failures(env):
            self.violate(f"show in {env} exited {rc}")

    def op_reset(self):
        scope, env = self.rng.choice(self.scopes), self.rng.choice(list(self.envs))
        rc, _, _ = self.idtool_run(env, ["reset"] + scope.args(self.rng) + ["--timeout", str(TIMEOUT)])
        if rc == 0:
            self.new_epoch(scope, env)
        elif rc not in self.failures(env):
            self.violate(f"reset in {env} exited {rc}")

    def op_killed(self):
        scope, env = self.rng.choice(self.scopes), self.rng.choice(list(self.envs))
        command = self.rng.choice(["get", "reset"])
        argv = [command] + scope.args(self.rng) + (["--json"] if command == "get" else []) + ["--timeout", str(TIMEOUT)]
        proc, started = self.start(env, argv)
        delay = self.rng.uniform(0, 0.06)
        time.sleep(delay)
        self.transcript.append(f"# SIGKILL after {delay * 1000:.0f} ms")
        proc.send_signal(signal.SIGKILL)
        rc, out, _ = self.finish(env, argv, proc, started, killed=True)
        if rc == 0 and command == "get" and out.strip():
            self.get_result(scope, env, rc, out)
        elif rc == 0 and command == "reset":
            self.new_epoch(scope, env)
        elif command == "reset" and rc < 0:
            # Only a reset the kill really cut short may have taken effect; one that exited on its
            # own (locked, unreachable) took back its marker. Kills in two state dirs both count.
            scope.maybe_reset.add(self.state_of(env))

    def op_migrate(self):
        scope = self.rng.choice([s for s in self.scopes if s.kind == "app"])
        env = self.rng.choice(["desktop", "sandbox"])
        legacy = os.path.join(self.legacy_dir, uuid.uuid4().hex)
        value = str(uuid.uuid4())
        with open(legacy, "w") as f:
            f.write(value + "\n")
        rc, out, _ = self.idtool_run(env, ["migrate", "--app", scope.apps[0], "--from", "file:" + legacy, "--timeout", str(TIMEOUT)])
        if rc == 0:
            self.seen_values.add(value)
            if self.file_fault and not self.fault_may_read() and out.decode().strip() == value:
                self.violate(f"migrate in {env} adopted a legacy value while the keyring file was {self.file_fault}")
            # migrate prints no provenance; with the keyring locked, an existing value came from the backup.
            self.observe(scope, env, out.decode().strip(), None, "backup" if self.locked else "")
        elif rc not in self.failures(env):
            self.violate(f"migrate in {env} exited {rc}")

    def op_lock(self):
        if self.stopped_pid is None and self.ctl_run("lock").returncode == 0:
            self.locked = True

    def forget_session_collection(self, killed=False):
        """A daemon restart empties the in-memory session collection, and the twins in it; a
        provider that saves later may lose any item when killed."""
        for scope in self.scopes:
            if scope.value in self.session_values:
                scope.places.discard("keyring")
                scope.twin_vanished = True
            elif killed and not SAVES_BEFORE_ANSWERING and "keyring" in scope.places:
                scope.places.discard("keyring")
                scope.crash_exposed = True

    def op_restart(self):
        self.resume()
        self.forget_session_collection()
        if self.ctl_run("restart").returncode != 0:
            self.violate("keyring-ctl restart failed")
        self.locked = False

    def op_kill_daemon(self):
        self.resume()
        self.forget_session_collection(killed=True)
        self.ctl_run("kill")  # the next call activates a new daemon, without the password: locked
        self.locked = True

    def op_stopped_daemon(self):
        scope, env = self.rng.choice(self.scopes), self.rng.choice(["desktop", "sandbox"])
        pid = self.daemon_pid()
        if pid is None:
            return
        self.transcript.append("kill -STOP <daemon>")
        os.kill(pid, signal.SIGSTOP)
        self.stopped_pid = pid
        try:
            argv = ["get"] + scope.args(self.rng) + ["--json", "--timeout", "1"]
            proc, started = self.start(env, argv)
            rc, out, _ = self.finish(env, argv, proc, started, budget=1)
            self.get_result(scope, env, rc, out)
        finally:
            self.resume()

    def resume(self):
        if self.stopped_pid is not None:
            self.transcript.append("kill -CONT <daemon>")
            try:
                os.kill(self.stopped_pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            self.stopped_pid = None

    def op_delete_item(self):
        scope = self.rng.choice(self.scopes)
        if self.file_fault:
            return  # secret-tool cannot open a wrong or damaged file either
        self.transcript.append(f"{self.tool_prefix()}secret-tool clear identity-scope {scope.kind} identity-name {scope.name}")
        r = subprocess.run(["secret-tool", "clear", "identity-scope", scope.kind, "identity-name", scope.name],
                           env=self.envs["desktop"], capture_output=True, timeout=30)
        if self.args.verbose:
            print(f"    delete item {scope.name} -> {r.returncode}", file=sys.stderr)
        # gnome-keyring deletes locked items too: count what is left, locked ones included.
        if self.stopped_pid is None and self.item_count(scope) == 0:
            scope.places.discard("keyring")

    def op_twin(self, scope=None):
        scope = scope or self.rng.choice(self.scopes)
        if self.file_fault:
            return  # secret-tool would add an item under the wrong key, which no key opens then
        value = str(uuid.uuid4())
        self.seen_values.add(value)
        if TWIN_COLLECTION:
            self.session_values.add(value)
        self.planted_at[value] = time.time()
        self.transcript.append(f"printf {value} | {self.tool_prefix()}secret-tool store --label=twin {' '.join(TWIN_COLLECTION)} "
                               f"identity-scope {scope.kind} identity-name {scope.name} chaos-twin {value}")
        try:
            returncode = subprocess.run(["secret-tool", "store", "--label=chaos twin"] + TWIN_COLLECTION + [
                                        "identity-scope", scope.kind, "identity-name", scope.name,
                                        # A distinct attribute, or secret-tool would replace the previous twin.
                                        "chaos-twin", value],
                                       input=value.encode(), env=self.envs["desktop"], capture_output=True, timeout=5).returncode
        except subprocess.TimeoutExpired:
            # A provider that asks to unlock first (KeePassXC) keeps secret-tool waiting; it may
            # still have stored the twin, so count it as planted.
            returncode = 0
        if self.args.verbose:
            print(f"    twin {scope.name} {value} -> {returncode}", file=sys.stderr)
        if returncode == 0 and "keyring" not in scope.places:
            scope.planted = True

    def op_backup(self):
        scope, where = self.rng.choice(self.scopes), self.rng.choice(["desktop", "sandbox"])
        path = scope.backup_path(self.states[where])
        if not os.path.exists(path):
            return
        if self.args.verbose:
            print(f"    backup {where} {scope.name}", file=sys.stderr)
        deleting = self.rng.random() < 0.5
        self.transcript.append(("rm " if deleting else "corrupt ") + path.replace(self.states[where], f"$STATE_{where.upper()}"))
        if deleting:
            os.unlink(path)
        else:
            with open(path, "wb") as f:
                f.write(os.urandom(self.rng.randint(0, 80)))
        scope.places.discard(where)

    # ---- the file backend's faults -----------------------------------------------------------
    def fault_may_read(self):
        """libsecret's format authenticates each item's contents, not the whole file: a flipped bit
        in a timestamp or an attribute hash leaves a file that still opens, and may be written."""
        return self.file_fault == "damaged (flipped)"

    def tool_prefix(self):
        return "SECRET_BACKEND=file " if BACKEND == "file" else ""

    def file_bytes(self):
        try:
            with open(self.keyring_file, "rb") as f:
                return f.read()
        except (FileNotFoundError, IsADirectoryError):
            return None

    def write_file(self, data):
        tmp = self.keyring_file + ".chaos-tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.rename(tmp, self.keyring_file)

    def set_key(self, key):
        for env in ("desktop", "sandbox"):
            self.envs[env]["SECRET_FILE_TEST_PASSWORD"] = key

    def start_fault(self):
        """Ends any fault first (faults do not stack); returns the file's good bytes, or None."""
        self.heal()
        return self.file_bytes()

    def op_wrong_key(self):
        if not self.start_fault():
            return  # with no file, any key opens the new, empty keyring: not a fault
        self.transcript.append("export SECRET_FILE_TEST_PASSWORD=wrong   # desktop and sandbox")
        self.set_key("wrong-" + self.key)
        self.file_fault, self.file_faulty, self.locked = "wrong-key", self.file_bytes(), True

    def op_damage(self):
        good = self.start_fault()
        if not good:
            return
        how = self.rng.choice(["empty", "truncated", "garbage"] + ([] if self.args.no_flip else ["flipped"]))
        if how == "empty":
            bad = b""
        elif how == "truncated":
            bad = good[:self.rng.randrange(1, len(good))]
        elif how == "garbage":
            bad = os.urandom(self.rng.randint(1, 200))
        else:
            at = self.rng.randrange(len(good))
            bad = good[:at] + bytes([good[at] ^ (1 << self.rng.randrange(8))]) + good[at + 1:]
        self.transcript.append(f"damage the keyring file ({how})   # the good copy is kept aside")
        self.write_file(bad)
        self.file_fault, self.file_saved, self.file_faulty, self.locked = f"damaged ({how})", good, bad, how != "flipped"

    def op_unreadable(self):
        good = self.start_fault()
        if not good:
            return
        self.transcript.append("mv default.keyring aside; mkdir default.keyring   # unreadable")
        os.unlink(self.keyring_file)
        os.mkdir(self.keyring_file, 0o700)
        self.file_fault, self.file_saved, self.file_faulty, self.locked = "unreadable", good, None, True

    def heal(self):
        """Ends a lasting fault: the right key again, the good file back. A faulty file must still
        be exactly as the fault left it: nobody may write over a file they cannot read."""
        if not self.file_fault:
            return
        self.transcript.append(f"heal the keyring file (it was {self.file_fault})")
        if self.file_fault == "unreadable":
            try:
                os.rmdir(self.keyring_file)
            except OSError as error:
                self.violate(f"the directory at the keyring file's path changed while it was unreadable: {error}")
                subprocess.run(["rm", "-rf", self.keyring_file])
        elif self.file_bytes() != self.file_faulty:
            if not self.fault_may_read():
                self.violate(f"the keyring file changed while it was {self.file_fault}")
            self.file_saved = None  # a flipped file that was written since is the keyring now: keep it
        if self.file_saved is not None:
            self.write_file(self.file_saved)
        self.set_key(self.key)
        self.file_fault = self.file_saved = self.file_faulty = None
        self.locked = False

    def lose_records(self, restored):
        """The file was replaced (`restored`: scope -> the values it holds now): items it lacks are
        gone from the keyring, and so are the records of resets it does not hold."""
        for scope in self.scopes:
            held = restored.get(scope.name, set())
            if scope.value not in held:
                scope.places.discard("keyring")
            scope.rollback = held - {scope.value}
            scope.unrecorded |= scope.void

    def op_delete_file(self):
        self.start_fault()
        self.transcript.append("rm default.keyring")
        try:
            os.unlink(self.keyring_file)
        except FileNotFoundError:
            pass
        self.lose_records({})

    def op_rollback(self):
        self.start_fault()
        if not self.snapshots:
            return
        index = self.rng.randrange(len(self.snapshots))
        self.transcript.append(f"replace default.keyring by the copy taken at step {self.snapshots[index][0]}")
        self.write_file(self.snapshots[index][1])
        restored = {scope.name: set(self.file_values(scope)) for scope in self.scopes}
        self.lose_records(restored)

    def file_values(self, scope):
        """Every identity item's value for `scope`, per secret-tool in the desktop environment: the
        keyring file (with its right key), or the Secret Service (the slow creator op uses it there)."""
        r = subprocess.run(["secret-tool", "search", "--all", "identity-scope", scope.kind, "identity-name", scope.name],
                           env=self.envs["desktop"], capture_output=True, text=True, timeout=30)
        return [line.split(" = ", 1)[1].strip() for line in (r.stdout + r.stderr).splitlines() if line.startswith("secret = ")]

    def op_held_lock(self):
        """The file's write lock held by another process (the file backend's SIGSTOPped daemon)."""
        import fcntl
        scope, env = self.rng.choice(self.scopes), self.rng.choice(["desktop", "sandbox"])
        self.transcript.append("flock default.keyring.lock (held)")
        fd = os.open(self.keyring_file + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            argv = ["get"] + scope.args(self.rng) + ["--json", "--timeout", "1"]
            proc, started = self.start(env, argv)
            rc, out, _ = self.finish(env, argv, proc, started, budget=1)
            self.get_result(scope, env, rc, out)
        finally:
            os.close(fd)
            self.transcript.append("release the lock")

    # ---- operations drawn apart from the classic schedule --------------------------------------
    # A step may also run one of these after its own op, drawn from a generator of its own
    # (extra_rng), so that each step of every seed still runs the same op with the same draws;
    # --without leaves them out (and so replays a seed exactly as before they existed).
    EXTRA_OPS = [("slow_creator", 0.06), ("flood", 0.02)]

    def healthy(self):
        """The keyring answers: not locked, not stopped, the keyring file neither wrong nor damaged."""
        return not self.locked and self.stopped_pid is None and not self.file_fault

    @staticmethod
    def creation_lock_name(scope):
        """The bus-wide creation lock of a scope's identifier, computed as ServiceCall.lockName does
        over the identity attributes: sorted by name, `name=value` joined by NUL, SHA-256, 40 hex digits."""
        attributes = {"identity-scope": scope.kind, "identity-name": scope.name}
        canonical = "\0".join(f"{name}={value}" for name, value in sorted(attributes.items()))
        return "io.keyringidentity.Create.h" + hashlib.sha256(canonical.encode()).hexdigest()[:40]

    def hold_creation_lock(self, scope):
        """Takes the creation lock of `scope` as another process inside its creation holds it: the bus
        name (busload.py hold, its own connection), or with the file backend the keyring file's write
        lock. Returns the function that releases it, or None when it stayed busy for 2 s."""
        if BACKEND == "file":
            import fcntl
            fd = os.open(self.keyring_file + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
            deadline = time.monotonic() + 2
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return lambda: os.close(fd)  # closing releases the flock
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        os.close(fd)
                        return None
                    time.sleep(0.02)
        holder = subprocess.Popen([BUS_PYTHON, BUSLOAD, "hold", self.creation_lock_name(scope)], env=self.envs["desktop"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if holder.stdout.readline().strip() != "acquired":
            holder.wait(timeout=10)
            return None

        def release():
            holder.stdin.close()  # EOF: it releases the name and exits
            holder.wait(timeout=10)
        return release

    def first_run(self, scope):
        """Nothing anywhere holds an identifier for `scope`: no value in this epoch, no pending reset,
        no backup in either state directory, no item in a healthy keyring."""
        if scope not in self.scopes:
            return True  # a new app of the slow creator op
        if scope.value is not None or scope.pending or not self.healthy():
            return False
        if any(os.path.exists(scope.backup_path(state)) for state in self.states.values()):
            return False
        return not self.file_values(scope)

    def creator_store(self, scope):
        """What a slow creator does last, under its lock: store a value of its own if the scope is
        still absent (secret-tool, with the attributes idtool's items carry). Returns the value when
        the keyring holds it afterwards, else None."""
        if not self.healthy() or self.file_values(scope):
            return None
        value = str(uuid.uuid4())
        self.seen_values.add(value)
        created = f"{time.time():.3f}"
        self.transcript.append(f"printf {value} | {self.tool_prefix()}secret-tool store --label='Identifier for app {scope.name}' "
                               f"identity-scope {scope.kind} identity-name {scope.name} identity-origin chaos-creator "
                               f"identity-created {created}")
        try:
            subprocess.run(["secret-tool", "store", f"--label=Identifier for {scope.kind} {scope.name}",
                            "identity-scope", scope.kind, "identity-name", scope.name, "identity-origin", "chaos-creator",
                            "identity-created", created],
                           input=value.encode(), env=self.envs["desktop"], capture_output=True, timeout=5)
        except subprocess.TimeoutExpired:
            pass  # (KeePassXC asking to unlock) it may still have stored it: the look-up tells
        return value if value in self.file_values(scope) else None

    def op_slow_creator(self):
        """Another process is slow inside its creation of a scope's identifier (waiting on an unlock
        prompt, or on a slow daemon): it holds the scope's creation lock for 1-4 s while 1-3 gets run
        with --timeout 1 or 2, and on a first run (nothing anywhere, see first_run) it mostly stores a
        value of its own before releasing, as a real creator does. Half the time the scope is a new
        app (always a first run); else one of the model's scopes, a first run only after a reset has
        cleared every store. What is allowed: a get that waited on the creator adopts the value the
        keyring ends up holding, or fails (75) printing nothing. It never hands out its own identifier
        that the keyring's then replaces, and never keeps a new one in its backup alone (the keyring
        was reachable all along; only a missing default collection would excuse that).
        Every provider: the lock is the bus name on gnome-keyring, KWallet and KeePassXC alike, and
        with --provider file the keyring file's write lock (a flock on default.keyring.lock), under
        which the creator writes the file with secret-tool. The other form of a slow creator, an
        unlock prompt left open mid-creation, is left out: only gnome-keyring's mock prompter could
        hold one open, and the lock held here is what such a creator holds meanwhile."""
        if self.rng.random() < 0.5:
            name = f"chaos.{self.tag}.slow{len(self.fresh_scopes) + 1}"
            scope = Scope("app", name, [name])
            self.fresh_scopes.append(scope)
        else:
            scope = self.rng.choice(self.scopes)
        first = self.first_run(scope)
        pending_at_start, rollback_at_start = set(scope.pending), set(scope.rollback)
        hold = self.rng.uniform(1, 4)
        stores = first and self.rng.random() < 0.75
        plan = sorted((self.rng.uniform(0, 0.5), self.rng.choice(["desktop", "sandbox"]), self.rng.choice([1, 2]))
                      for _ in range(self.rng.randint(1, 3)))
        release = self.hold_creation_lock(scope)
        if release is None:
            self.transcript.append(f"# the creation lock of {scope.kind} {scope.name} stayed busy: nothing done")
            return
        self.transcript.append(f"hold the creation lock of {scope.kind} {scope.name} for {hold:.1f} s"
                               + (" (a first run)" if first else ""))
        creator_value, running = None, []
        try:
            began = time.monotonic()
            for delay, env, timeout in plan:
                time.sleep(max(0.0, began + delay - time.monotonic()))
                argv = ["get"] + scope.args(self.rng) + ["--json", "--timeout", str(timeout)]
                self.transcript.append(f"[{env}] idtool {' '.join(argv)} &   # {delay:.1f} s into the hold")
                running.append((env, argv, timeout) + self.start(env, argv))
            time.sleep(max(0.0, began + hold - time.monotonic()))
            # Nobody may create under another's lock; an item now means the lock did not hold (or
            # this file computes its name unlike ServiceCall.lockName, which would blunt the op).
            if first and self.healthy() and self.file_values(scope):
                self.violate(f"{scope.kind} {scope.name}: an identity item was created while another process held its creation lock")
            elif stores:
                creator_value = self.creator_store(scope)
        finally:
            release()
            self.transcript.append("release the creation lock")
        results = [(env,) + self.finish(env, argv, proc, started, budget=timeout)[:2] for env, argv, timeout, proc, started in running]
        if self.args.verbose:
            print(f"    slow creator {scope.name}: held {hold:.1f} s, first run {first}, stored {creator_value}", file=sys.stderr)
        if not first:
            # The gets overlapped one another (and whatever they completed, such as a pending reset).
            self.observe_overlapping(scope, results, pending_at_start, rollback_at_start)
            return
        # A first run: every answer must be what the keyring ends up holding, which a get after the
        # release shows (the creator's value, when it stored one).
        argv = ["get"] + scope.args(self.rng) + ["--json", "--timeout", str(TIMEOUT)]
        after_rc, after_out, _ = self.idtool_run("desktop", argv)
        after = self.parsed(after_out) if after_rc == 0 else None
        if creator_value and after and after.get("identifier") != creator_value:
            self.violate(f"{scope.kind} {scope.name}: after the slow creator stored its value, desktop printed another")
        truth = creator_value or (after or {}).get("identifier")
        for env, rc, out in results + [("desktop", after_rc, after_out)]:
            result = self.parsed(out) if rc == 0 else None
            if result is None or "identifier" not in result:
                if rc == 0:
                    self.violate(f"get printed no JSON: {out[:200]!r}")
                elif rc not in self.failures(env):
                    self.violate(f"get in {env} exited {rc}")
                continue
            value = result["identifier"]
            self.seen_values.add(value)
            scope.history.add(value)
            if result.get("storedIn") == ["backup"] and (result.get("provenance") or "").startswith("generated"):
                self.violate(f"{scope.kind} {scope.name}: {env} kept a new identifier in its backup alone while another process "
                             f"held the creation lock (the keyring was reachable)")
            if truth is not None and value != truth:
                self.violate(f"{scope.kind} {scope.name}: {env} handed out an identifier of its own while another process held the "
                             f"creation lock, and the keyring then held {'the creator' + chr(39) + 's' if creator_value else 'another'}")
                continue
            if scope in self.scopes:
                self.get_result(scope, env, rc, out)
            else:
                scope.value = value

    @staticmethod
    def parsed(out):
        try:
            result = json.loads(out)
        except ValueError:
            return None
        return result if isinstance(result, dict) else None

    def op_flood(self):
        """A media player floods the bus with 10,000-40,000 foreign PropertiesChanged signals (a
        sender that is no Secret Service; a tenth on a Secret Service collection's path, claiming
        its Locked property changed) while the next steps run, in the background until all are sent.
        Every invariant holds as before: calls stay within their --timeout, no crash or critical,
        and no lookalike signal changes an answer. A flood still running when the next is drawn is
        left to finish alone. With --provider file the keyring calls use no bus, so there the flood
        only loads the bus and the machine (it runs anyway: the bus-less model must not care)."""
        if self.flooder is not None and self.flooder.poll() is None:
            return
        count = self.rng.randint(10_000, 40_000)
        self.transcript.append(f"Tests/Chaos/busload.py flood {count} &   # foreign PropertiesChanged signals, in the background")
        self.flooder = subprocess.Popen([BUS_PYTHON, BUSLOAD, "flood", str(count)], env=self.envs["desktop"],
                                        stdout=subprocess.DEVNULL, stderr=None if self.args.verbose else subprocess.DEVNULL)

    def stop_flood(self):
        """Ends a flood this run started (by its own process handle), so a final check runs on a quiet bus."""
        if self.flooder is not None and self.flooder.poll() is None:
            self.transcript.append("stop the flood")
            self.flooder.kill()
            self.flooder.wait()
        self.flooder = None

    def snapshot(self, index):
        if BACKEND == "file" and index % 5 == 0 and not self.file_fault:
            data = self.file_bytes()
            if data:
                self.snapshots = (self.snapshots + [(index, data)])[-6:]

    FILE_OPS = [
        ("get", 30), ("burst", 8), ("show", 6), ("reset", 5), ("killed", 5), ("migrate", 3), ("wrong_key", 3),
        ("damage", 3), ("unreadable", 1), ("heal", 6), ("delete_file", 2), ("rollback", 2), ("held_lock", 3),
        ("delete_item", 4), ("twin", 4), ("backup", 6),
    ]

    def op_heal(self):
        self.heal()

    OPS = [
        ("get", 30), ("burst", 8), ("show", 6), ("reset", 5), ("killed", 5), ("migrate", 3), ("lock", 4),
        ("restart", 6), ("kill_daemon", 2), ("stopped_daemon", 3), ("delete_item", 4), ("twin", 4), ("backup", 6),
    ]

    # ---- the run --------------------------------------------------------------------------
    def step_rng(self, index):
        """Each step draws from its own generator, so a schedule with steps dropped replays the rest."""
        return random.Random(self.args.seed * 1_000_003 + index)

    def run_step(self, index):
        names = [n for n, _ in self.OPS]
        weights = [w for _, w in self.OPS]
        self.rng = self.step_rng(index)
        self.step = index
        self.ssh_marker_before = os.path.exists(os.path.join(self.states["desktop"], "keyring-identity", "keyring-seen"))
        name = self.rng.choices(names, weights)[0]
        self.counts[name] = self.counts.get(name, 0) + 1
        self.snapshot(index)
        self.transcript.append(f"## step {index}: {name}")
        if self.args.verbose:
            print(f"step {index}: {name}", file=sys.stderr, flush=True)
        getattr(self, "op_" + name)()
        extra = self.extra_rng(index)
        roll = extra.random()
        for name, chance in self.EXTRA_OPS:
            if roll < chance:
                if name not in self.args.without:
                    self.rng = extra
                    self.counts[name] = self.counts.get(name, 0) + 1
                    self.transcript.append(f"## step {index}, also: {name}")
                    if self.args.verbose:
                        print(f"step {index}, also: {name}", file=sys.stderr, flush=True)
                    getattr(self, "op_" + name)()
                break
            roll -= chance

    def extra_rng(self, index):
        """The generator of a step's extra op (EXTRA_OPS): apart from the step's own."""
        return random.Random(f"chaos-extra:{self.args.seed}:{index}")

    def run(self, indices=None, stop_at=None):
        """Runs the steps `indices` (default: 1, 2, … until --steps or --minutes), then the final check.
        A replay past `stop_at` (a monotonic time) stops early, with no final check, and sets `truncated`."""
        self.ctl_run("restart")  # (the file backend's runs use none, but keep the session as the others)
        deadline = time.monotonic() + self.args.minutes * 60 if self.args.minutes else None
        self.truncated = False
        index = 0
        while True:
            if indices is not None:
                if index >= len(indices):
                    break
                if stop_at is not None and time.monotonic() >= stop_at:
                    self.truncated, self.steps_run = True, index
                    self.stop_flood()
                    return
                self.run_step(indices[index])
            else:
                if self.args.steps and index >= self.args.steps:
                    break
                if deadline and time.monotonic() >= deadline:
                    break
                self.run_step(index + 1)
            index += 1
        self.steps_run = index
        self.final_check()

    # ---- scripted scenarios (--scenario): a sequence a seed reaches only with lucky timing -----
    # Their calls must succeed for the sequence to happen, so they get a deadline far above any
    # load: a scenario checks order and outcome, never time.
    SCRIPTED_TIMEOUT = 120

    def scripted_get(self, scope, env):
        self.transcript.append(f"## scripted: get in {env}")
        argv = ["get"] + scope.args(self.rng) + ["--json", "--timeout", str(self.SCRIPTED_TIMEOUT)]
        rc, out, _ = self.idtool_run(env, argv, budget=self.SCRIPTED_TIMEOUT)
        self.get_result(scope, env, rc, out)
        return (self.parsed(out) or {}).get("identifier") if rc == 0 else None

    def scripted_restore(self, before, scope, what):
        """Puts the keyring file `before` back, then gets `scope` in the sandbox, the desktop and the
        sandbox again; returns the sandbox's two answers."""
        self.transcript.append(f"## scripted: replace default.keyring by {what}")
        self.write_file(before)
        self.lose_records({each.name: set(self.file_values(each)) for each in self.scopes})
        first = self.scripted_get(scope, "sandbox")
        self.scripted_get(scope, "desktop")
        return first, self.scripted_get(scope, "sandbox")

    def scripted_unseen(self, *names):
        """The named exceptions the run never met, as the scenario's findings."""
        return [f"no {name}" for name in names if not self.exceptions.get(name)]

    def scenario_reset_redone(self):
        """File backend: a reset completed by the desktop, then lost with the keyring file (rolled
        back to a copy from before it); the sandbox's backup brings the reset identifier back, and
        the desktop, which keeps the completed reset, makes it again. Returns what went unseen."""
        one, other = self.scopes[0], self.scopes[1]
        self.scripted_get(other, "desktop")  # the keyring file exists, without `one`
        self.transcript.append("## scripted: copy default.keyring")
        before = self.file_bytes()
        reset_value = self.scripted_get(one, "sandbox")  # in the keyring and the sandbox's backup
        self.transcript.append("## scripted: reset over ssh (a pending reset in the desktop's state)")
        rc, _, _ = self.idtool_run("ssh", ["reset"] + one.args(self.rng) + ["--timeout", str(self.SCRIPTED_TIMEOUT)],
                                   budget=self.SCRIPTED_TIMEOUT)
        if rc == 0:
            self.new_epoch(one, "ssh")
        new_value = self.scripted_get(one, "desktop")  # completes the reset, makes a new identifier
        came_back, _ = self.scripted_restore(before, one, "the copy from before the reset")
        missed = self.scripted_unseen("reset-record-lost", "reset-redone")
        if rc != 0 or None in (reset_value, new_value) or came_back != reset_value:
            missed.append(f"the sequence did not run as planned (reset exited {rc}; the sandbox's second get "
                          f"{'brought back the reset identifier' if came_back == reset_value else 'did not bring back the reset identifier'})")
        return missed

    def scenario_reset_redone_older(self):
        """File backend: an item older than a reset that recorded no value (made over SSH, where no
        backup named one), never handed out, comes back with an older copy of the file; the sandbox
        adopts it, and the desktop, which completed the reset, voids it as older than the reset and
        serves its own identifier again. Returns what went unseen."""
        one, other = self.scopes[0], self.scopes[1]
        self.scripted_get(other, "desktop")
        self.op_twin(one)
        older = one.planted
        self.transcript.append("## scripted: copy default.keyring (with the twin), then clear the twin")
        before = self.file_bytes()
        subprocess.run(["secret-tool", "clear", "identity-scope", one.kind, "identity-name", one.name],
                       env=self.envs["desktop"], capture_output=True, timeout=30)
        time.sleep(1.1)  # the twin's whole-second Created must be older than the reset, not the same second
        self.transcript.append("## scripted: reset over ssh, which knows no value (no backup has one)")
        rc, _, _ = self.idtool_run("ssh", ["reset"] + one.args(self.rng) + ["--timeout", str(self.SCRIPTED_TIMEOUT)],
                                   budget=self.SCRIPTED_TIMEOUT)
        if rc == 0:
            self.new_epoch(one, "ssh")
        new_value = self.scripted_get(one, "desktop")
        came_back, last = self.scripted_restore(before, one, "the copy with the twin")
        missed = self.scripted_unseen("keyring-rollback", "reset-redone")
        if rc != 0 or new_value is None or not older or came_back in (None, new_value) or last != new_value:
            missed.append(f"the sequence did not run as planned (reset exited {rc}, new {new_value}, "
                          f"came back {came_back}, last {last})")
        return missed

    SCENARIOS = {"reset-redone": ("file", scenario_reset_redone),
                 "reset-redone-older": ("file", scenario_reset_redone_older)}

    def final_check(self):
        """Invariant 2: with the keyring healthy, one identity item per scope, equal to the last value."""
        self.step = "final"
        self.transcript.append("## final check")
        self.rng = random.Random(self.args.seed)
        self.resume()
        self.stop_flood()
        if BACKEND == "file":
            self.heal()
        else:
            self.ctl_run("restart")
        for scope in self.scopes:
            awaiting_reset = False
            for env in ("desktop", "sandbox"):
                rc, out, err = self.idtool_run(env, ["get"] + scope.args(self.rng) + ["--json", "--timeout", str(TIMEOUT)])
                if rc != 0:
                    # A corrupt backup with no keyring item stays an error until reset (by design).
                    lost = "keyring" not in scope.places and self.state_of(env) not in scope.places
                    if rc == 69 and "reset" in err and (scope.value is None or lost):
                        self.allow("corrupt-backup-awaits-reset", f"{env}: {scope.name}")
                        awaiting_reset = True
                        continue
                    self.violate(f"final get of {scope.name} in {env} exited {rc} with the keyring healthy", 2)
                    continue
                self.get_result(scope, env, rc, out)
            if awaiting_reset:
                continue  # by design no item exists until a reset: nothing to count
            count = self.item_count(scope)
            if scope.value is not None and count != 1:
                self.violate(f"{scope.kind} {scope.name}: {count} identity items at the end, expected 1", 2)
            if scope.value is not None:
                r = subprocess.run(["secret-tool", "lookup", "identity-scope", scope.kind, "identity-name", scope.name],
                                   env=self.envs["desktop"], capture_output=True, text=True, timeout=30)
                if r.stdout.strip() != scope.value:
                    self.violate(f"{scope.kind} {scope.name}: the keyring holds another value than the last handed out", 2)
        self.final_check_fresh()

    def final_check_fresh(self):
        """The slow creator's new apps: the desktop (whose backup holds the value since the op's last
        get) still prints the one identifier each was handed out."""
        for scope in self.fresh_scopes:
            if scope.value is None:
                continue
            rc, out, _ = self.idtool_run("desktop", ["get"] + scope.args(self.rng) + ["--json", "--timeout", str(TIMEOUT)])
            got = (self.parsed(out) or {}).get("identifier") if rc == 0 else None
            if got != scope.value:
                self.violate(f"{scope.kind} {scope.name} (the slow creator's new app): the final get exited {rc}, "
                             f"not with the identifier handed out", 2)

    def item_count(self, scope):
        if BACKEND == "file":
            return len(self.file_values(scope))
        out = subprocess.run(
            ["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets",
             "org.freedesktop.Secret.Service.SearchItems",
             f"dict:string:string:identity-scope,{scope.kind},identity-name,{scope.name}"],
            env=self.envs["desktop"], capture_output=True, text=True, timeout=30).stdout
        return out.count("object path")

    def summary(self):
        by_invariant = {}
        for invariant, _ in self.violations:
            by_invariant[invariant] = by_invariant.get(invariant, 0) + 1
        violations = ", ".join(f"invariant {k}: {v}" for k, v in sorted(by_invariant.items())) or "0"
        exceptions = ", ".join(f"{k} {v}" for k, v in sorted(self.exceptions.items())) or "none"
        gets = self.counts.get("get", 0) + self.counts.get("burst", 0) + self.counts.get("stopped_daemon", 0)
        extras = ", ".join(f"{self.counts[name]} {name}" for name, _ in self.EXTRA_OPS if self.counts.get(name))
        return (f"chaos: {PROVIDER}, seed {self.args.seed}, {self.steps_run} steps ({gets} get steps, {self.counts.get('reset', 0)} resets"
                f"{', ' + extras if extras else ''}); "
                f"violations {violations}; exceptions: {exceptions}")


def shrink(args, failing):
    """Drops steps while a run of the rest still breaks the same invariant; returns the smallest
    schedule found within --shrink-minutes and its run."""
    kind = failing.violations[0][0]
    first = failing.violations[0][1].split(":")[0].removeprefix("step ")
    last = int(first) if first.isdigit() else failing.steps_run
    indices = list(range(1, last + 1))
    best = failing
    deadline = time.monotonic() + args.shrink_minutes * 60

    def still_fails(candidate):
        for _ in range(2):  # process timing varies; a second try catches most flaky reproductions
            chaos = Chaos(args, quiet=True)
            chaos.run(candidate, stop_at=deadline)  # each replay also ends at the shrink deadline
            if any(invariant == kind for invariant, _ in chaos.violations):
                return chaos
            if chaos.truncated:
                return None
        return None

    chunk = max(1, len(indices) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        start, changed = 0, False
        while start < len(indices) and time.monotonic() < deadline:
            candidate = indices[:start] + indices[start + chunk:]
            run = still_fails(candidate) if candidate else None
            if run:
                indices, best, changed = candidate, run, True
                print(f"chaos: shrunk to {len(indices)} steps", file=sys.stderr, flush=True)
            else:
                start += chunk
        if not changed:
            chunk //= 2
    return indices, best


def broken_idtool(directory, real):
    """A wrapper that behaves like idtool but answers every fifth `get` with a fresh identifier."""
    path = os.path.join(directory, "broken-idtool")
    counter = os.path.join(directory, "broken-count")
    with open(path, "w") as f:
        f.write(f"""#!{sys.executable}
import json, os, subprocess, sys, uuid
r = subprocess.run([{real!r}] + sys.argv[1:], capture_output=True)
sys.stderr.buffer.write(r.stderr)
out = r.stdout
if sys.argv[1:2] == ["get"] and r.returncode == 0:
    n = int(open({counter!r}).read() or 0) + 1 if os.path.exists({counter!r}) else 1
    open({counter!r}, "w").write(str(n))
    if n % 5 == 0:
        fresh = str(uuid.uuid4())
        try:
            doc = json.loads(out); doc["identifier"] = fresh; out = json.dumps(doc).encode()
        except ValueError:
            out = (fresh + "\\n").encode()
sys.stdout.buffer.write(out)
sys.exit(r.returncode)
""")
    os.chmod(path, 0o755)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--minutes", type=float, default=None)
    parser.add_argument("--shrink-minutes", type=float, default=5)
    parser.add_argument("--idtool", required=True)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--no-flip", action="store_true",
                        help="file backend: leave out the one-bit flip of the keyring file")
    parser.add_argument("--backend", choices=["service", "file"], default="service",
                        help="file: the keyring is libsecret's file backend (scripts/chaos --provider file)")
    parser.add_argument("--without", type=lambda text: set(filter(None, text.split(","))), default=set(),
                        help="leave out these extra operations (comma-separated: slow_creator, flood); "
                             "--without slow_creator,flood replays a seed as before they existed")
    parser.add_argument("--broken", action="store_true", help="run (and shrink) against the broken idtool of --self-test")
    parser.add_argument("--scenario", choices=sorted(Chaos.SCENARIOS),
                        help="run one scripted sequence (and the final check) instead of a seed's schedule")
    parser.add_argument("--self-test", action="store_true",
                        help="run against an idtool that hands out a fresh identifier now and then; succeed only if that is caught")
    args = parser.parse_args()
    if args.backend == "file":
        use_file_backend()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 32)
    if args.steps is None and args.minutes is None:
        args.steps = 200
    if "WITH_KEYRING_ROOT" not in os.environ:
        sys.exit("chaos: run it through scripts/chaos (it needs the throwaway keyring of scripts/with-keyring)")

    if args.self_test:
        wrapper = broken_idtool(tempfile.mkdtemp(dir=os.environ["WITH_KEYRING_ROOT"]), args.idtool)
        chaos = Chaos(args, idtool=wrapper, quiet=True)
        chaos.run()
        print(chaos.summary())
        caught = any(invariant == 1 for invariant, _ in chaos.violations)
        print("chaos self-test: " + ("the broken idtool was caught" if caught else "the broken idtool was NOT caught"))
        sys.exit(0 if caught else 1)

    if args.scenario:
        backend, scenario = Chaos.SCENARIOS[args.scenario]
        if args.backend != backend:
            sys.exit(f"chaos: --scenario {args.scenario} runs on the {backend} backend")
        chaos = Chaos(args)
        chaos.ctl_run("restart")
        missed = scenario(chaos)
        chaos.steps_run = 0
        chaos.final_check()
        print(chaos.summary().replace(f"seed {args.seed}, 0 steps", f"scenario {args.scenario}"), flush=True)
        for _, violation in chaos.violations:
            print("  " + violation)
        for line in missed:
            print(f"  scenario {args.scenario}: {line}")
        if chaos.violations or missed:
            print("  " + "\n  ".join(chaos.transcript))
            sys.exit(1)
        sys.exit(0)

    if args.broken:
        args.idtool = broken_idtool(tempfile.mkdtemp(dir=os.environ["WITH_KEYRING_ROOT"]), args.idtool)
    chaos = Chaos(args)
    try:
        chaos.run()
    finally:
        chaos.resume()
        chaos.stop_flood()
    print(chaos.summary(), flush=True)
    for _, violation in chaos.violations:
        print("  " + violation)
    if not chaos.violations:
        sys.exit(0)
    indices, smallest = shrink(args, chaos)
    print(f"chaos: smallest failing schedule found: {len(indices)} steps (--seed {args.seed}); it ran:")
    for line in smallest.transcript:
        print("  " + line)
    sys.exit(1)


if __name__ == "__main__":
    main()
