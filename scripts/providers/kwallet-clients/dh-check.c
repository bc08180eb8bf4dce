// Test harness only (scripts/providers/kwallet.sh; the tests preload it into secret-tool).
//
// kwalletd5 mishandles 1 in 256 encrypted sessions: it strips a Diffie-Hellman value's leading
// zero byte, so it rejects such a client public key, or derives another session key than the
// client from such a shared secret, with no error. secret-tool then reads or writes garbage.
// This wraps libgcrypt's gcry_mpi_powm, which libsecret uses for both values, and makes the
// client exit with a marker the tests recognize (and rerun it) instead.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>

typedef void *gcry_mpi_t;

void gcry_mpi_powm(gcry_mpi_t w, const gcry_mpi_t b, const gcry_mpi_t e, const gcry_mpi_t m) {
    static void (*real)(gcry_mpi_t, gcry_mpi_t, gcry_mpi_t, gcry_mpi_t);
    static unsigned int (*bits)(gcry_mpi_t);
    if (!real) {
        real = (void (*)(gcry_mpi_t, gcry_mpi_t, gcry_mpi_t, gcry_mpi_t))dlsym(RTLD_NEXT, "gcry_mpi_powm");
        bits = (unsigned int (*)(gcry_mpi_t))dlsym(RTLD_NEXT, "gcry_mpi_get_nbits");
    }
    real(w, b, e, m);
    if (bits(m) == 1024 && bits(w) <= 1016) {
        static const char message[] = "kwallet-dh-check: a Diffie-Hellman value with a zero top byte, "
                                      "which kwalletd5 mishandles; rerun (test harness)\n";
        (void)!write(2, message, sizeof message - 1);
        _exit(99);
    }
}
