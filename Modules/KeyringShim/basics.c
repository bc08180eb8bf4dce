// Strings and tables, GObject casts, GIO flags and error quarks (kr_basics.h).
#include "kr_basics.h"

GHashTable *kr_string_table_new(void) {
    return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

void kr_string_table_insert(GHashTable *table, const char *key, const char *value) {
    g_hash_table_insert(table, g_strdup(key), g_strdup(value));
}

GDBusProxy *kr_service_proxy(SecretService *service) { return G_DBUS_PROXY(service); }

GDBusProxy *kr_item_proxy(SecretItem *item) { return G_DBUS_PROXY(item); }

GDBusCallFlags kr_call_flags_none(void) { return G_DBUS_CALL_FLAGS_NONE; }

GDBusCallFlags kr_call_flags_no_auto_start(void) { return G_DBUS_CALL_FLAGS_NO_AUTO_START; }

GDBusSignalFlags kr_signal_flags_none(void) { return G_DBUS_SIGNAL_FLAGS_NONE; }

GLogLevelFlags kr_log_level_critical(void) { return G_LOG_LEVEL_CRITICAL; }

GQuark kr_io_error_quark(void) { return G_IO_ERROR; }

GQuark kr_dbus_error_quark(void) { return G_DBUS_ERROR; }

GQuark kr_secret_error_quark(void) { return SECRET_ERROR; }
