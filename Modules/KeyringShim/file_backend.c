// libsecret's file backend, reached through its SecretBackend interface and its private
// SecretFileBackend and SecretFileCollection (kr_file_backend.h).
#include "kr_file_backend.h"
#include "kr_basics.h"
#include "kr_calls.h"

#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

GType kr_file_backend_type(void) {
    GType (*get_type)(void) = (GType (*)(void))dlsym(RTLD_DEFAULT, "secret_file_backend_get_type");
    return get_type ? get_type() : 0;
}

/// SecretFileBackend's fields that kr_file_backend_with_collection fills: its GObject, then the collection.
struct kr_file_backend_layout { GObject parent; GObject *collection; };

gboolean kr_file_backend_layout_fits(GType type) {
    GTypeQuery query;
    g_type_query(type, &query);
    return g_type_from_name("SecretFileBackend") == type && query.instance_size >= sizeof(struct kr_file_backend_layout);
}

SecretBackend *kr_file_backend_with_collection(GType type, GObject *collection) {
    if (!kr_file_backend_layout_fits(type)) return NULL;
    GObject *backend = g_object_new(type, "flags", SECRET_SERVICE_NONE, NULL);
    struct kr_file_backend_layout *layout = (struct kr_file_backend_layout *)backend;
    if (layout->collection != NULL) {
        g_object_unref(backend);
        return NULL;
    }
    layout->collection = g_object_ref(collection);
    return SECRET_BACKEND(backend);
}

SecretBackend *kr_file_backend_open_portal(GType type, GCancellable *cancellable, gboolean *handled, GError **error) {
    *handled = FALSE;
    GType (*collection_type)(void) = (GType (*)(void))dlsym(RTLD_DEFAULT, "secret_file_collection_get_type");
    // Checked before the portal is asked: a libsecret laid out otherwise runs its own init instead.
    if (!collection_type || !kr_file_backend_layout_fits(type)) return NULL;
    *handled = TRUE;
    const gchar *test = g_getenv("SECRET_FILE_TEST_PATH");
    gchar *path = test && *test ? g_strdup(test) : g_build_filename(g_get_user_data_dir(), "keyrings", "default.keyring", NULL);
    GFile *file = g_file_new_for_path(path);
    g_free(path);
    GFile *directory = g_file_get_parent(file);
    GError *made = NULL;
    if (directory && !g_file_make_directory_with_parents(directory, cancellable, &made) && !g_error_matches(made, G_IO_ERROR, G_IO_ERROR_EXISTS)) {
        g_propagate_error(error, made);
        g_object_unref(directory);
        g_object_unref(file);
        return NULL;
    }
    g_clear_error(&made);
    if (directory) g_object_unref(directory);
    SecretValue *password = kr_portal_retrieve_secret(cancellable, error);
    if (!password) {
        g_object_unref(file);
        return NULL;
    }
    KRPending pending = { NULL };
    g_async_initable_new_async(collection_type(), G_PRIORITY_DEFAULT, cancellable, kr_pending_done, &pending, "file", file, "password",
                               password, NULL);
    secret_value_unref(password);
    g_object_unref(file);
    kr_pending_wait(g_main_context_get_thread_default(), &pending);
    GObject *source = g_async_result_get_source_object(pending.result);
    GObject *collection = g_async_initable_new_finish(G_ASYNC_INITABLE(source), pending.result, error);
    g_object_unref(source);
    g_object_unref(pending.result);
    if (!collection) return NULL;
    SecretBackend *backend = kr_file_backend_with_collection(type, collection);
    g_object_unref(collection);
    if (!backend) g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "this libsecret's file backend is laid out differently");
    return backend;
}

