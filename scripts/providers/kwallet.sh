# Provider: KWallet (sourced by scripts/keyring-ctl): ksecretd from KDE
# Frameworks 6.14 and later (Debian 14), kwalletd6 from earlier Frameworks 6 (Debian 13) or kwalletd5
# from KDE Frameworks 5 (Debian 12), whichever the system has (in that order;
# KWALLET_DAEMON=ksecretd|kwalletd6|kwalletd5 picks one). The contract is described in
# gnome-keyring.sh. Below, kwalletd5 stands for kwalletd5 or kwalletd6: kwalletd6 owns both
# org.kde.kwalletd6 and org.kde.kwalletd5 and serves /modules/kwalletd5 too, but the calls use the
# daemon's own names. ksecretd is described further down.
#
# kwalletd5 runs headless (QT_QPA_PLATFORM=offscreen) in a bus of its own configuration, whose only
# service directory activates kwalletd5 for org.freedesktop.secrets and org.kde.kwalletd5
# (gnome-keyring's activation file must not be visible). The wallet is created and opened with no
# dialog through org.kde.KWallet.pamOpen, the call pam_kwallet makes, from a hash of the EMPTY
# password: every later unlock then succeeds silently. Never call CreateCollection: kwalletd5
# answers it with a "new wallet" dialog whose prompt never completes.
#
# KDE Frameworks 6.14 and later (Debian 14) serve the Secret Service from ksecretd instead, and
# kwalletd6 is then only a proxy that reaches the wallet through libsecret; ksecretd is preferred
# when it exists. It owns org.freedesktop.secrets, org.kde.secretservicecompat, org.kde.ksecretd
# (object /ksecretd, whose interface has changePassword only: no pamOpen, open, close or sync) and
# org.freedesktop.impl.portal.desktop.kwallet. A wallet is opened with no dialog only at its
# start, as pam_kwallet starts it: PAM_KWALLET5_LOGIN set, "--pam-login HASHFD ENVFD", the hash
# (the same as pamOpen's) written down the pipe HASHFD, then a connection to the listening socket
# ENVFD that sends the environment (here none) and closes; it then opens the local wallet (the
# default wallet, with "Use One Wallet"). See kwallet_pam_launch.

kwallet_wallet=kdewallet
kwallet_collection=/org/freedesktop/secrets/collection/$kwallet_wallet
# The lived-in fixture's second wallet (KEYRING_LIVED_IN=1), closed, with a password of its own.
kwallet_old_wallet=oldwallet
kwallet_old_password=an-old-password-nobody-remembers
provider_has_lived_in=yes

# The daemon's name (ksecretd, kwalletd6 or kwalletd5), exported so that the tests know which one
# serves.
# None found is provider_check's to report (under set -e the failed lookup would end the script silently).
kwallet_daemon=${KWALLET_DAEMON:-$(for d in ksecretd kwalletd6 kwalletd5; do command -v $d >/dev/null && { echo $d; break; }; done)} || true
export KWALLET_DAEMON=$kwallet_daemon
kwallet_bus=org.kde.$kwallet_daemon
kwallet_module=/modules/$kwallet_daemon

provider_check() {
  need "${kwallet_daemon:-kwalletd6}" "kwallet6 libqca-qt6-plugins (Debian 12: libkf5wallet-bin libqca-qt5-2-plugins)"
  need python3 python3 # computes the wallet's hash
}

