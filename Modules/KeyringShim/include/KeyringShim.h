// The C helpers Swift calls around libsecret and GLib, for what Swift cannot import: GObject cast
// macros, error-domain macros, variadic GVariant constructors, hash tables with string ownership,
// and libsecret's file backend (private interfaces, reached through dlsym). libsecret's own
// declarations come from the CLibSecret system-library module, which each header includes.
#ifndef KEYRING_SHIM_H
#define KEYRING_SHIM_H

#include "kr_basics.h"
#include "kr_variants.h"
#include "kr_calls.h"
#include "kr_signals.h"
#include "kr_file_backend.h"
#include "kr_system.h"

#endif
