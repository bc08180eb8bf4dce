// What the kernel and glibc know that Swift's Glibc module does not declare: the heap in use (the
// leak tests' measure) and a file's birth time.
#ifndef KEYRING_SHIM_SYSTEM_H
#define KEYRING_SHIM_SYSTEM_H

#include "../../CLibSecret/CLibSecret.h"

#pragma clang assume_nonnull begin

// MARK: leak tests

/// Bytes malloc has handed out and not had back, over all arenas (glibc's mallinfo2), or 0 where
/// unknown. The tests' measure of a leak: unlike RSS, it does not move with the allocator's page reuse.
size_t kr_heap_bytes_in_use(void);

// MARK: file times

/// When `path` (a final symlink itself, not its target) was created, from statx(2): FALSE where
/// the kernel or the filesystem records no birth time. Through syscall(2), since Swift's Glibc
/// module declares no statx.
gboolean kr_birth_time(const char *path, gint64 *seconds, guint32 *nanoseconds);

#pragma clang assume_nonnull end

#endif
