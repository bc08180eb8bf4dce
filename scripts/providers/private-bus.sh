# Sourced by scripts/keyring-ctl, for provider files whose daemon must be the only Secret Service the
# test bus can start, and for keyring-sandbox's bus whatever the provider.
# The system's session service files would let any client (KeePassXC's Qt asks the desktop portal
# for its settings) activate xdg-desktop-portal, which starts gnome-keyring as org.freedesktop.secrets
# before the provider under test can own it. This bus reads service files from $WITH_KEYRING_ROOT/bus/services
# only: the provider file writes there what it wants activatable (KWallet: its own daemon), nothing else.

# Writes the bus configuration and creates its (empty) service directory.
private_bus_config() {
  local root=${WITH_KEYRING_ROOT:?run under scripts/with-keyring}
  mkdir -p "$root/bus/services"
  cat >"$root/bus/session.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <keep_umask/>
  <listen>${PRIVATE_BUS_LISTEN:-unix:tmpdir=${TMPDIR:-/tmp}}</listen>
  <auth>EXTERNAL</auth>
  <servicedir>$root/bus/services</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
  <limit name="max_incoming_bytes">1000000000</limit>
  <limit name="max_outgoing_bytes">1000000000</limit>
  <limit name="max_message_size">1000000000</limit>
  <limit name="service_start_timeout">120000</limit>
  <limit name="max_completed_connections">100000</limit>
  <limit name="max_connections_per_user">100000</limit>
</busconfig>
EOF
}

# The dbus-run-session argument that uses it.
private_bus_args() { echo "--config-file=${WITH_KEYRING_ROOT:?}/bus/session.conf"; }
