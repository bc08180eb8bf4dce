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

/* GLib 2.90 marks GIO's flag enums G_GNUC_FLAG_ENUM, and Swift then imports them as option sets
 * without the C constants' names; earlier GLibs give plain enums. These spell the flags Swift
 * passes once, for every GLib (2.74 through 2.90). */
static inline GDBusCallFlags kr_call_flags_none(void) { return G_DBUS_CALL_FLAGS_NONE; }
static inline GDBusCallFlags kr_call_flags_no_auto_start(void) { return G_DBUS_CALL_FLAGS_NO_AUTO_START; }
static inline GDBusSignalFlags kr_signal_flags_none(void) { return G_DBUS_SIGNAL_FLAGS_NONE; }
static inline GLogLevelFlags kr_log_level_critical(void) { return G_LOG_LEVEL_CRITICAL; }

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

/// Item properties from a `Properties.GetAll` reply, `(a{sv})`; a missing label reads as empty.
typedef struct {
    GHashTable *attributes;  /* owned string table; free with g_hash_table_unref */
    gchar *label;            /* owned; free with g_free */
    guint64 created;
    guint64 modified;
    gboolean locked;
} KRItemProperties;

/// FALSE (with nothing to free) when the reply has another shape, or lacks the attributes, either date
/// or the lock state, or has them of another type: a malformed item is never read as one with no dates.
static inline gboolean kr_item_properties(GVariant *reply, KRItemProperties *properties) {
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

/// `("org.freedesktop.Secret.Item")` for Properties.GetAll.
static inline GVariant *kr_item_interface_tuple(void) {
    return g_variant_new("(s)", "org.freedesktop.Secret.Item");
}

// MARK: libsecret's file backend (sandboxed apps)
//
// The file backend is reached through libsecret's SecretBackend interface, on a fresh instance per
// operation: libsecret's own per-process instance loads the keyring file once and would neither see
// other processes' changes nor keep theirs when it writes. The sync wrappers run the async calls on
// a private main context, as libsecret's own *_sync calls do.
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <gio/gunixfdlist.h>
#include <glib-unix.h>
// secret.h leaves the backend interface out; its own guard wants this define.
#define __SECRET_INSIDE_HEADER__
#include <libsecret/secret-backend.h>
#undef __SECRET_INSIDE_HEADER__

/// The file backend's GType, or 0 when this libsecret was built without it. Looked up at run time:
/// `secret_file_backend_get_type` is exported by libsecret but not declared in its headers.
static inline GType kr_file_backend_type(void) {
    GType (*get_type)(void) = (GType (*)(void))dlsym(RTLD_DEFAULT, "secret_file_backend_get_type");
    return get_type ? get_type() : 0;
}

/// libsecret's own check that the Secret portal answers with the version its file backend speaks;
/// -1 when this libsecret lacks the check.
static inline int kr_secret_portal_usable(void) {
    gboolean (*check)(void) = (gboolean (*)(void))dlsym(RTLD_DEFAULT, "_secret_file_backend_check_portal_version");
    return check ? (check() ? 1 : 0) : -1;
}

typedef struct { GAsyncResult *result; } KRPending;

static void kr_pending_done(GObject *source, GAsyncResult *result, gpointer data) {
    (void)source;
    ((KRPending *)data)->result = g_object_ref(result);
}

static inline void kr_pending_wait(GMainContext *context, KRPending *pending) {
    while (!pending->result) g_main_context_iteration(context, TRUE);
}

// The Secret portal's key, asked for here and not by libsecret 0.20: its file backend subscribes to
// the request's Response only once RetrieveSecret has returned, so a portal that answers at once
// (xdg-desktop-portal 1.16 with gnome-keyring: about one open in ten here) sends it first and the open
// waits forever; cancelling that wait then deadlocks in its cancel handler. libsecret 0.21.4 fixed
// both (its issue #58): subscribe on the request path that handle_token predicts, then call.
typedef struct { gboolean done; guint32 response; } KRPortalResponse;

static void kr_portal_on_response(GDBusConnection *connection, const gchar *sender, const gchar *path, const gchar *interface,
                                  const gchar *signal, GVariant *parameters, gpointer data) {
    (void)connection, (void)sender, (void)path, (void)interface, (void)signal;
    KRPortalResponse *response = data;
    if (response->done || !g_variant_is_of_type(parameters, G_VARIANT_TYPE("(ua{sv})"))) return;
    g_variant_get(parameters, "(u@a{sv})", &response->response, NULL);
    response->done = TRUE;
}

static gboolean kr_portal_on_cancel(GCancellable *cancellable, gpointer data) {
    (void)cancellable, (void)data;
    return G_SOURCE_CONTINUE;  // it only wakes the loop below, which checks the cancellable
}

/// The 64-byte secret the Secret portal keeps for this app, as the file backend's password; runs on
/// the calling thread's default main context. NULL with `error` set on failure or cancellation.
static inline SecretValue *kr_portal_retrieve_secret(GCancellable *cancellable, GError **error) {
    GDBusConnection *connection = g_bus_get_sync(G_BUS_TYPE_SESSION, cancellable, error);
    if (!connection) return NULL;
    gchar *token = g_strdup_printf("keyring%u", g_random_int());
    gchar *sender = g_strdup(g_dbus_connection_get_unique_name(connection) + 1);
    g_strdelimit(sender, ".", '_');
    gchar *path = g_strconcat("/org/freedesktop/portal/desktop/request/", sender, "/", token, NULL);
    g_free(sender);
    KRPortalResponse response = { FALSE, 2 };
    guint subscription = g_dbus_connection_signal_subscribe(connection, "org.freedesktop.portal.Desktop", "org.freedesktop.portal.Request",
                                                            "Response", path, NULL, G_DBUS_SIGNAL_FLAGS_NO_MATCH_RULE,
                                                            kr_portal_on_response, &response, NULL);
    SecretValue *password = NULL;
    gint fds[2] = { -1, -1 };
    GVariant *reply = NULL;
    if (g_unix_open_pipe(fds, FD_CLOEXEC, error)) {
        GUnixFDList *list = g_unix_fd_list_new_from_array(&fds[1], 1);  // takes the write end
        GVariantBuilder options;
        g_variant_builder_init(&options, G_VARIANT_TYPE_VARDICT);
        g_variant_builder_add(&options, "{sv}", "handle_token", g_variant_new_string(token));
        reply = g_dbus_connection_call_with_unix_fd_list_sync(
            connection, "org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop", "org.freedesktop.portal.Secret",
            "RetrieveSecret", g_variant_new("(h@a{sv})", 0, g_variant_builder_end(&options)), G_VARIANT_TYPE("(o)"),
            G_DBUS_CALL_FLAGS_NONE, -1, list, NULL, cancellable, error);
        g_object_unref(list);
    }
    if (reply) {
        const gchar *handle = NULL;
        g_variant_get(reply, "(&o)", &handle);
        if (g_strcmp0(handle, path) != 0) {
            // A portal that ignores handle_token: listen on its path (the race is back, but only there).
            g_dbus_connection_signal_unsubscribe(connection, subscription);
            g_free(path);
            path = g_strdup(handle);
            subscription = g_dbus_connection_signal_subscribe(connection, "org.freedesktop.portal.Desktop", "org.freedesktop.portal.Request",
                                                              "Response", path, NULL, G_DBUS_SIGNAL_FLAGS_NO_MATCH_RULE,
                                                              kr_portal_on_response, &response, NULL);
        }
        g_variant_unref(reply);
        GMainContext *context = g_main_context_ref_thread_default();
        GSource *wake = cancellable ? g_cancellable_source_new(cancellable) : NULL;
        if (wake) {
            g_source_set_callback(wake, (GSourceFunc)(void (*)(void))kr_portal_on_cancel, NULL, NULL);
            g_source_attach(wake, context);
        }
        while (!response.done && !g_cancellable_is_cancelled(cancellable)) g_main_context_iteration(context, TRUE);
        if (wake) {
            g_source_destroy(wake);
            g_source_unref(wake);
        }
        g_main_context_unref(context);
        if (!response.done) {
            // Cancelled: close the request, without waiting for the portal.
            g_dbus_connection_call(connection, "org.freedesktop.portal.Desktop", path, "org.freedesktop.portal.Request", "Close", NULL,
                                   NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, NULL, NULL, NULL);
            g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "cancelled while waiting for the Secret portal");
        } else if (response.response != 0) {
            g_set_error_literal(error, G_IO_ERROR, response.response == 1 ? G_IO_ERROR_CANCELLED : G_IO_ERROR_FAILED,
                                response.response == 1 ? "the Secret portal's request was cancelled" : "the Secret portal's request failed");
        } else {
            // The backend wrote the secret before it answered. Read its 64 bytes as libsecret does, without
            // waiting for the end of the pipe (another holder of the write end would keep it open), and
            // never past the call's deadline: the read end is non-blocking, polled with the cancellable.
            guchar *buffer = g_malloc0(65);
            gsize count = 0;
            gboolean stopped = FALSE;
            (void)g_unix_set_fd_nonblocking(fds[0], TRUE, NULL);
            GPollFD polls[2] = { { fds[0], G_IO_IN | G_IO_HUP | G_IO_ERR, 0 }, { -1, 0, 0 } };
            gint npolls = cancellable && g_cancellable_make_pollfd(cancellable, &polls[1]) ? 2 : 1;
            while (count < 64) {
                gssize got = read(fds[0], buffer + count, 64 - count);
                if (got > 0) {
                    count += (gsize)got;
                    continue;
                }
                if (got == 0) break;  // the end of the pipe
                if (errno == EINTR) continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK) break;
                if (g_cancellable_is_cancelled(cancellable)) {
                    stopped = TRUE;
                    break;
                }
                polls[0].revents = 0;
                if (npolls == 2) polls[1].revents = 0;
                (void)g_poll(polls, npolls, -1);
            }
            if (npolls == 2) g_cancellable_release_fd(cancellable);
            if (stopped)
                g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "cancelled while reading the Secret portal's secret");
            else if (count == 64)
                password = secret_value_new((const gchar *)buffer, 64, "text/plain");
            else
                // Not SECRET_ERROR: that reads as a damaged keyring file, and the file is fine.
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "the Secret portal returned %zu bytes of its secret, not 64", (size_t)count);
            memset(buffer, 0, 65);
            g_free(buffer);
        }
    }
    if (fds[0] >= 0) close(fds[0]);
    g_dbus_connection_signal_unsubscribe(connection, subscription);
    g_free(path);
    g_free(token);
    g_object_unref(connection);
    return password;
}