SecretBackend *kr_file_backend_open(GCancellable *cancellable, GError **error) {
    GType type = kr_file_backend_type();
    if (type == 0) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "this libsecret has no file backend");
        return NULL;
    }
    const gchar *test = g_getenv("SECRET_FILE_TEST_PASSWORD");
    if ((!test || !*test) && (access("/.flatpak-info", F_OK) == 0 || g_getenv("SNAP_NAME") != NULL)) {
        GMainContext *context = g_main_context_new();
        g_main_context_push_thread_default(context);
        gboolean handled;
        SecretBackend *backend = kr_file_backend_open_portal(type, cancellable, &handled, error);
        g_main_context_pop_thread_default(context);
        g_main_context_unref(context);
        if (handled) return backend;
    }
    GMainContext *context = g_main_context_new();
    g_main_context_push_thread_default(context);
    KRPending pending = { NULL };
    g_async_initable_new_async(type, G_PRIORITY_DEFAULT, cancellable, kr_pending_done, &pending, "flags", SECRET_SERVICE_NONE, NULL);
    kr_pending_wait(context, &pending);
    GObject *source = g_async_result_get_source_object(pending.result);
    GObject *backend = g_async_initable_new_finish(G_ASYNC_INITABLE(source), pending.result, error);
    g_object_unref(source);
    g_object_unref(pending.result);
    g_main_context_pop_thread_default(context);
    g_main_context_unref(context);
    return backend ? SECRET_BACKEND(backend) : NULL;
}

GList *kr_file_backend_search(SecretBackend *backend, GHashTable *attributes, GCancellable *cancellable, GError **error) {
    GMainContext *context = g_main_context_new();
    g_main_context_push_thread_default(context);
    KRPending pending = { NULL };
    SECRET_BACKEND_GET_IFACE(backend)->search(backend, NULL, attributes, SECRET_SEARCH_ALL, cancellable, kr_pending_done, &pending);
    kr_pending_wait(context, &pending);
    GList *items = SECRET_BACKEND_GET_IFACE(backend)->search_finish(backend, pending.result, error);
    g_object_unref(pending.result);
    g_main_context_pop_thread_default(context);
    g_main_context_unref(context);
    return items;
}

GObject *kr_file_backend_collection(SecretBackend *backend) {
    GType (*get_type)(void) = (GType (*)(void))dlsym(RTLD_DEFAULT, "secret_file_collection_get_type");
    if (!get_type || !dlsym(RTLD_DEFAULT, "secret_file_collection_replace") || !dlsym(RTLD_DEFAULT, "secret_file_collection_clear")
        || !dlsym(RTLD_DEFAULT, "secret_file_collection_write") || !dlsym(RTLD_DEFAULT, "secret_file_collection_write_finish"))
        return NULL;
    struct kr_file_backend_layout { GObject parent; GObject *collection; };
    GType backend_type = g_type_from_name("SecretFileBackend");
    if (backend_type == 0 || G_OBJECT_TYPE(backend) != backend_type) return NULL;
    GTypeQuery query;
    g_type_query(backend_type, &query);
    if (query.type != backend_type || query.instance_size < sizeof(struct kr_file_backend_layout)) return NULL;
    GObject *collection = ((struct kr_file_backend_layout *)backend)->collection;
    return collection && G_TYPE_CHECK_INSTANCE_TYPE(collection, get_type()) ? collection : NULL;
}

gboolean kr_file_collection_replace(GObject *collection, GHashTable *attributes, const char *label, SecretValue *value,
                                    GError **error) {
    typedef gboolean (*Replace)(GObject *, GHashTable *, const gchar *, SecretValue *, GError **);
    Replace replace = (Replace)dlsym(RTLD_DEFAULT, "secret_file_collection_replace");
    return replace(collection, attributes, label, value, error);
}

gboolean kr_file_collection_clear(GObject *collection, GHashTable *attributes, GError **error) {
    gboolean (*clear)(GObject *, GHashTable *, GError **) =
        (gboolean (*)(GObject *, GHashTable *, GError **))dlsym(RTLD_DEFAULT, "secret_file_collection_clear");
    return clear(collection, attributes, error);
}

