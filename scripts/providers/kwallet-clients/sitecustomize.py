# Test harness only (scripts/providers/kwallet.sh; the tests put this directory on PYTHONPATH for
# python3). kwalletd5 derives another session key than secretstorage when the Diffie-Hellman
# shared secret has a zero top byte (1 in 256 sessions), with no error: secrets then read or
# write as garbage. Exit with a marker the tests recognize (and rerun) instead.
try:
    import secretstorage.dhcrypto as _dh

    _set_server_public_key = _dh.Session.set_server_public_key

    def _checked(self, server_public_key):
        if pow(server_public_key, self.my_private_key, _dh.DH_PRIME_1024).bit_length() <= 1016:
            raise SystemExit("kwallet-dh-check: a Diffie-Hellman value with a zero top byte, "
                             "which kwalletd5 mishandles; rerun (test harness)")
        return _set_server_public_key(self, server_public_key)

    _dh.Session.set_server_public_key = _checked
except Exception:
    pass
