// The one C header Swift imports. Helpers here cover what Swift cannot import:
// GObject cast macros, error-domain macros, and hash tables with string ownership.
#ifndef KEYRING_IDENTITY_SHIM_H
#define KEYRING_IDENTITY_SHIM_H

// The dbus-path calls (secret-paths.h) let a lookup take two round trips, as libsecret's own does.
#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>
#include <gio/gio.h>
#include <glib.h>

/// A string → string table that owns (and frees) copies of its keys and values.
static inline GHashTable *kr_string_table_new(void) {
    return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

static inline void kr_string_table_insert(GHashTable *table, const char *key, const char *value) {
    g_hash_table_insert(table, g_strdup(key), g_strdup(value));
}

static inline GDBusProxy *kr_service_proxy(SecretService *service) { return G_DBUS_PROXY(service); }
static inline GDBusProxy *kr_item_proxy(SecretItem *item) { return G_DBUS_PROXY(item); }

static inline GQuark kr_io_error_quark(void) { return G_IO_ERROR; }
static inline GQuark kr_dbus_error_quark(void) { return G_DBUS_ERROR; }
static inline GQuark kr_secret_error_quark(void) { return SECRET_ERROR; }

/// `("s")` tuple for a one-string D-Bus call (g_variant_new is variadic).
static inline GVariant *kr_variant_string_tuple(const char *value) {
    return g_variant_new("(s)", value);
}

/// `(su)` tuple for RequestName (name, flags).
static inline GVariant *kr_variant_name_flags_tuple(const char *name, guint32 flags) {
    return g_variant_new("(su)", name, flags);
}

/// Reads the `u` out of a `(u)` reply; 0 when the reply has another shape.
static inline guint32 kr_variant_tuple_u32(GVariant *reply) {
    guint32 value = 0;
    if (reply && g_variant_is_of_type(reply, G_VARIANT_TYPE("(u)"))) g_variant_get(reply, "(u)", &value);
    return value;
}

/// Item properties from a `Properties.GetAll` reply, `(a{sv})`. Missing ones read as empty/0/FALSE.
typedef struct {
    GHashTable *attributes;  /* owned string table; free with g_hash_table_unref */
    gchar *label;            /* owned; free with g_free */
    guint64 created;
    guint64 modified;
    gboolean locked;
} KRItemProperties;

static inline KRItemProperties kr_item_properties(GVariant *reply) {
    KRItemProperties properties = { kr_string_table_new(), g_strdup(""), 0, 0, FALSE };
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(a{sv})"))) return properties;
    GVariant *dict = g_variant_get_child_value(reply, 0);
    GVariant *attributes = g_variant_lookup_value(dict, "Attributes", G_VARIANT_TYPE("a{ss}"));
    if (attributes) {
        GVariantIter iter;
        const gchar *key, *value;
        g_variant_iter_init(&iter, attributes);
        while (g_variant_iter_next(&iter, "{&s&s}", &key, &value)) kr_string_table_insert(properties.attributes, key, value);
        g_variant_unref(attributes);
    }
    const gchar *label = NULL;
    if (g_variant_lookup(dict, "Label", "&s", &label)) { g_free(properties.label); properties.label = g_strdup(label); }
    g_variant_lookup(dict, "Created", "t", &properties.created);
    g_variant_lookup(dict, "Modified", "t", &properties.modified);
    g_variant_lookup(dict, "Locked", "b", &properties.locked);
    g_variant_unref(dict);
    return properties;
}

/// `("org.freedesktop.Secret.Item")` for Properties.GetAll.
static inline GVariant *kr_item_interface_tuple(void) {
    return g_variant_new("(s)", "org.freedesktop.Secret.Item");
}

/// kwalletd's org.kde.KWallet calls: `(sxs)` open(wallet, window id 0, app id).
static inline GVariant *kr_kwallet_open_tuple(const char *wallet, const char *appid) {
    return g_variant_new("(sxs)", wallet, (gint64)0, appid);
}

/// `(is)` sync(handle, app id).
static inline GVariant *kr_kwallet_handle_tuple(gint32 handle, const char *appid) {
    return g_variant_new("(is)", handle, appid);
}

/// `(ibs)` close(handle, force FALSE, app id).
static inline GVariant *kr_kwallet_close_tuple(gint32 handle, const char *appid) {
    return g_variant_new("(ibs)", handle, FALSE, appid);
}

/// The string of a `(s)` reply, owned (g_free); NULL when the reply has another shape.
static inline gchar *kr_variant_tuple_string(GVariant *reply) {
    const gchar *value = NULL;
    if (reply && g_variant_is_of_type(reply, G_VARIANT_TYPE("(s)"))) g_variant_get(reply, "(&s)", &value);
    return value ? g_strdup(value) : NULL;
}

/// The `i` of an `(i)` reply; -1 when the reply has another shape.
static inline gint32 kr_variant_tuple_i32(GVariant *reply) {
    gint32 value = -1;
    if (reply && g_variant_is_of_type(reply, G_VARIANT_TYPE("(i)"))) g_variant_get(reply, "(i)", &value);
    return value;
}

/// The `b` of a `(b)` reply; FALSE when the reply has another shape.
static inline gboolean kr_variant_tuple_bool(GVariant *reply) {
    gboolean value = FALSE;
    if (reply && g_variant_is_of_type(reply, G_VARIANT_TYPE("(b)"))) g_variant_get(reply, "(b)", &value);
    return value;
}

/// `("plain", <"">)` for Secret Service OpenSession with no encryption.
static inline GVariant *kr_open_plain_session_tuple(void) {
    return g_variant_new("(sv)", "plain", g_variant_new_string(""));
}

/// The session path of an OpenSession reply, `(vo)`, owned (g_free); NULL for another shape.
static inline gchar *kr_open_session_path(GVariant *reply) {
    const gchar *path = NULL;
    if (reply && g_variant_is_of_type(reply, G_VARIANT_TYPE("(vo)"))) g_variant_get(reply, "(v&o)", NULL, &path);
    return path ? g_strdup(path) : NULL;
}

/// True when an `(as)` reply lists `name`.
static inline gboolean kr_variant_tuple_strings_contains(GVariant *reply, const char *name) {
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(as)"))) return FALSE;
    GVariant *names = g_variant_get_child_value(reply, 0);
    GVariantIter iter;
    const gchar *each;
    gboolean found = FALSE;
    g_variant_iter_init(&iter, names);
    while (!found && g_variant_iter_next(&iter, "&s", &each)) found = g_strcmp0(each, name) == 0;
    g_variant_unref(names);
    return found;
}

#endif