gboolean kr_file_collection_write(GObject *collection, GCancellable *cancellable, GError **error) {
    void (*start)(GObject *, GCancellable *, GAsyncReadyCallback, gpointer) =
        (void (*)(GObject *, GCancellable *, GAsyncReadyCallback, gpointer))dlsym(RTLD_DEFAULT, "secret_file_collection_write");
    gboolean (*finish)(GObject *, GAsyncResult *, GError **) =
        (gboolean (*)(GObject *, GAsyncResult *, GError **))dlsym(RTLD_DEFAULT, "secret_file_collection_write_finish");
    GMainContext *context = g_main_context_new();
    g_main_context_push_thread_default(context);
    KRPending pending = { NULL };
    start(collection, cancellable, kr_pending_done, &pending);
    kr_pending_wait(context, &pending);
    gboolean ok = finish(collection, pending.result, error);
    g_object_unref(pending.result);
    g_main_context_pop_thread_default(context);
    g_main_context_unref(context);
    return ok;
}

void kr_object_list_free(GList *list) { g_list_free_full(list, g_object_unref); }

/// SecretFileCollection's fields in libsecret 0.20 (0.21 adds a guint64 after them).
struct kr_file_collection_layout {
    GObject parent;
    GFile *file;
    gchar *etag;
    SecretValue *password;
    GBytes *salt;
    guint32 iteration_count;
    GDateTime *modified;
    guint64 usage_count;
    GBytes *key;
    GVariant *items;
};

gboolean kr_file_collection_reload(GObject *collection, const guint8 *data, gsize length, const char *etag,
                                   guint64 modified_seconds) {
    GType (*get_type)(void) = (GType (*)(void))dlsym(RTLD_DEFAULT, "secret_file_collection_get_type");
    if (!get_type || !etag || length < 18 || !G_TYPE_CHECK_INSTANCE_TYPE(collection, get_type())) return FALSE;
    GTypeQuery query;
    g_type_query(get_type(), &query);
    gsize size = sizeof(struct kr_file_collection_layout);
    if (query.instance_size != size && query.instance_size != size + sizeof(guint64)) return FALSE;
    struct kr_file_collection_layout *fields = (struct kr_file_collection_layout *)collection;
    if (!fields->file || !G_IS_FILE(fields->file) || !fields->salt || !fields->key || !fields->items || !fields->modified
        || g_bytes_get_size(fields->key) != 16 || !g_variant_is_of_type(fields->items, G_VARIANT_TYPE("a(a{say}ay)")))
        return FALSE;
    GBytes *bytes = g_bytes_new(data + 18, length - 18);
    GVariant *variant = g_variant_new_from_bytes(G_VARIANT_TYPE("(uayutua(a{say}ay))"), bytes, FALSE);
    g_bytes_unref(bytes);
    g_variant_ref_sink(variant);
    guint32 iterations = 0, usage = 0;
    guint64 modified = 0;
    g_variant_get_child(variant, 2, "u", &iterations);
    g_variant_get_child(variant, 3, "t", &modified);
    g_variant_get_child(variant, 4, "u", &usage);
    GVariant *salt = g_variant_get_child_value(variant, 1);
    gsize salt_size = 0;
    const guint8 *salt_data = g_variant_get_fixed_array(salt, &salt_size, 1);
    gsize held_size = 0;
    const guint8 *held = g_bytes_get_data(fields->salt, &held_size);
    gboolean same_key = GUINT32_FROM_LE(iterations) == fields->iteration_count && salt_size == held_size
                        && (salt_size == 0 || memcmp(salt_data, held, salt_size) == 0);
    g_variant_unref(salt);
    if (same_key) {
        g_variant_unref(fields->items);
        fields->items = g_variant_get_child_value(variant, 5);
        g_date_time_unref(fields->modified);
        fields->modified = g_date_time_new_from_unix_utc((gint64)GUINT64_FROM_LE(modified));  // kr_keyring_file_check bounds it
        fields->usage_count = GUINT32_FROM_LE(usage);
        g_free(fields->etag);
        fields->etag = g_strdup(etag);
        // 0.21's `guint64 file_last_modified`, right after `items` (the instance size says it is there).
        if (query.instance_size == size + sizeof(guint64)) *(guint64 *)((guint8 *)collection + size) = modified_seconds;
    }
    g_variant_unref(variant);
    return same_key;
}

