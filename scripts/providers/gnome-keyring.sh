# Provider: gnome-keyring (sourced by scripts/with-keyring and scripts/keyring-ctl).
# Each provider file defines:
#   provider_check                 exit 69 with a message when a tool is missing
#   provider_session_args          extra dbus-run-session arguments (e.g. --config-file)
#   provider_start                 start the provider unlocked; return once it serves
#   provider_lock / provider_unlock
#   provider_has_test_prompter=yes when provider_start honours keyring-ctl's mock prompter
# keyring-ctl supplies stop/kill/restart/pid generically, through the owner of
# org.freedesktop.secrets; a provider file may redefine stop() (it is sourced after it).
provider_check() {
  command -v gnome-keyring-daemon >/dev/null ||
    { echo "with-keyring: gnome-keyring-daemon is missing; run scripts/bootstrap" >&2; exit 69; }
}

provider_session_args() { :; }

# gnome-keyring sends its unlock prompts to the prompter named by GNOME_KEYRING_TEST_PROMPTER
# instead of gcr-prompter (which needs a display).
provider_has_test_prompter=yes

provider_start() {
  local prompter
  prompter=$(prompter_name)
  # Set only with a mock running: gnome-keyring takes even an empty value as a prompter's name.
  # No trailing newline: it would become part of the password.
  printf %s "${WITH_KEYRING_PASSWORD:?run under scripts/with-keyring}" |
    env ${prompter:+GNOME_KEYRING_TEST_PROMPTER=$prompter} \
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