# Writes the bus configuration, its service directory and kwalletrc (rewritten on every run), then
# prints the dbus-run-session argument that uses that configuration.
provider_session_args() {
  local root=${WITH_KEYRING_ROOT:?run under scripts/with-keyring} exec
  exec="/usr/bin/env QT_QPA_PLATFORM=offscreen $(command -v "$kwallet_daemon")"
  private_bus_config
  printf '[D-BUS Service]\nName=%s\nExec=%s\n' org.freedesktop.secrets "$exec" >"$root/bus/services/org.freedesktop.secrets.service"
  if [ "$kwallet_daemon" = ksecretd ]; then
    # Its own names only; never kwalletd6's (that proxy reaches the wallet through libsecret, from
    # ksecretd itself) nor the portal's.
    for bus in org.kde.secretservicecompat "$kwallet_bus"; do
      printf '[D-BUS Service]\nName=%s\nExec=%s\n' "$bus" "$exec" >"$root/bus/services/$bus.service"
    done
  else
    # kwalletd6 owns org.kde.kwalletd5 as well (the library flushes the wallet through that name).
    for bus in org.kde.kwalletd5 "$kwallet_bus"; do
      printf '[D-BUS Service]\nName=%s\nExec=%s\n' "$bus" "$exec" >"$root/bus/services/$bus.service"
    done
  fi
  mkdir -p "$XDG_CONFIG_HOME"
  # No first-use wizard, one wallet, never closed on idle, never a prompt; the Secret Service
  # API on (apiEnabled is its switch; true is also the default).
  cat >"$XDG_CONFIG_HOME/kwalletrc" <<EOF
[Wallet]
Enabled=true
First Use=false
Default Wallet=$kwallet_wallet
Use One Wallet=true
Close When Idle=false
Prompt on Open=false
Launch Manager=false
Leave Open=true

[org.freedesktop.secrets]
apiEnabled=true
EOF
  # ksecretd also reads [KSecretD] Enabled (false: it exits at once) and an apiEnabled under
  # [Wallet] (false: no org.kde.ksecretd, no /ksecretd); true is the default of each.
  if [ "$kwallet_daemon" = ksecretd ]; then
    sed -i 's/^\[Wallet\]$/[Wallet]\napiEnabled=true/' "$XDG_CONFIG_HOME/kwalletrc"
    printf '\n[KSecretD]\nEnabled=true\n' >>"$XDG_CONFIG_HOME/kwalletrc"
  fi
  private_bus_args
  # Outside clients the tests run (secret-tool, python) stop with a marker instead of using a
  # session kwalletd5 mishandles; the tests rerun them (see kwallet-clients/). Not for
  # keyring-sandbox's command (keyring-ctl private-bus), which needs no C compiler.
  [ "${test_clients:-yes}" = yes ] || return 0
  mkdir -p "$root/test-clients/python"
  cp "$here/providers/kwallet-clients/sitecustomize.py" "$root/test-clients/python/"
  "${CC:-$(command -v cc || command -v clang)}" -shared -fPIC -O2 -o "$root/test-clients/dh-check.so" \
    "$here/providers/kwallet-clients/dh-check.c" -ldl >&2
}

kwallet_dir() { echo "${XDG_DATA_HOME:?run under scripts/with-keyring}/kwalletd"; }

# pamOpen's argument: PBKDF2-HMAC-SHA512 of PASSWORD (default empty), 50,000 iterations, 56 bytes,
# salted with WALLET's salt file; as a dbus-send byte array.
kwallet_hash() { # kwallet_hash WALLET [PASSWORD]
  python3 -c 'import hashlib, sys
salt = open(sys.argv[1], "rb").read()
print(",".join(str(b) for b in hashlib.pbkdf2_hmac("sha512", sys.argv[2].encode(), salt, 50000, 56)))' "$(kwallet_dir)/$1.salt" "${2:-}"
}

# Creates WALLET (default kdewallet) and opens it with no dialog. pamOpen is declared NoReply, yet
# sent that way (dbus-send without --print-reply) it created no wallet here; sent expecting a reply, it does.
kwallet_pam_open() { # kwallet_pam_open [WALLET [PASSWORD]]
  local wallet=${1:-$kwallet_wallet}
  [ -f "$(kwallet_dir)/$wallet.salt" ] || head -c 56 /dev/urandom >"$(kwallet_dir)/$wallet.salt"
  dbus --dest=$kwallet_bus $kwallet_module org.kde.KWallet.pamOpen \
    "string:$wallet" "array:byte:$(kwallet_hash "$wallet" "${2:-}")" int32:0 >/dev/null
}

kwallet_locked() { # kwallet_locked [COLLECTION]: prints true or false
  dbus --dest=$name "${1:-$kwallet_collection}" org.freedesktop.DBus.Properties.Get \
    string:org.freedesktop.Secret.Collection string:Locked 2>/dev/null | awk '/boolean/ {print $NF}'
}

kwallet_is_locked() { [ "$(kwallet_locked "${2:-}")" = "$1" ]; }

kwallet_wait_locked() { # kwallet_wait_locked true|false [COLLECTION]
  poll 60 kwallet_is_locked "$1" "${2:-}" && return 0
  echo "keyring-ctl: timed out after 60 s waiting for ${2:-the wallet} to be locked=$1" >&2
  return 1
}

kwallet_launch() {
  # The bus's activation would start it too; starting it here makes start-up errors visible
  # (in $WITH_KEYRING_ROOT/kwalletd5.log or kwalletd6.log).
  QT_QPA_PLATFORM=offscreen setsid "$kwallet_daemon" >>"$WITH_KEYRING_ROOT/$kwallet_daemon.log" 2>&1 </dev/null &
  wait_for yes
}

