# Provider: gnome-keyring (sourced by scripts/keyring-ctl, which scripts/with-keyring and
# keyring-sandbox run: the one definition of how the provider is checked, set up and started).
# Each provider file defines:
#   provider_check                 `need PROGRAM PACKAGES` for each program it runs
#   provider_session_args          write its files (bus service files, configuration); print extra
#                                  dbus-run-session arguments (e.g. private-bus.sh's --config-file)
#   provider_start                 start the provider unlocked; return once it serves
#   provider_lock / provider_unlock
#   provider_has_test_prompter=yes when provider_start honours keyring-ctl's mock prompter
#   provider_has_lived_in=yes      when provider_start fills a lived-in keyring (KEYRING_LIVED_IN=1)
# keyring-ctl supplies stop/kill/restart/pid generically, through the owner of
# org.freedesktop.secrets; a provider file may redefine stop() (it is sourced after it).
provider_check() { need gnome-keyring-daemon gnome-keyring; }

# The bus starts gnome-keyring on demand, as a desktop's does (tests rely on it: a killed daemon
# comes back without the password, its keyring locked). The service file in the session's
# XDG_DATA_HOME, searched before the system's, runs keyring-ctl activated: the system's command,
# unless the daemon keyring-ctl started crashed (see provider_activated).
provider_session_args() {
  local dir=${XDG_DATA_HOME:?run under scripts/with-keyring}/dbus-1/services
  mkdir -p "$dir"
  printf '[D-BUS Service]\nName=org.freedesktop.secrets\nExec=%s activated\n' "$here/keyring-ctl" \
    >"$dir/org.freedesktop.secrets.service"
}

# gnome-keyring sends its unlock prompts to the prompter named by GNOME_KEYRING_TEST_PROMPTER
# instead of gcr-prompter (which needs a display).
provider_has_test_prompter=yes
provider_has_lived_in=yes

# The password the mock prompter answers an unlock prompt with: the default keyring's (on the
# lived-in keyring that is "Work", whose password is its own; see providers/lived-in.py).
provider_prompt_password() {
  if [ "${KEYRING_LIVED_IN:-0}" = 1 ]; then echo "${WITH_KEYRING_PASSWORD:?}-work"; else echo "${WITH_KEYRING_PASSWORD:?}"; fi
}

provider_start() {
  local prompter
  prompter=$(prompter_name)
  # Set only with a mock running: gnome-keyring takes even an empty value as a prompter's name.
  # No trailing newline: it would become part of the password.
  # In the foreground, in a session of its own, so that its messages stay in the root's
  # gnome-keyring.log (daemonized it sends them to /dev/null and syslog): a daemon that aborts
  # says why there, and keyring-ctl run prints it when the command fails. Its exit status goes to
  # gnome-keyring.exit when it ends (provider_activated reads it).
  local root=${WITH_KEYRING_ROOT:?run under scripts/with-keyring}
  rm -f "$root/gnome-keyring.exit"
  : >"$root/gnome-keyring.supervised"
  printf %s "${WITH_KEYRING_PASSWORD:?run under scripts/with-keyring}" |
    env ${prompter:+GNOME_KEYRING_TEST_PROMPTER=$prompter} \
      setsid bash -c 'gnome-keyring-daemon --foreground --unlock --components=secrets; echo $? >"$0.tmp" && mv "$0.tmp" "$0"' \
      "$root/gnome-keyring.exit" >>"$root/gnome-keyring.log" 2>&1 &
  wait_for yes
  # Under SECRET_BACKEND=file the lived-in keyring is the keyring file (lived-in.py fill-file).
  [ "${KEYRING_LIVED_IN:-0}" = 1 ] && [ "${SECRET_BACKEND:-}" != file ] || return 0
  # Filled once per session (login and the keyrings stay on disk; the in-memory session collection
  # does not survive a restart, as on a desktop); after a restart --unlock opened login only, so
  # the default ("Work", same password) is opened again, and the old keyring stays locked.
  local marker="${WITH_KEYRING_ROOT:?}/lived-in-filled"
  if [ -f "$marker" ]; then
    /usr/bin/python3 "$here/providers/lived-in.py" unlock
  else
    /usr/bin/python3 "$here/providers/lived-in.py" populate && : >"$marker"
  fi
}

provider_lock() {
  dbus --dest=$name /org/freedesktop/secrets org.freedesktop.Secret.Service.Lock \
    array:objpath:/org/freedesktop/secrets/aliases/default >/dev/null
}

# gnome-keyring unlocks only through a prompt (or its private interface, which takes a struct
# dbus-send cannot build); a restart starts it unlocked on the same files.
provider_unlock() { stop TERM; provider_start; }

# Started by the bus (keyring-ctl activated). gnome-keyring 42-50 aborts now and then on its own
# (a new client's first calls outrunning its registration; see the Keyring module's PlainRead):
# then the bus's next start would bring it up locked, failing every later test of the run for a
# daemon bug. So when the daemon keyring-ctl started ended by a trap, an abort or a segfault, it
# is started again as keyring-ctl start does, unlocked, and says so in its log. Ended any other
# way (keyring-ctl stop or kill, a test's own SIGKILL), the bus runs the system's command: no password.
provider_activated() {
  local root=${WITH_KEYRING_ROOT:?} status=
  if [ -f "$root/gnome-keyring.supervised" ]; then
    # Its exit status is written as it ends, which the bus may see first.
    poll 30 test -s "$root/gnome-keyring.exit" && status=$(cat "$root/gnome-keyring.exit")
  fi
  case "$status" in
    133 | 134 | 135 | 139)
      echo "keyring-ctl: gnome-keyring-daemon crashed (exit status $status); the bus's start of it is keyring-ctl start's, unlocked" |
        tee -a "$root/gnome-keyring.log" >&2
      provider_start
      ;;
    *)
      rm -f "$root/gnome-keyring.supervised"
      exec gnome-keyring-daemon --start --foreground --components=secrets
      ;;
  esac
}
