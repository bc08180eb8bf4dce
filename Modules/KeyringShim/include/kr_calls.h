// Main-loop waits: asynchronous GIO calls driven to completion on a main context of the caller's.
#ifndef KEYRING_SHIM_CALLS_H
#define KEYRING_SHIM_CALLS_H

#include "../../CLibSecret/CLibSecret.h"

#pragma clang assume_nonnull begin

/// One asynchronous call's result (a new reference), once its callback has run.
typedef struct { GAsyncResult *_Nullable result; } KRPending;

/// A GAsyncReadyCallback whose `data` is a KRPending.
void kr_pending_done(GObject *_Nullable source, GAsyncResult *result, gpointer data);

/// Iterates `context` (NULL: the global default) until `pending` has its result.
void kr_pending_wait(GMainContext *_Nullable context, KRPending *pending);

// Pipelined D-Bus calls: several calls in flight at once, their replies awaited together, so a
// read costs one round trip per dependent step rather than one per call.

/// One asynchronous call's outcome: the reply or the error, once `done`.
typedef struct {
    GVariant *_Nullable reply;
    GError *_Nullable error;
    gboolean done;
} KRCall;

/// Starts a call (never auto-starting the service) whose reply is dispatched on the thread-default
/// main context; `parameters` is consumed if floating. A reply not of `reply_type` fails the call
/// with G_IO_ERROR_INVALID_ARGUMENT (read by BusCall.keyringError, as for every other call).
void kr_call_start(GDBusConnection *connection, const char *_Nullable destination, const char *path, const char *interface,
                   const char *method, GVariant *_Nullable parameters, const char *reply_type, gint timeout_ms,
                   GCancellable *_Nullable cancellable, KRCall *call);

/// Iterates `context` (NULL: the global default) until every call in `calls` is done (each ends by
/// reply, error, timeout or cancellation).
void kr_calls_wait(GMainContext *_Nullable context, KRCall *calls, int count);

#pragma clang assume_nonnull end

#endif
