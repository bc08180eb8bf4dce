// GVariant builders and readers for the D-Bus calls Swift makes (kr_variants.h).
#include "kr_variants.h"
#include "kr_basics.h"

GVariant *kr_variant_string_tuple(const char *value) {
    return g_variant_new("(s)", value);
}

GVariant *kr_variant_name_flags_tuple(const char *name, guint32 flags) {
    return g_variant_new("(su)", name, flags);
}

guint32 kr_variant_tuple_u32(GVariant *reply) {
    guint32 value = 0;
    if (reply && g_variant_is_of_type(reply, G_VARIANT_TYPE("(u)"))) g_variant_get(reply, "(u)", &value);
    return value;
}

gboolean kr_item_properties(GVariant *reply, KRItemProperties *properties) {
    *properties = (KRItemProperties){ NULL, NULL, 0, 0, FALSE };
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(a{sv})"))) return FALSE;
    GVariant *dict = g_variant_get_child_value(reply, 0);
    GVariant *attributes = g_variant_lookup_value(dict, "Attributes", G_VARIANT_TYPE("a{ss}"));
    GVariant *label = g_variant_lookup_value(dict, "Label", NULL);
    gboolean ok = attributes && (!label || g_variant_is_of_type(label, G_VARIANT_TYPE_STRING))
        && g_variant_lookup(dict, "Created", "t", &properties->created) && g_variant_lookup(dict, "Modified", "t", &properties->modified)
        && g_variant_lookup(dict, "Locked", "b", &properties->locked);
    if (ok) {
        properties->attributes = kr_string_table_new();
        GVariantIter iter;
        const gchar *key, *value;
        g_variant_iter_init(&iter, attributes);
        while (g_variant_iter_next(&iter, "{&s&s}", &key, &value)) kr_string_table_insert(properties->attributes, key, value);
        properties->label = g_strdup(label ? g_variant_get_string(label, NULL) : "");
    }
    if (attributes) g_variant_unref(attributes);
    if (label) g_variant_unref(label);
    g_variant_unref(dict);
    return ok;
}

GVariant *kr_item_interface_tuple(void) {
    return g_variant_new("(s)", "org.freedesktop.Secret.Item");
}

GVariant *kr_variant_objpath_array_tuple(const char *path) {
    const gchar *paths[] = { path, NULL };
    return g_variant_new("(^ao)", paths);
}

gchar *kr_variant_tuple_objpath(GVariant *reply) {
    const gchar *path = NULL;
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(o)"))) return NULL;
    g_variant_get(reply, "(&o)", &path);
    return g_strdup(path);
}

gchar *kr_unlock_reply_prompt(GVariant *reply) {
    const gchar *prompt = NULL;
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(aoo)"))) return NULL;
    g_variant_get(reply, "(@ao&o)", NULL, &prompt);
    return g_strdup(prompt);
}

gboolean kr_prompt_completed_dismissed(GVariant *parameters) {
    gboolean dismissed = TRUE;
    if (parameters && g_variant_is_of_type(parameters, G_VARIANT_TYPE("(bv)"))) g_variant_get(parameters, "(b@v)", &dismissed, NULL);
    return dismissed;
}

GVariant *kr_kwallet_open_tuple(const char *wallet, const char *appid) {
    return g_variant_new("(sxs)", wallet, (gint64)0, appid);
}

GVariant *kr_kwallet_handle_tuple(gint32 handle, const char *appid) {
    return g_variant_new("(is)", handle, appid);
}

GVariant *kr_kwallet_close_tuple(gint32 handle, const char *appid) {
    return g_variant_new("(ibs)", handle, FALSE, appid);
}

gchar *kr_variant_tuple_string(GVariant *reply) {
    const gchar *value = NULL;
    if (reply && g_variant_is_of_type(reply, G_VARIANT_TYPE("(s)"))) g_variant_get(reply, "(&s)", &value);
    return value ? g_strdup(value) : NULL;
}

gint32 kr_variant_tuple_i32(GVariant *reply) {
    gint32 value = -1;
    if (reply && g_variant_is_of_type(reply, G_VARIANT_TYPE("(i)"))) g_variant_get(reply, "(i)", &value);
    return value;
}

gboolean kr_variant_tuple_bool(GVariant *reply) {
    gboolean value = FALSE;
    if (reply && g_variant_is_of_type(reply, G_VARIANT_TYPE("(b)"))) g_variant_get(reply, "(b)", &value);
    return value;
}

GVariant *kr_open_plain_session_tuple(void) {
    return g_variant_new("(sv)", "plain", g_variant_new_string(""));
}

gchar *kr_open_session_path(GVariant *reply) {
    const gchar *path = NULL;
    if (reply && g_variant_is_of_type(reply, G_VARIANT_TYPE("(vo)"))) g_variant_get(reply, "(v&o)", NULL, &path);
    return path ? g_strdup(path) : NULL;
}

