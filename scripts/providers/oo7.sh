# Provider: oo7-daemon (sourced by scripts/keyring-ctl); the contract is in gnome-keyring.sh.
# oo7-daemon is Fedora 45's Secret Service. No Debian release packages it: the binary is the one
# ../shared/oo7 holds (scripts/debian unpacks it, checksum checked, into .build/oo7-daemon),
# and it needs glibc 2.39, so this provider runs in the Debian 13, 14 and sid roots (scripts/debian
# RELEASE oo7), not on a Debian 12 host. OO7_DAEMON names another binary.
# It cannot be activated by the bus: provider_start runs it, in the foreground with its log in
# $WITH_KEYRING_ROOT/oo7-daemon.log, and `--login` reads the password on stdin and opens (or
# creates) the Login keyring, which is the default alias.

oo7_binary() { echo "${OO7_DAEMON:-$here/../.build/oo7-daemon/oo7-daemon}"; }

provider_check() {
  local binary
  binary=$(oo7_binary)
  [ -x "$binary" ] || {
    echo "keyring-ctl: no oo7-daemon at $binary: run it through scripts/debian RELEASE oo7, which unpacks ../shared/oo7's build there, or set OO7_DAEMON" >&2
    exit 69
  }
}

# A bus that can activate nothing (private-bus.sh), as for a desktop where oo7-daemon is started
# by the session: a client's call never starts a second daemon.
provider_session_args() {
  private_bus_config
  private_bus_args
}

provider_start() {
  local root=${WITH_KEYRING_ROOT:?run under scripts/with-keyring}
  # No trailing newline: --login reads stdin to its end, and a newline would be part of the
  # password. OO7_PAM_SOCKET: its PAM listener's socket in the root, never the user's.
  printf %s "${WITH_KEYRING_PASSWORD:?run under scripts/with-keyring}" |
    OO7_PAM_SOCKET=$root/oo7-pam.socket setsid "$(oo7_binary)" --login >>"$root/oo7-daemon.log" 2>&1 &
  wait_for yes
  # It owns the name before its collections exist: serving means the default alias names one.
  poll 60 oo7_has_default ||
    { echo "keyring-ctl: oo7-daemon owns $name but had no default collection after 60 s" >&2; return 1; }
}

oo7_has_default() {
  dbus --dest=$name /org/freedesktop/secrets org.freedesktop.Secret.Service.ReadAlias string:default 2>/dev/null |
    grep -q 'object path "/org/freedesktop/secrets/collection/'
}

provider_lock() {
  dbus --dest=$name /org/freedesktop/secrets org.freedesktop.Secret.Service.Lock \
    array:objpath:/org/freedesktop/secrets/aliases/default >/dev/null
}

# An unlock without a prompt: the password through gnome-keyring's private interface, which
# oo7-daemon exports too (UnlockWithMasterPassword), as a login's PAM module hands it over.
provider_unlock() { /usr/bin/python3 "$here/providers/lived-in.py" unlock-default; }
