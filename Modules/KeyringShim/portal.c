// The Secret portal's key for the file backend (kr_file_backend.h).
#include "kr_file_backend.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <gio/gunixfdlist.h>
#include <glib-unix.h>

int kr_secret_portal_usable(void) {
    gboolean (*check)(void) = (gboolean (*)(void))dlsym(RTLD_DEFAULT, "_secret_file_backend_check_portal_version");
    return check ? (check() ? 1 : 0) : -1;
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

SecretValue *kr_portal_retrieve_secret(GCancellable *cancellable, GError **error) {
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