/// A file backend on `collection` (taking a reference), made without libsecret's own init; NULL when
/// this libsecret's SecretFileBackend is laid out otherwise than `kr_file_backend_collection` checks.
struct kr_file_backend_layout { GObject parent; GObject *collection; };

/// Whether `type` is libsecret's SecretFileBackend with room for the layout above.
static inline gboolean kr_file_backend_layout_fits(GType type) {
    GTypeQuery query;
    g_type_query(type, &query);
    return g_type_from_name("SecretFileBackend") == type && query.instance_size >= sizeof(struct kr_file_backend_layout);
}

static inline SecretBackend *kr_file_backend_with_collection(GType type, GObject *collection) {
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

/// In a sandbox without SECRET_FILE_TEST_PASSWORD, the backend libsecret's init would make, keyed by
/// `kr_portal_retrieve_secret`: the same file (created with its directory), the same key. Sets
/// `*handled` to FALSE when this libsecret cannot be driven so (its own init then runs).
static inline SecretBackend *kr_file_backend_open_portal(GType type, GCancellable *cancellable, gboolean *handled, GError **error) {
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

/// A fresh file backend: reads the keyring file and derives its key (from SECRET_FILE_TEST_PASSWORD,
/// else the Secret portal). NULL with `error` set on failure.
static inline SecretBackend *kr_file_backend_open(GCancellable *cancellable, GError **error) {
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

/// Every item whose attributes include `attributes`, decrypted (a GList of SecretRetrievable; free
/// with kr_object_list_free). An empty table matches every item, so each one's MAC is checked.
static inline GList *kr_file_backend_search(SecretBackend *backend, GHashTable *attributes, GCancellable *cancellable, GError **error) {
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

// One change, one write: the backend's own store and clear each write the whole file, so a change
// that touches several items (a clear that must keep the items that merely include the attributes,
// an attribute change) edits the backend's collection in memory and writes it once.
// secret_file_collection_* are exported by libsecret 0.20+ but not declared in its headers.

/// The collection a file backend read (SecretFileBackend's first field after its GObject, in 0.20
/// and 0.21), checked to be a SecretFileCollection; NULL when this libsecret is laid out otherwise.
/// The field is read only from an instance of the type named SecretFileBackend whose instance size
/// holds the layout, so a differently sized instance is never read past its end; the type check
/// of the field then tells a reordered layout (a field that is not the collection) from this one.
static inline GObject *kr_file_backend_collection(SecretBackend *backend) {
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

/// Replaces the item whose attributes are exactly `attributes` (or adds one), in memory only.
static inline gboolean kr_file_collection_replace(GObject *collection, GHashTable *attributes, const char *label, SecretValue *value,
                                                  GError **error) {
    typedef gboolean (*Replace)(GObject *, GHashTable *, const gchar *, SecretValue *, GError **);
    Replace replace = (Replace)dlsym(RTLD_DEFAULT, "secret_file_collection_replace");
    return replace(collection, attributes, label, value, error);
}

/// Removes every item whose attributes include `attributes`, in memory only; FALSE when none matched.
static inline gboolean kr_file_collection_clear(GObject *collection, GHashTable *attributes, GError **error) {
    gboolean (*clear)(GObject *, GHashTable *, GError **) =
        (gboolean (*)(GObject *, GHashTable *, GError **))dlsym(RTLD_DEFAULT, "secret_file_collection_clear");
    return clear(collection, attributes, error);
}

/// Writes the collection to its file once. GLib checks the etag libsecret read (G_IO_ERROR_WRONG_ETAG
/// when another program wrote the file since), writes a temporary file beside it, hard-links the old
/// file to `<file>~` and renames the temporary one over; only when it cannot make the temporary file
/// does it rewrite the file in place (see FileKeyring.writing).
static inline gboolean kr_file_collection_write(GObject *collection, GCancellable *cancellable, GError **error) {
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

static inline void kr_object_list_free(GList *list) { g_list_free_full(list, g_object_unref); }

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

/// Loads the keyring file `data` (checked by kr_keyring_file_check), whose etag GLib gives as `etag`,
/// into `collection` in place, keeping the key it derived: only when the file's salt and iteration
/// count are the collection's, so the key is the one libsecret would derive again. FALSE, with
/// nothing changed, otherwise or when this libsecret's collection is laid out otherwise (its type,
/// instance size and field types checked first).
/// `modified_seconds` is the file's mtime in seconds: libsecret 0.21 compares it before each call and
/// would otherwise read the file (and derive the key) again itself.
static inline gboolean kr_file_collection_reload(GObject *collection, const guint8 *data, gsize length, const char *etag,
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

/// GLib's etag for the file at `path` (what libsecret checks before writing over it); free with g_free.
static inline gchar *kr_file_etag(const char *path) {
    GFile *file = g_file_new_for_path(path);
    GFileInfo *info = g_file_query_info(file, G_FILE_ATTRIBUTE_ETAG_VALUE, G_FILE_QUERY_INFO_NONE, NULL, NULL);
    g_object_unref(file);
    if (!info) return NULL;
    gchar *etag = g_strdup(g_file_info_get_etag(info));
    g_object_unref(info);
    return etag;
}


/// Whether `collection` holds exactly the items of the keyring file `data` (checked first with
/// kr_keyring_file_check), in the same order: each encrypted item carries a random IV and a MAC, so
/// equal items mean libsecret's view is that file. FALSE when this libsecret lacks the search.
static inline gboolean kr_file_collection_holds(GObject *collection, const guint8 *data, gsize length) {
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

static inline SecretRetrievable *kr_list_retrievable(GList *node) { return SECRET_RETRIEVABLE(node->data); }

/// What kr_keyring_file_check found.
typedef enum { KR_FILE_OK = 0, KR_FILE_BAD_HEADER = 1, KR_FILE_BAD_VERSION = 2, KR_FILE_BAD_STRUCTURE = 3 } KRFileCheck;

/// Checks a keyring file's bytes the way libsecret 0.20 reads them, before libsecret does: it
/// aborts the process (an assertion on the salt size) on some truncated files.
static inline KRFileCheck kr_keyring_file_check(const guint8 *data, gsize length) {
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

// Unlocking (Sources/Keyring/Internals/Unlock.swift).

/// `(ao)` with one object path, for Service.Unlock.
static inline GVariant *kr_variant_objpath_array_tuple(const char *path) {
    const gchar *paths[] = { path, NULL };
    return g_variant_new("(^ao)", paths);
}

/// The object path out of an `(o)` reply (ReadAlias); NULL for another shape. Free with g_free.
static inline gchar *kr_variant_tuple_objpath(GVariant *reply) {
    const gchar *path = NULL;
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(o)"))) return NULL;
    g_variant_get(reply, "(&o)", &path);
    return g_strdup(path);
}

/// The prompt path out of an Unlock reply, `(aoo)`; NULL for another shape. Free with g_free.
static inline gchar *kr_unlock_reply_prompt(GVariant *reply) {
    const gchar *prompt = NULL;
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(aoo)"))) return NULL;
    g_variant_get(reply, "(@ao&o)", NULL, &prompt);
    return g_strdup(prompt);
}

/// Whether a Prompt.Completed signal, `(bv)`, says dismissed; a malformed one counts as dismissed.
static inline gboolean kr_prompt_completed_dismissed(GVariant *parameters) {
    gboolean dismissed = TRUE;
    if (parameters && g_variant_is_of_type(parameters, G_VARIANT_TYPE("(bv)"))) g_variant_get(parameters, "(b@v)", &dismissed, NULL);
    return dismissed;
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

// Collection lock states, read straight from the service (KeePassXC hides a locked database's items).

/// `(ss)` tuple for Properties.Get (interface, property).
static inline GVariant *kr_variant_two_strings_tuple(const char *first, const char *second) {
    return g_variant_new("(ss)", first, second);
}

/// `(ssv)` tuple for Properties.Set of a string property (interface, property, value).
static inline GVariant *kr_variant_set_string_tuple(const char *interface, const char *property, const char *value) {
    return g_variant_new("(ssv)", interface, property, g_variant_new_string(value));
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

/// The string in a `(v)` Properties.Get reply, newly allocated (g_free it); NULL for another shape.
static inline gchar *_Nullable kr_variant_property_string(GVariant *_Nullable reply) {
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(v)"))) return NULL;
    GVariant *value = NULL;
    g_variant_get(reply, "(v)", &value);
    gchar *result = g_variant_is_of_type(value, G_VARIANT_TYPE_STRING) ? g_variant_dup_string(value, NULL) : NULL;
    g_variant_unref(value);
    return result;
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

/// An `a{ss}` value (floating) from a string table.
static inline GVariant *kr_variant_attributes(GHashTable *table) {
    GVariantBuilder builder;
    g_variant_builder_init(&builder, G_VARIANT_TYPE("a{ss}"));
    GHashTableIter iter;
    gpointer key, value;
    g_hash_table_iter_init(&iter, table);
    while (g_hash_table_iter_next(&iter, &key, &value)) g_variant_builder_add(&builder, "{ss}", key, value);
    return g_variant_builder_end(&builder);
}

/// `(a{ss})` tuple for SearchItems, from a string table.
static inline GVariant *kr_variant_attributes_tuple(GHashTable *table) {
    return g_variant_new("(@a{ss})", kr_variant_attributes(table));
}

/// The two path lists of a SearchItems reply, `(aoao)`, each NULL-terminated (free with
/// g_strfreev); both NULL when the reply has another shape.
static inline void kr_search_reply(GVariant *reply, gchar ***unlocked, gchar ***locked) {
    *unlocked = NULL;
    *locked = NULL;
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(aoao)"))) return;
    g_variant_get(reply, "(^ao^ao)", unlocked, locked);
}


// Pipelined D-Bus calls: several calls in flight at once, their replies awaited together, so a
// read costs one round trip per dependent step rather than one per call.

/// One asynchronous call's outcome: the reply or the error, once `done`.
typedef struct {
    GVariant *reply;
    GError *error;
    gboolean done;
} KRCall;

static void kr_call_finished(GObject *source, GAsyncResult *result, gpointer data) {
    KRCall *call = data;
    call->reply = g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &call->error);
    call->done = TRUE;
}

/// Starts a call (never auto-starting the service) whose reply is dispatched on the thread-default
/// main context; `parameters` is consumed if floating. A reply not of `reply_type` fails the call
/// with G_IO_ERROR_INVALID_ARGUMENT (read by BusCall.keyringError, as for every other call).
static inline void kr_call_start(GDBusConnection *connection, const char *destination, const char *path, const char *interface,
                                 const char *method, GVariant *parameters, const char *reply_type, gint timeout_ms,
                                 GCancellable *cancellable, KRCall *call) {
    call->reply = NULL;
    call->error = NULL;
    call->done = FALSE;
    GVariantType *type = g_variant_type_new(reply_type);
    g_dbus_connection_call(connection, destination, path, interface, method, parameters, type, G_DBUS_CALL_FLAGS_NO_AUTO_START,
                           timeout_ms, cancellable, kr_call_finished, call);
    g_variant_type_free(type);
}

/// Iterates `context` until every call in `calls` is done (each ends by reply, error, timeout or cancellation).
static inline void kr_calls_wait(GMainContext *context, KRCall *calls, int count) {
    for (;;) {
        int pending = 0;
        for (int i = 0; i < count; i++) pending += !calls[i].done;
        if (!pending) return;
        g_main_context_iteration(context, TRUE);
    }
}

/// `(aoo)` tuple for GetSecrets: the item paths and the session.
static inline GVariant *kr_variant_paths_session_tuple(const gchar *const *paths, const char *session) {
    return g_variant_new("(^aoo)", paths, session);
}

/// `(aoo)` tuple for GetSecrets of one item: its path and the session.
static inline GVariant *kr_variant_path_session_tuple(const char *path, const char *session) {
    const gchar *paths[] = {path, NULL};
    return g_variant_new("(^aoo)", paths, session);
}

/// The encoded secret `(oayays)` for `path` in a GetSecrets reply, `(a{o(oayays)})`, as a new
/// reference; NULL when the reply has no entry for it or another shape.
static inline GVariant *kr_secrets_reply_entry(GVariant *reply, const char *path) {
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("(a{o(oayays)})"))) return NULL;
    GVariant *map = g_variant_get_child_value(reply, 0);
    GVariant *entry = g_variant_lookup_value(map, path, G_VARIANT_TYPE("(oayays)"));
    g_variant_unref(map);
    return entry;
}

/// The secret bytes for `path` in a GetSecrets reply, `(a{o(oayays)})`, as a new `ay` variant
/// (g_variant_unref); NULL when the reply has no entry for it, another shape, or encryption parameters.
static inline GVariant *kr_secrets_reply_value(GVariant *reply, const char *path) {
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


/// A one-element tuple holding `value` (consumed if floating), for calls such as Item.SetSecret.
static inline GVariant *kr_variant_tuple_of(GVariant *value) {
    return g_variant_new_tuple(&value, 1);
}


// Creating items with raw calls (ServiceCall.createItem).

/// `(a{sv}(oayays)b)` for Collection.CreateItem: label and attributes, the encoded secret
/// (consumed if floating), and never libsecret's replace flag.
static inline GVariant *kr_create_item_tuple(const char *label, GHashTable *attributes, GVariant *secret) {
    GVariantBuilder properties;
    g_variant_builder_init(&properties, G_VARIANT_TYPE("a{sv}"));
    g_variant_builder_add(&properties, "{sv}", "org.freedesktop.Secret.Item.Label", g_variant_new_string(label));
    g_variant_builder_add(&properties, "{sv}", "org.freedesktop.Secret.Item.Attributes", kr_variant_attributes(attributes));
    return g_variant_new("(a{sv}@(oayays)b)", &properties, secret, FALSE);
}

/// The item and prompt paths of a CreateItem reply, `(oo)`; both NULL for another shape. Free with g_free.
static inline void kr_create_item_reply(GVariant *reply, gchar **item, gchar **prompt) {
    *item = NULL;
    *prompt = NULL;
    if (reply && g_variant_is_of_type(reply, G_VARIANT_TYPE("(oo)"))) g_variant_get(reply, "(oo)", item, prompt);
}

static inline const GVariantType *kr_variant_type_objpath(void) { return G_VARIANT_TYPE_OBJECT_PATH; }

/// The path in a prompt's result, an `o` variant; NULL for another shape. Free with g_free.
static inline gchar *kr_variant_objpath(GVariant *value) {
    return value && g_variant_is_of_type(value, G_VARIANT_TYPE_OBJECT_PATH) ? g_variant_dup_string(value, NULL) : NULL;
}

// Checking a KWallet session key against a plain session (Providers/SessionCheck.swift).

/// `(o)` tuple, e.g. the session for Item.GetSecret.
static inline GVariant *kr_variant_objpath_tuple(const char *path) {
    return g_variant_new("(o)", path);
}

/// The value bytes of an Item.GetSecret reply, `((oayays))`, as a new `ay` variant (g_variant_unref);
/// NULL for another shape.
static inline GVariant *kr_get_secret_reply_value(GVariant *reply) {
    if (!reply || !g_variant_is_of_type(reply, G_VARIANT_TYPE("((oayays))"))) return NULL;
    GVariant *secret = g_variant_get_child_value(reply, 0);
    GVariant *value = g_variant_get_child_value(secret, 2);
    g_variant_unref(secret);
    return value;
}

// Counting the Secret Service's signals on GDBus's worker thread (SecretService/ItemPathCache.swift).

/// The new owner in a NameOwnerChanged signal, `(sss)`, owned (g_free); NULL for another shape.
static inline gchar *kr_name_owner_changed_new_owner(GDBusMessage *message) {
    GVariant *body = g_dbus_message_get_body(message);
    if (!body || !g_variant_is_of_type(body, G_VARIANT_TYPE("(sss)"))) return NULL;
    const gchar *owner = NULL;
    g_variant_get(body, "(&s&s&s)", NULL, NULL, &owner);
    return g_strdup(owner);
}

static inline gboolean kr_message_is_incoming_signal(GDBusMessage *message, gboolean incoming) {
    return incoming && g_dbus_message_get_message_type(message) == G_DBUS_MESSAGE_TYPE_SIGNAL;
}

// MARK: leak tests

#if defined(__GLIBC__)
#include <malloc.h>
#endif

/// Bytes malloc has handed out and not had back, over all arenas (glibc's mallinfo2), or 0 where
/// unknown. The tests' measure of a leak: unlike RSS, it does not move with the allocator's page reuse.
static inline size_t kr_heap_bytes_in_use(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
#else
    return 0;
#endif
}

// MARK: file times

#include <fcntl.h>
#include <sys/syscall.h>
#include <linux/stat.h>

/// When `path` (a final symlink itself, not its target) was created, from statx(2): FALSE where
/// the kernel or the filesystem records no birth time. Through syscall(2), since Swift's Glibc
/// module declares no statx.
static inline gboolean kr_birth_time(const char *path, gint64 *seconds, guint32 *nanoseconds) {
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

#endif
