# Provider: KWallet (sourced by scripts/with-keyring and scripts/keyring-ctl): kwalletd6 from KDE
# Frameworks 6 (Debian 13) or kwalletd5 from KDE Frameworks 5 (Debian 12), whichever the system has
# (kwalletd6 first; KWALLET_DAEMON=kwalletd5|kwalletd6 picks one). The contract is described in
# gnome-keyring.sh. Below, kwalletd5 stands for either: kwalletd6 owns both org.kde.kwalletd6 and
# org.kde.kwalletd5 and serves /modules/kwalletd5 too, but the calls use the daemon's own names.
#
# kwalletd5 runs headless (QT_QPA_PLATFORM=offscreen) in a bus of its own configuration, whose only
# service directory activates kwalletd5 for org.freedesktop.secrets and org.kde.kwalletd5
# (gnome-keyring's activation file must not be visible). The wallet is created and opened with no
# dialog through org.kde.KWallet.pamOpen, the call pam_kwallet makes, from a hash of the EMPTY
# password: every later unlock then succeeds silently. Never call CreateCollection: kwalletd5
# answers it with a "new wallet" dialog whose prompt never completes.
# shellcheck source=private-bus.sh
. "$here/providers/private-bus.sh"

kwallet_wallet=kdewallet
kwallet_collection=/org/freedesktop/secrets/collection/$kwallet_wallet
# The lived-in fixture's second wallet (KEYRING_LIVED_IN=1), closed, with a password of its own.
kwallet_old_wallet=oldwallet
kwallet_old_password=an-old-password-nobody-remembers
provider_has_lived_in=yes

# The daemon's name (kwalletd6 or kwalletd5), exported so that the tests know which one serves.
kwallet_daemon=${KWALLET_DAEMON:-$(for d in kwalletd6 kwalletd5; do command -v $d >/dev/null && { echo $d; break; }; done)}
export KWALLET_DAEMON=$kwallet_daemon
kwallet_bus=org.kde.$kwallet_daemon
kwallet_module=/modules/$kwallet_daemon

provider_check() {
  [ -n "$kwallet_daemon" ] && command -v "$kwallet_daemon" >/dev/null ||
    { echo "with-keyring: no KWallet daemon (kwalletd6 from kwalletd6 or kwalletd5 from libkf5wallet-bin); run scripts/bootstrap" >&2; exit 69; }
  command -v python3 >/dev/null ||
    { echo "with-keyring: python3 is missing (computes the wallet hash); run scripts/bootstrap" >&2; exit 69; }
}

# Writes the bus configuration, its service directory and kwalletrc (rewritten on every run), then
# prints the dbus-run-session argument that uses that configuration.
provider_session_args() {
  local root=${WITH_KEYRING_ROOT:?run under scripts/with-keyring} exec
  exec="/usr/bin/env QT_QPA_PLATFORM=offscreen $(command -v "$kwallet_daemon")"
  private_bus_config
  printf '[D-BUS Service]\nName=%s\nExec=%s\n' org.freedesktop.secrets "$exec" >"$root/bus/services/org.freedesktop.secrets.service"
  # kwalletd6 owns org.kde.kwalletd5 as well (the library flushes the wallet through that name).
  for bus in org.kde.kwalletd5 "$kwallet_bus"; do
    printf '[D-BUS Service]\nName=%s\nExec=%s\n' "$bus" "$exec" >"$root/bus/services/$bus.service"
  done
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
  # Outside clients the tests run (secret-tool, python) stop with a marker instead of using a
  # session kwalletd5 mishandles; the tests rerun them (see kwallet-clients/).
  mkdir -p "$root/test-clients/python"
  cp "$here/providers/kwallet-clients/sitecustomize.py" "$root/test-clients/python/"
  "${CC:-$(command -v cc || command -v clang)}" -shared -fPIC -O2 -o "$root/test-clients/dh-check.so" \
    "$here/providers/kwallet-clients/dh-check.c" -ldl >&2
  private_bus_args
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

provider_start() {
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
