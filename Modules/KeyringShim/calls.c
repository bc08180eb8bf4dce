// Main-loop waits and pipelined D-Bus calls (kr_calls.h).
#include "kr_calls.h"

void kr_pending_done(GObject *source, GAsyncResult *result, gpointer data) {
    (void)source;
    ((KRPending *)data)->result = g_object_ref(result);
}

void kr_pending_wait(GMainContext *context, KRPending *pending) {
    while (!pending->result) g_main_context_iteration(context, TRUE);
}

static void kr_call_finished(GObject *source, GAsyncResult *result, gpointer data) {
    KRCall *call = data;
    call->reply = g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &call->error);
    call->done = TRUE;
}

void kr_call_start(GDBusConnection *connection, const char *destination, const char *path, const char *interface,
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

void kr_calls_wait(GMainContext *context, KRCall *calls, int count) {
    for (;;) {
        int pending = 0;
        for (int i = 0; i < count; i++) pending += !calls[i].done;
        if (!pending) return;
        g_main_context_iteration(context, TRUE);
    }
}