# Unlocks through the Secret Service: Unlock returns a prompt, which with the empty password
# completes with no dialog (a real desktop asks for the password here).
kwallet_unlock() { # kwallet_unlock [COLLECTION]
  local prompt collection=${1:-$kwallet_collection}
  prompt=$(dbus --dest=$name /org/freedesktop/secrets org.freedesktop.Secret.Service.Unlock \
    array:objpath:$collection | awk '/object path/ {gsub(/"/, "", $3); print $3}' | tail -1)
  if [ -n "$prompt" ] && [ "$prompt" != / ]; then
    dbus --dest=$name "$prompt" org.freedesktop.Secret.Prompt.Prompt string: >/dev/null
  fi
  kwallet_wait_locked false $collection
}

kwallet_wait_file() { # kwallet_wait_file WALLET
  poll 60 test -f "$(kwallet_dir)/$1.kwl" && return 0
  echo "keyring-ctl: $kwallet_daemon created no wallet $1 within 60 s" >&2
  return 1
}

# ksecretd, started as pam_kwallet starts it (ksecretd's main.cpp: checkPamModule, waitForHash,
# waitForEnvironment, then pamOpen of the local wallet): PAM_KWALLET5_LOGIN set and
# "--pam-login HASHFD ENVFD", HASHFD a pipe carrying the 56 bytes of kwallet_hash, ENVFD a
# listening Unix socket; ksecretd reads the hash, accepts one connection and putenv()s each line
# until the connection closes (we send none: it has its environment already). WALLET is created
# (blowfish, the PBKDF2 hash as its key) when it does not exist, and is opened with no dialog.
# ksecretd opens its local wallet that way, the default one with "Use One Wallet"; CONFIG (an
# XDG_CONFIG_HOME) names another default for the old wallet. The bus name is taken at once.
kwallet_pam_launch() { # kwallet_pam_launch WALLET [PASSWORD [CONFIG]]
  local salt
  salt=$(kwallet_dir)/$1.salt
  [ -f "$salt" ] || head -c 56 /dev/urandom >"$salt"
  XDG_CONFIG_HOME=${3:-$XDG_CONFIG_HOME} PAM_KWALLET5_LOGIN=1 QT_QPA_PLATFORM=offscreen python3 -c '
import hashlib, os, socket, subprocess, sys
salt, password, socket_path, daemon = sys.argv[1:]
key = hashlib.pbkdf2_hmac("sha512", password.encode(), open(salt, "rb").read(), 50000, 56)
hash_read, hash_write = os.pipe()
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
if os.path.exists(socket_path):
    os.unlink(socket_path)
listener.bind(socket_path)
listener.listen(1)
subprocess.Popen([daemon, "--pam-login", str(hash_read), str(listener.fileno())],
                 pass_fds=(hash_read, listener.fileno()), stdin=subprocess.DEVNULL, start_new_session=True)
os.close(hash_read)
listener.close()
os.write(hash_write, key)
os.close(hash_write)
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as environment:
    environment.connect(socket_path)
os.unlink(socket_path)
' "$salt" "${2:-}" "$WITH_KEYRING_ROOT/ksecretd-env.socket" "$(command -v ksecretd)" \
    >>"$WITH_KEYRING_ROOT/ksecretd.log" 2>&1 </dev/null
  wait_for yes
}

# The old wallet's XDG_CONFIG_HOME: kwalletrc with oldwallet as the default (local) wallet.
kwallet_old_config() {
  local config=${WITH_KEYRING_ROOT:?}/oldwallet-config
  mkdir -p "$config"
  sed "s/^Default Wallet=.*/Default Wallet=$kwallet_old_wallet/" "$XDG_CONFIG_HOME/kwalletrc" >"$config/kwalletrc"
  echo "$config"
}

kwallet_lock() { # kwallet_lock COLLECTION: Lock closes the wallet and writes it out first
  dbus --dest=$name /org/freedesktop/secrets org.freedesktop.Secret.Service.Lock "array:objpath:$1" >/dev/null
  kwallet_wait_locked true "$1"
}

