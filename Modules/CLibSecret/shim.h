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

// Collection lock states, read straight from the service (KeePassXC hides a locked database's items).

/// `(ss)` tuple for Properties.Get (interface, property).
static inline GVariant *kr_variant_two_strings_tuple(const char *first, const char *second) {
    return g_variant_new("(ss)", first, second);
}

/// The object paths in a Properties.Get reply, `(v)` holding `ao`; NULL-terminated, free with
/// g_strfreev. NULL when the reply has another shape.
static inline gchar **kr_variant_object_paths(GVariant *reply) {
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(v)"))) return NULL;
    GVariant *value = NULL;
    g_variant_get(reply, "(v)", &value);
    gchar **paths = NULL;
    if (g_variant_is_of_type(value, G_VARIANT_TYPE("ao"))) paths = g_variant_dup_objv(value, NULL);
    g_variant_unref(value);
    return paths;
}

/// The boolean in a Properties.Get reply, `(v)` holding `b`: 1 or 0, or -1 for another shape.
static inline int kr_variant_boolean(GVariant *reply) {
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(v)"))) return -1;
    GVariant *value = NULL;
    g_variant_get(reply, "(v)", &value);
    int result = g_variant_is_of_type(value, G_VARIANT_TYPE_BOOLEAN) ? (g_variant_get_boolean(value) ? 1 : 0) : -1;
    g_variant_unref(value);
    return result;
}

/// `(a{ss})` tuple for SearchItems, from a string table.
static inline GVariant *kr_variant_attributes_tuple(GHashTable *table) {
    GVariantBuilder builder;
    g_variant_builder_init(&builder, G_VARIANT_TYPE("a{ss}"));
    GHashTableIter iter;
    gpointer key, value;
    g_hash_table_iter_init(&iter, table);
    while (g_hash_table_iter_next(&iter, &key, &value)) g_variant_builder_add(&builder, "{ss}", key, value);
    return g_variant_new("(a{ss})", &builder);
}

/// The two path lists of a SearchItems reply, `(aoao)`, each NULL-terminated (free with
/// g_strfreev); both NULL when the reply has another shape.
static inline void kr_search_reply(GVariant *reply, gchar ***unlocked, gchar ***locked) {
    *unlocked = NULL;
    *locked = NULL;
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(aoao)"))) return;
    g_variant_get(reply, "(^ao^ao)", unlocked, locked);
}

#endif
