// Strings and tables, GObject casts, GIO flags and error quarks: what Swift cannot spell itself.
#ifndef KEYRING_SHIM_BASICS_H
#define KEYRING_SHIM_BASICS_H

#include "../../CLibSecret/CLibSecret.h"

#pragma clang assume_nonnull begin

/// A string → string table that owns (and frees) copies of its keys and values.
GHashTable *kr_string_table_new(void);

void kr_string_table_insert(GHashTable *table, const char *key, const char *value);

GDBusProxy *kr_service_proxy(SecretService *service);
GDBusProxy *kr_item_proxy(SecretItem *item);

/* GLib 2.90 marks GIO's flag enums G_GNUC_FLAG_ENUM, and Swift then imports them as option sets
 * without the C constants' names; earlier GLibs give plain enums. These spell the flags Swift
 * passes once, for every GLib (2.74 through 2.90). */
GDBusCallFlags kr_call_flags_none(void);
GDBusCallFlags kr_call_flags_no_auto_start(void);
GDBusSignalFlags kr_signal_flags_none(void);
GLogLevelFlags kr_log_level_critical(void);

GQuark kr_io_error_quark(void);
GQuark kr_dbus_error_quark(void);
GQuark kr_secret_error_quark(void);

#pragma clang assume_nonnull end

#endif