gchar *kr_file_etag(const char *path) {
    GFile *file = g_file_new_for_path(path);
    GFileInfo *info = g_file_query_info(file, G_FILE_ATTRIBUTE_ETAG_VALUE, G_FILE_QUERY_INFO_NONE, NULL, NULL);
    g_object_unref(file);
    if (!info) return NULL;
    gchar *etag = g_strdup(g_file_info_get_etag(info));
    g_object_unref(info);
    return etag;
}

gboolean kr_file_collection_holds(GObject *collection, const guint8 *data, gsize length) {
    GList *(*search)(GObject *, GHashTable *) = (GList * (*)(GObject *, GHashTable *))dlsym(RTLD_DEFAULT, "secret_file_collection_search");
    if (!search || length < 18) return FALSE;
    GBytes *bytes = g_bytes_new(data + 18, length - 18);
    GVariant *variant = g_variant_new_from_bytes(G_VARIANT_TYPE("(uayutua(a{say}ay))"), bytes, FALSE);
    g_bytes_unref(bytes);
    g_variant_ref_sink(variant);
    GVariant *items = g_variant_get_child_value(variant, 5);
    GHashTable *every = kr_string_table_new();
    GList *held = search(collection, every);  // an empty table matches every item
    g_hash_table_unref(every);
    gsize count = g_variant_n_children(items), index = 0;
    gboolean same = TRUE;
    for (GList *node = held; node && same; node = node->next, index++) {
        if (index >= count) { same = FALSE; break; }
        GVariant *item = g_variant_get_child_value(items, index);
        // Byte for byte (both in normal form, the file checked): g_variant_equal prints untrusted values as text.
        gsize size = g_variant_get_size(item);
        same = size == g_variant_get_size(node->data) && memcmp(g_variant_get_data(item), g_variant_get_data(node->data), size) == 0;
        g_variant_unref(item);
    }
    if (index != count) same = FALSE;
    g_list_free_full(held, (GDestroyNotify)g_variant_unref);
    g_variant_unref(items);
    g_variant_unref(variant);
    return same;
}

SecretRetrievable *kr_list_retrievable(GList *node) { return SECRET_RETRIEVABLE(node->data); }

KRFileCheck kr_keyring_file_check(const guint8 *data, gsize length) {
    static const char header[16] = "GnomeKeyring\n\r\0\n";
    if (length < 16 || memcmp(data, header, 16) != 0) return KR_FILE_BAD_HEADER;
    if (length < 18 || data[16] != 1 || data[17] != 0) return KR_FILE_BAD_VERSION;
    GBytes *bytes = g_bytes_new(data + 18, length - 18);
    GVariant *variant = g_variant_new_from_bytes(G_VARIANT_TYPE("(uayutua(a{say}ay))"), bytes, FALSE);
    g_bytes_unref(bytes);
    g_variant_ref_sink(variant);
    KRFileCheck result = KR_FILE_OK;
    if (!g_variant_is_normal_form(variant)) {
        result = KR_FILE_BAD_STRUCTURE;
    } else {
        guint32 salt_size = 0;
        GVariant *salt = NULL;
        g_variant_get_child(variant, 0, "u", &salt_size);
        salt = g_variant_get_child_value(variant, 1);
        if (GUINT32_FROM_LE(salt_size) != g_variant_n_children(salt) || g_variant_n_children(salt) == 0) result = KR_FILE_BAD_STRUCTURE;
        g_variant_unref(salt);
        // The file's modification time: past GDateTime's range (year 9999) libsecret's next write
        // logs a GLib critical (g_date_time_unref on NULL). Not covered by any MAC.
        guint64 modified = 0;
        g_variant_get_child(variant, 3, "t", &modified);
        if (GUINT64_FROM_LE(modified) > G_GUINT64_CONSTANT(253402300799)) result = KR_FILE_BAD_STRUCTURE;
    }
    g_variant_unref(variant);
    return result;
}
