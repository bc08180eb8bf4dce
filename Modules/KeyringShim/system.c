// The heap in use and a file's birth time (kr_system.h).
#include "kr_system.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <fcntl.h>
#include <sys/syscall.h>
#include <linux/stat.h>
#include <unistd.h>

size_t kr_heap_bytes_in_use(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
#else
    return 0;
#endif
}

gboolean kr_birth_time(const char *path, gint64 *seconds, guint32 *nanoseconds) {
#if defined(SYS_statx) && defined(STATX_BTIME)
    struct statx info;
    if (syscall(SYS_statx, AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &info) != 0) return FALSE;
    if (!(info.stx_mask & STATX_BTIME)) return FALSE;
    *seconds = info.stx_btime.tv_sec;
    *nanoseconds = info.stx_btime.tv_nsec;
    return TRUE;
#else
    (void)path; (void)seconds; (void)nanoseconds;
    return FALSE;
#endif
}