# ksecretd has no pamOpen call: a wallet is created, or opened by its password, only by a start
# with --pam-login. As with kwalletd5, the daemon is then restarted plain (as the bus would start
# it) and the default wallet opened through the Secret Service: its Unlock prompt completes with
# no dialog, the password being empty (a bus-activated ksecretd does the same for any client).
# An Unlock prompt for the old wallet never completes instead (a password dialog, with no display).
ksecretd_start() {
  local dir old=/org/freedesktop/secrets/collection/$kwallet_old_wallet
  dir=$(kwallet_dir)
  if [ ! -f "$dir/$kwallet_wallet.kwl" ]; then
    mkdir -p "$dir"
    chmod 700 "$dir"
    kwallet_pam_launch $kwallet_wallet
    kwallet_wait_file $kwallet_wallet
    stop TERM
  fi
  # Lived in: filled once, by a ksecretd that opened the old wallet by its password at its start
  # (the only way to open it with no dialog; it is then unlocked already, and its Unlock needs no
  # prompt); both wallets are then locked, which writes them out (ksecretd writes a wallet 5 s
  # after a change, and not on SIGTERM), and the old one stays closed from then on, also after a
  # restart.
  local marker="${WITH_KEYRING_ROOT:?}/lived-in-filled"
  if [ "${KEYRING_LIVED_IN:-0}" = 1 ] && [ ! -f "$marker" ]; then
    kwallet_pam_launch $kwallet_old_wallet "$kwallet_old_password" "$(kwallet_old_config)"
    kwallet_wait_file $kwallet_old_wallet
    kwallet_unlock
    kwallet_unlock $old
    /usr/bin/python3 "$here/providers/lived-in.py" fill $kwallet_collection $old
    kwallet_lock $old
    kwallet_lock $kwallet_collection
    stop TERM
    : >"$marker"
  fi
  kwallet_launch
  kwallet_unlock
}

provider_start() {
  if [ "$kwallet_daemon" = ksecretd ]; then ksecretd_start; return; fi
  local dir old=/org/freedesktop/secrets/collection/$kwallet_old_wallet
  dir=$(kwallet_dir)
  if [ ! -f "$dir/$kwallet_wallet.kwl" ]; then
    mkdir -p "$dir"
    chmod 700 "$dir"
    kwallet_launch
    kwallet_pam_open
    kwallet_wait_file $kwallet_wallet
    if [ "${KEYRING_LIVED_IN:-0}" = 1 ]; then
      kwallet_pam_open $kwallet_old_wallet "$kwallet_old_password"
      kwallet_wait_file $kwallet_old_wallet
    fi
    # kwalletd5 turns wallets into collections only at start-up.
    stop TERM
  fi
  kwallet_launch
  kwallet_unlock
  # Lived in: other clients' items in the default wallet, and the old wallet's items, filled once
  # with the old wallet opened by its password; it is then closed, and stays closed after a restart.
  local marker="${WITH_KEYRING_ROOT:?}/lived-in-filled"
  if [ "${KEYRING_LIVED_IN:-0}" = 1 ] && [ ! -f "$marker" ]; then
    # Opened by its password first, the unlock through the Secret Service then needs no dialog.
    kwallet_pam_open $kwallet_old_wallet "$kwallet_old_password"
    kwallet_unlock $old
    /usr/bin/python3 "$here/providers/lived-in.py" fill $kwallet_collection $old
    dbus --dest=$kwallet_bus $kwallet_module org.kde.KWallet.close string:$kwallet_old_wallet boolean:true >/dev/null
    kwallet_wait_locked true $old
    : >"$marker"
  fi
}

provider_lock() {
  dbus --dest=$name /org/freedesktop/secrets org.freedesktop.Secret.Service.Lock \
    array:objpath:/org/freedesktop/secrets/aliases/default >/dev/null
  kwallet_wait_locked true
}

provider_unlock() { kwallet_unlock; }

# ksecretd writes a wallet about 5 s after a change and not on SIGTERM, so a stop would lose what a
# test wrote just before: a stop (TERM) locks every open wallet first, which writes it, as
# KeePassXC's harness saves before it stops. A kill (KILL) loses what is unsaved, as it can on a
# desktop; the lost-write tests use it.
if [ "$kwallet_daemon" = ksecretd ] && declare -F stop >/dev/null; then
  eval "unsaving_$(declare -f stop)"
  stop() { # stop [signal]
    if [ "${1:-TERM}" = TERM ]; then resume bus; resume service; fi
    if [ "${1:-TERM}" = TERM ] && has_owner; then
      local open
      open=$(dbus --dest=$name /org/freedesktop/secrets org.freedesktop.DBus.Properties.Get \
        string:org.freedesktop.Secret.Service string:Collections 2>/dev/null |
        awk '/object path/ {gsub(/"/, "", $3); print $3}' | while read -r collection; do
          [ "$(kwallet_locked "$collection")" != false ] || echo "$collection"
        done)
      for collection in $open; do kwallet_lock "$collection" || true; done
    fi
    unsaving_stop "$@"
  }
fi
