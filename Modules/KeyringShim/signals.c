// Reading the Secret Service's signals on GDBus's worker thread (kr_signals.h).
#include "kr_signals.h"

gchar *kr_name_owner_changed_new_owner(GDBusMessage *message) {
    GVariant *body = g_dbus_message_get_body(message);
    if (!body || !g_variant_is_of_type(body, G_VARIANT_TYPE("(sss)"))) return NULL;
    const gchar *owner = NULL;
    g_variant_get(body, "(&s&s&s)", NULL, NULL, &owner);
    return g_strdup(owner);
}

gboolean kr_message_is_incoming_signal(GDBusMessage *message, gboolean incoming) {
    return incoming && g_dbus_message_get_message_type(message) == G_DBUS_MESSAGE_TYPE_SIGNAL;
}
