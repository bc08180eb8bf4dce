# Provider: gnome-keyring (sourced by scripts/with-keyring and scripts/keyring-ctl).
# Each provider file defines:
#   provider_check                 exit 69 with a message when a tool is missing
#   provider_session_args          extra dbus-run-session arguments (e.g. --config-file)
#   provider_start                 start the provider unlocked; return once it serves
#   provider_lock / provider_unlock
# keyring-ctl supplies stop/kill/restart/pid generically, through the owner of
# org.freedesktop.secrets; a provider file may redefine stop() (it is sourced after it).
provider_check() {
  command -v gnome-keyring-daemon >/dev/null ||
    { echo "with-keyring: gnome-keyring-daemon is missing; run scripts/bootstrap" >&2; exit 69; }
}

provider_session_args() { :; }

provider_start() {
  # No trailing newline: it would become part of the password.
  printf %s "${WITH_KEYRING_PASSWORD:?run under scripts/with-keyring}" |
    gnome-keyring-daemon --daemonize --unlock --components=secrets >/dev/null
  wait_for yes
}

provider_lock() {
  dbus --dest=$name /org/freedesktop/secrets org.freedesktop.Secret.Service.Lock \
    array:objpath:/org/freedesktop/secrets/aliases/default >/dev/null
}

# gnome-keyring unlocks only through a prompt (or its private interface, which takes a struct
# dbus-send cannot build); a restart starts it unlocked on the same files.
provider_unlock() { stop TERM; provider_start; }
