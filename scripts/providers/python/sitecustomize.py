# Loaded by every Python client the harness runs (scripts/with-keyring puts this directory on
# PYTHONPATH): secretstorage, python-keyring and the tests' own jeepney helpers.
#
# jeepney gives a new connection a fixed 1 s to authenticate with the bus. On a loaded CI machine
# (the sanitizer lane beside three Debian roots) a client once took longer, and secretstorage
# failed with "Did not authenticate in 1.0 seconds" (c28): a load-dependent failure of the test's
# outside client, not of the library. The private buses answer in microseconds when they run, so
# the harness's clients wait up to 30 s instead; a caller that names a timeout keeps its own.
# It shadows Debian's sitecustomize, which only installs apport's hook where apport exists.
try:
    import jeepney.io.blocking as _blocking
except ImportError:
    _blocking = None

if _blocking is not None:
    _open = _blocking.open_dbus_connection

    def _open_patiently(bus="SESSION", enable_fds=False, auth_timeout=30.0):
        return _open(bus, enable_fds=enable_fds, auth_timeout=auth_timeout)

    _blocking.open_dbus_connection = _open_patiently
