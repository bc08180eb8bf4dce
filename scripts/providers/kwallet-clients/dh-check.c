// Test harness only (scripts/providers/kwallet.sh; the tests preload it into secret-tool).
//
// kwalletd5 mishandles 1 in 256 encrypted sessions: it strips a Diffie-Hellman value's leading
// zero byte, so it rejects such a client public key, or derives another session key than the
// client from such a shared secret, with no error. secret-tool then reads or writes garbage.
// This wraps libgcrypt's gcry_mpi_powm, which libsecret uses for both values, and makes the
// client exit with a marker the tests recognize (and rerun it) instead.
//
// About 1 in 750 sessions still gets another key in kwalletd (measured over 3,000 secret-tool
// lookups: 4 read nothing, exit 1, with no message, just as a miss does). So the decryption of a
// secret is checked too: libsecret decrypts in place, then strips PKCS#7 padding, and a wrong key
// leaves padding that is not valid (255 times in 256). That also stops with the marker.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <unistd.h>

typedef void *gcry_mpi_t;
typedef void *gcry_cipher_hd_t;
typedef unsigned int gcry_error_t;

static void stop(const char *why) {
    static const char prefix[] = "kwallet-dh-check: ";
    static const char suffix[] = ", which kwalletd mishandles; rerun (test harness)\n";
    size_t length = 0;
    while (why[length]) length++;
    (void)!write(2, prefix, sizeof prefix - 1);
    (void)!write(2, why, length);
    (void)!write(2, suffix, sizeof suffix - 1);
    _exit(99);
}

// libsecret decrypts a secret one 16-byte block at a time, in place, then closes the cipher and
// strips the padding: the last block decrypted before the close holds the padding.
static unsigned char last_block[16];
static int have_last_block;

gcry_error_t gcry_cipher_decrypt(gcry_cipher_hd_t h, void *out, size_t outsize, const void *in, size_t inlen) {
    static gcry_error_t (*real)(gcry_cipher_hd_t, void *, size_t, const void *, size_t);
    if (!real) real = (gcry_error_t(*)(gcry_cipher_hd_t, void *, size_t, const void *, size_t))dlsym(RTLD_NEXT, "gcry_cipher_decrypt");
    gcry_error_t error = real(h, out, outsize, in, inlen);
    if (error == 0 && in == NULL && outsize == 16) {
        for (size_t i = 0; i < 16; i++) last_block[i] = ((const unsigned char *)out)[i];
        have_last_block = 1;
    }
    return error;
}

void gcry_cipher_close(gcry_cipher_hd_t h) {
    static void (*real)(gcry_cipher_hd_t);
    if (!real) real = (void (*)(gcry_cipher_hd_t))dlsym(RTLD_NEXT, "gcry_cipher_close");
    real(h);
    if (!have_last_block) return;
    have_last_block = 0;
    unsigned char pad = last_block[15];
    int valid = pad >= 1 && pad <= 16;
    for (int i = 1; valid && i <= pad; i++) valid = last_block[16 - i] == pad;
    for (int i = 0; i < 16; i++) last_block[i] = 0;
    if (!valid) stop("a secret that does not decrypt with the session key");
}

void gcry_mpi_powm(gcry_mpi_t w, const gcry_mpi_t b, const gcry_mpi_t e, const gcry_mpi_t m) {
    static void (*real)(gcry_mpi_t, gcry_mpi_t, gcry_mpi_t, gcry_mpi_t);
    static unsigned int (*bits)(gcry_mpi_t);
    if (!real) {
        real = (void (*)(gcry_mpi_t, gcry_mpi_t, gcry_mpi_t, gcry_mpi_t))dlsym(RTLD_NEXT, "gcry_mpi_powm");
        bits = (unsigned int (*)(gcry_mpi_t))dlsym(RTLD_NEXT, "gcry_mpi_get_nbits");
    }
    real(w, b, e, m);
    if (bits(m) == 1024 && bits(w) <= 1016) stop("a Diffie-Hellman value with a zero top byte");
}