gboolean kr_variant_tuple_strings_contains(GVariant *reply, const char *name) {
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

GVariant *kr_variant_two_strings_tuple(const char *first, const char *second) {
    return g_variant_new("(ss)", first, second);
}

GVariant *kr_variant_set_string_tuple(const char *interface, const char *property, const char *value) {
    return g_variant_new("(ssv)", interface, property, g_variant_new_string(value));
}

gchar **kr_variant_object_paths(GVariant *reply) {
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(v)"))) return NULL;
    GVariant *value = NULL;
    g_variant_get(reply, "(v)", &value);
    gchar **paths = NULL;
    if (g_variant_is_of_type(value, G_VARIANT_TYPE("ao"))) paths = g_variant_dup_objv(value, NULL);
    g_variant_unref(value);
    return paths;
}

gchar *kr_variant_property_string(GVariant *reply) {
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(v)"))) return NULL;
    GVariant *value = NULL;
    g_variant_get(reply, "(v)", &value);
    gchar *result = g_variant_is_of_type(value, G_VARIANT_TYPE_STRING) ? g_variant_dup_string(value, NULL) : NULL;
    g_variant_unref(value);
    return result;
}

int kr_variant_boolean(GVariant *reply) {
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(v)"))) return -1;
    GVariant *value = NULL;
    g_variant_get(reply, "(v)", &value);
    int result = g_variant_is_of_type(value, G_VARIANT_TYPE_BOOLEAN) ? (g_variant_get_boolean(value) ? 1 : 0) : -1;
    g_variant_unref(value);
    return result;
}

GVariant *kr_variant_attributes(GHashTable *table) {
    GVariantBuilder builder;
    g_variant_builder_init(&builder, G_VARIANT_TYPE("a{ss}"));
    GHashTableIter iter;
    gpointer key, value;
    g_hash_table_iter_init(&iter, table);
    while (g_hash_table_iter_next(&iter, &key, &value)) g_variant_builder_add(&builder, "{ss}", key, value);
    return g_variant_builder_end(&builder);
}

GVariant *kr_variant_attributes_tuple(GHashTable *table) {
    return g_variant_new("(@a{ss})", kr_variant_attributes(table));
}

void kr_search_reply(GVariant *reply, gchar ***unlocked, gchar ***locked) {
    *unlocked = NULL;
    *locked = NULL;
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(aoao)"))) return;
    g_variant_get(reply, "(^ao^ao)", unlocked, locked);
}

GVariant *kr_variant_paths_session_tuple(const gchar *const *paths, const char *session) {
    return g_variant_new("(^aoo)", paths, session);
}

GVariant *kr_variant_path_session_tuple(const char *path, const char *session) {
    const gchar *paths[] = {path, NULL};
    return g_variant_new("(^aoo)", paths, session);
}

GVariant *kr_secrets_reply_entry(GVariant *reply, const char *path) {
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(a{o(oayays)})"))) return NULL;
    GVariant *map = g_variant_get_child_value(reply, 0);
    GVariant *entry = g_variant_lookup_value(map, path, G_VARIANT_TYPE("(oayays)"));
    g_variant_unref(map);
    return entry;
}

GVariant *kr_secrets_reply_value(GVariant *reply, const char *path) {
    GVariant *entry = kr_secrets_reply_entry(reply, path);
    if (!entry) return NULL;
    // A plain session's secret has no parameters; one with an IV was encrypted for another session.
    GVariant *parameters = g_variant_get_child_value(entry, 1);
    gsize parameter_count = g_variant_n_children(parameters);
    g_variant_unref(parameters);
    GVariant *value = parameter_count == 0 ? g_variant_get_child_value(entry, 2) : NULL;
    g_variant_unref(entry);
    return value;
}

GVariant *kr_variant_tuple_of(GVariant *value) {
    return g_variant_new_tuple(&value, 1);
}

GVariant *kr_create_item_tuple(const char *label, GHashTable *attributes, GVariant *secret, gboolean replace) {
    GVariantBuilder properties;
    g_variant_builder_init(&properties, G_VARIANT_TYPE("a{sv}"));
    g_variant_builder_add(&properties, "{sv}", "org.freedesktop.Secret.Item.Label", g_variant_new_string(label));
    g_variant_builder_add(&properties, "{sv}", "org.freedesktop.Secret.Item.Attributes", kr_variant_attributes(attributes));
    return g_variant_new("(a{sv}@(oayays)b)", &properties, secret, replace);
}

void kr_create_item_reply(GVariant *reply, gchar **item, gchar **prompt) {
    *item = NULL;
    *prompt = NULL;
    if (reply && g_variant_is_of_type(reply, G_VARIANT_TYPE("(oo)"))) g_variant_get(reply, "(oo)", item, prompt);
}

const GVariantType *kr_variant_type_objpath(void) { return G_VARIANT_TYPE_OBJECT_PATH; }

gchar *kr_variant_objpath(GVariant *value) {
    return value && g_variant_is_of_type(value, G_VARIANT_TYPE_OBJECT_PATH) ? g_variant_dup_string(value, NULL) : NULL;
}

GVariant *kr_variant_objpath_tuple(const char *path) {
    return g_variant_new("(o)", path);
}

GVariant *kr_get_secret_reply_value(GVariant *reply) {
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("((oayays))"))) return NULL;
    GVariant *secret = g_variant_get_child_value(reply, 0);
    GVariant *value = g_variant_get_child_value(secret, 2);
    g_variant_unref(secret);
    return value;
}
