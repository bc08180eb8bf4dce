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

# About 1 in 750 sessions still gets another key in kwalletd (measured with secret-tool), and
# secretstorage strips the padding of what it decrypts without checking it: such a read returns
# garbage. Check the PKCS#7 padding of each decrypted secret, and stop with the marker when it is
# not valid (a wrong key leaves valid padding 1 time in 256).
try:
    import secretstorage.item as _item

    _Cipher = _item.Cipher

    class _CheckedDecryptor:
        def __init__(self, inner):
            self._inner, self._out = inner, b""

        def update(self, data):
            part = self._inner.update(data)
            self._out += part
            return part

        def finalize(self):
            part = self._inner.finalize()
            padded = self._out + part
            pad = padded[-1] if padded else 0
            if not 1 <= pad <= 16 or padded[-pad:] != bytes([pad]) * pad:
                raise SystemExit("kwallet-dh-check: a secret that does not decrypt with the session key, "
                                 "which kwalletd mishandles; rerun (test harness)")
            return part

    class _CheckedCipher:
        def __init__(self, *args, **kwargs):
            self._inner = _Cipher(*args, **kwargs)

        def decryptor(self):
            return _CheckedDecryptor(self._inner.decryptor())

        def encryptor(self):
            return self._inner.encryptor()

    _item.Cipher = _CheckedCipher
except Exception:
    pass
