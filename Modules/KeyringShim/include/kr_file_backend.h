// libsecret's file backend (sandboxed apps), and the Secret portal that keys it.
//
// The file backend is reached through libsecret's SecretBackend interface, on a fresh instance per
// operation: libsecret's own per-process instance loads the keyring file once and would neither see
// other processes' changes nor keep theirs when it writes. The sync wrappers run the async calls on
// a private main context, as libsecret's own *_sync calls do. Much of it is libsecret's private
// API (exported, not declared), reached through dlsym, and its private struct layouts, probed
// (type name, instance size, field types) before any field is read: libsecret 0.20 and 0.21 differ.
#ifndef KEYRING_SHIM_FILE_BACKEND_H
#define KEYRING_SHIM_FILE_BACKEND_H

#include "../../CLibSecret/CLibSecret.h"

#pragma clang assume_nonnull begin

/// The file backend's GType, or 0 when this libsecret was built without it. Looked up at run time:
/// `secret_file_backend_get_type` is exported by libsecret but not declared in its headers.
GType kr_file_backend_type(void);

/// libsecret's own check that the Secret portal answers with the version its file backend speaks;
/// -1 when this libsecret lacks the check.
int kr_secret_portal_usable(void);

/// The 64-byte secret the Secret portal keeps for this app, as the file backend's password; runs on
/// the calling thread's default main context. NULL with `error` set on failure or cancellation.
/// Asked here, not by libsecret 0.20, whose wait for the portal's answer can hang (portal.c says why).
SecretValue *_Nullable kr_portal_retrieve_secret(GCancellable *_Nullable cancellable, GError *_Nullable *_Nullable error);

/// Whether `type` is libsecret's SecretFileBackend with room for the layout
/// kr_file_backend_with_collection fills (its GObject, then the collection).
gboolean kr_file_backend_layout_fits(GType type);

/// A file backend on `collection` (taking a reference), made without libsecret's own init; NULL when
/// this libsecret's SecretFileBackend is laid out otherwise than `kr_file_backend_collection` checks.
SecretBackend *_Nullable kr_file_backend_with_collection(GType type, GObject *collection);

/// In a sandbox without SECRET_FILE_TEST_PASSWORD, the backend libsecret's init would make, keyed by
/// `kr_portal_retrieve_secret`: the same file (created with its directory), the same key. Sets
/// `*handled` to FALSE when this libsecret cannot be driven so (its own init then runs).
SecretBackend *_Nullable kr_file_backend_open_portal(GType type, GCancellable *_Nullable cancellable, gboolean *handled,
                                                     GError *_Nullable *_Nullable error);

/// A fresh file backend: reads the keyring file and derives its key (from SECRET_FILE_TEST_PASSWORD,
/// else the Secret portal). NULL with `error` set on failure.
SecretBackend *_Nullable kr_file_backend_open(GCancellable *_Nullable cancellable, GError *_Nullable *_Nullable error);

/// Every item whose attributes include `attributes`, decrypted (a GList of SecretRetrievable; free
/// with kr_object_list_free). An empty table matches every item, so each one's MAC is checked.
/// NULL when none matched, or with `error` set on failure.
GList *_Nullable kr_file_backend_search(SecretBackend *backend, GHashTable *attributes, GCancellable *_Nullable cancellable,
                                        GError *_Nullable *_Nullable error);

// One change, one write: the backend's own store and clear each write the whole file, so a change
// that touches several items (a clear that must keep the items that merely include the attributes,
// an attribute change) edits the backend's collection in memory and writes it once.
// secret_file_collection_* are exported by libsecret 0.20+ but not declared in its headers.

/// The collection a file backend read (SecretFileBackend's first field after its GObject, in 0.20
/// and 0.21), checked to be a SecretFileCollection; NULL when this libsecret is laid out otherwise.
/// The field is read only from an instance of the type named SecretFileBackend whose instance size
/// holds the layout, so a differently sized instance is never read past its end; the type check
/// of the field then tells a reordered layout (a field that is not the collection) from this one.
GObject *_Nullable kr_file_backend_collection(SecretBackend *backend);

/// Replaces the item whose attributes are exactly `attributes` (or adds one), in memory only.
/// `collection` is one kr_file_backend_collection returned (it checked the calls exist).
gboolean kr_file_collection_replace(GObject *collection, GHashTable *attributes, const char *label, SecretValue *value,
                                    GError *_Nullable *_Nullable error);

/// Removes every item whose attributes include `attributes`, in memory only; FALSE when none matched.
gboolean kr_file_collection_clear(GObject *collection, GHashTable *attributes, GError *_Nullable *_Nullable error);

/// Writes the collection to its file once. GLib checks the etag libsecret read (G_IO_ERROR_WRONG_ETAG
/// when another program wrote the file since), writes a temporary file beside it, hard-links the old
/// file to `<file>~` and renames the temporary one over; only when it cannot make the temporary file
/// does it rewrite the file in place (see FileKeyring.writing).
gboolean kr_file_collection_write(GObject *collection, GCancellable *_Nullable cancellable, GError *_Nullable *_Nullable error);

void kr_object_list_free(GList *_Nullable list);

/// Loads the keyring file `data` (checked by kr_keyring_file_check), whose etag GLib gives as `etag`,
/// into `collection` in place, keeping the key it derived: only when the file's salt and iteration
/// count are the collection's, so the key is the one libsecret would derive again. FALSE, with
/// nothing changed, otherwise or when this libsecret's collection is laid out otherwise (its type,
/// instance size and field types checked first; SecretFileCollection's 0.20 fields, to which 0.21
/// adds a guint64).
/// `modified_seconds` is the file's mtime in seconds: libsecret 0.21 compares it before each call and
/// would otherwise read the file (and derive the key) again itself.
gboolean kr_file_collection_reload(GObject *collection, const guint8 *data, gsize length, const char *_Nullable etag,
                                   guint64 modified_seconds);

/// GLib's etag for the file at `path` (what libsecret checks before writing over it); free with g_free.
/// NULL when the file cannot be queried.
gchar *_Nullable kr_file_etag(const char *path);

/// Whether `collection` holds exactly the items of the keyring file `data` (checked first with
/// kr_keyring_file_check), in the same order: each encrypted item carries a random IV and a MAC, so
/// equal items mean libsecret's view is that file. FALSE when this libsecret lacks the search.
gboolean kr_file_collection_holds(GObject *collection, const guint8 *data, gsize length);

SecretRetrievable *kr_list_retrievable(GList *node);

/// What kr_keyring_file_check found.
typedef enum { KR_FILE_OK = 0, KR_FILE_BAD_HEADER = 1, KR_FILE_BAD_VERSION = 2, KR_FILE_BAD_STRUCTURE = 3 } KRFileCheck;

/// Checks a keyring file's bytes the way libsecret 0.20 reads them, before libsecret does: it
/// aborts the process (an assertion on the salt size) on some truncated files.
KRFileCheck kr_keyring_file_check(const guint8 *data, gsize length);

#pragma clang assume_nonnull end

#endif
