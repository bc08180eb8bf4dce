// Counting the Secret Service's signals on GDBus's worker thread (SecretService/ItemPathCache.swift).
#ifndef KEYRING_SHIM_SIGNALS_H
#define KEYRING_SHIM_SIGNALS_H

#include "../../CLibSecret/CLibSecret.h"

#pragma clang assume_nonnull begin

/// The new owner in a NameOwnerChanged signal, `(sss)`, owned (g_free); NULL for another shape.
gchar *_Nullable kr_name_owner_changed_new_owner(GDBusMessage *message);

gboolean kr_message_is_incoming_signal(GDBusMessage *message, gboolean incoming);

#pragma clang assume_nonnull end

#endif
