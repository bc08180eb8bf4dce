// GVariant builders and readers for the D-Bus calls Swift makes (Secret Service, KWallet, the bus
// itself): g_variant_new is variadic, so Swift cannot call it. Every reader takes a reply that may
// be NULL and answers as for one of another shape.
#ifndef KEYRING_SHIM_VARIANTS_H
#define KEYRING_SHIM_VARIANTS_H

#include "../../CLibSecret/CLibSecret.h"

#pragma clang assume_nonnull begin

/// `("s")` tuple for a one-string D-Bus call (g_variant_new is variadic).
GVariant *kr_variant_string_tuple(const char *value);

/// `(su)` tuple for RequestName (name, flags).
GVariant *kr_variant_name_flags_tuple(const char *name, guint32 flags);

/// Reads the `u` out of a `(u)` reply; 0 when the reply has another shape.
guint32 kr_variant_tuple_u32(GVariant *_Nullable reply);

/// Item properties from a `Properties.GetAll` reply, `(a{sv})`; a missing label reads as empty.
typedef struct {
    GHashTable *_Nullable attributes;  /* owned string table; free with g_hash_table_unref */
    gchar *_Nullable label;            /* owned; free with g_free */
    guint64 created;
    guint64 modified;
    gboolean locked;
} KRItemProperties;

/// FALSE (with nothing to free) when the reply has another shape, or lacks the attributes, either date
/// or the lock state, or has them of another type: a malformed item is never read as one with no dates.
gboolean kr_item_properties(GVariant *_Nullable reply, KRItemProperties *properties);

/// `("org.freedesktop.Secret.Item")` for Properties.GetAll.
GVariant *kr_item_interface_tuple(void);

// Unlocking (Sources/Keyring/Internals/SecretService/ServiceCall+Prompt.swift).

/// `(ao)` with one object path, for Service.Unlock.
GVariant *kr_variant_objpath_array_tuple(const char *path);

/// The object path out of an `(o)` reply (ReadAlias); NULL for another shape. Free with g_free.
gchar *_Nullable kr_variant_tuple_objpath(GVariant *_Nullable reply);

/// The prompt path out of an Unlock reply, `(aoo)`; NULL for another shape. Free with g_free.
gchar *_Nullable kr_unlock_reply_prompt(GVariant *_Nullable reply);

/// Whether a Prompt.Completed signal, `(bv)`, says dismissed; a malformed one counts as dismissed.
gboolean kr_prompt_completed_dismissed(GVariant *_Nullable parameters);

/// kwalletd's org.kde.KWallet calls: `(sxs)` open(wallet, window id 0, app id).
GVariant *kr_kwallet_open_tuple(const char *wallet, const char *appid);

/// `(is)` sync(handle, app id).
GVariant *kr_kwallet_handle_tuple(gint32 handle, const char *appid);

/// `(ibs)` close(handle, force FALSE, app id).
GVariant *kr_kwallet_close_tuple(gint32 handle, const char *appid);

/// The string of a `(s)` reply, owned (g_free); NULL when the reply has another shape.
gchar *_Nullable kr_variant_tuple_string(GVariant *_Nullable reply);

/// The `i` of an `(i)` reply; -1 when the reply has another shape.
gint32 kr_variant_tuple_i32(GVariant *_Nullable reply);

/// The `b` of a `(b)` reply; FALSE when the reply has another shape.
gboolean kr_variant_tuple_bool(GVariant *_Nullable reply);

/// `("plain", <"">)` for Secret Service OpenSession with no encryption.
GVariant *kr_open_plain_session_tuple(void);

/// The session path of an OpenSession reply, `(vo)`, owned (g_free); NULL for another shape.
gchar *_Nullable kr_open_session_path(GVariant *_Nullable reply);

/// True when an `(as)` reply lists `name`.
gboolean kr_variant_tuple_strings_contains(GVariant *_Nullable reply, const char *name);

// Collection lock states, read straight from the service (KeePassXC hides a locked database's items).

/// `(ss)` tuple for Properties.Get (interface, property).
GVariant *kr_variant_two_strings_tuple(const char *first, const char *second);

/// `(ssv)` tuple for Properties.Set of a string property (interface, property, value).
GVariant *kr_variant_set_string_tuple(const char *interface, const char *property, const char *value);

/// The object paths in a Properties.Get reply, `(v)` holding `ao`; NULL-terminated, free with
/// g_strfreev. NULL when the reply has another shape.
gchar *_Nullable *_Nullable kr_variant_object_paths(GVariant *_Nullable reply);

/// The string in a `(v)` Properties.Get reply, newly allocated (g_free it); NULL for another shape.
gchar *_Nullable kr_variant_property_string(GVariant *_Nullable reply);

/// The boolean in a Properties.Get reply, `(v)` holding `b`: 1 or 0, or -1 for another shape.
int kr_variant_boolean(GVariant *_Nullable reply);

/// An `a{ss}` value (floating) from a string table.
GVariant *kr_variant_attributes(GHashTable *table);

/// `(a{ss})` tuple for SearchItems, from a string table.
GVariant *kr_variant_attributes_tuple(GHashTable *table);

/// The two path lists of a SearchItems reply, `(aoao)`, each NULL-terminated (free with
/// g_strfreev); both NULL when the reply has another shape.
void kr_search_reply(GVariant *_Nullable reply, gchar *_Nullable *_Nullable *_Nonnull unlocked, gchar *_Nullable *_Nullable *_Nonnull locked);

/// `(aoo)` tuple for GetSecrets: the item paths (NULL-terminated) and the session.
GVariant *kr_variant_paths_session_tuple(const gchar *_Nullable const *_Nonnull paths, const char *session);

/// `(aoo)` tuple for GetSecrets of one item: its path and the session.
GVariant *kr_variant_path_session_tuple(const char *path, const char *session);

/// The encoded secret `(oayays)` for `path` in a GetSecrets reply, `(a{o(oayays)})`, as a new
/// reference; NULL when the reply has no entry for it or another shape.
GVariant *_Nullable kr_secrets_reply_entry(GVariant *_Nullable reply, const char *path);

/// The secret bytes for `path` in a GetSecrets reply, `(a{o(oayays)})`, as a new `ay` variant
/// (g_variant_unref); NULL when the reply has no entry for it, another shape, or encryption parameters.
GVariant *_Nullable kr_secrets_reply_value(GVariant *_Nullable reply, const char *path);

/// A one-element tuple holding `value` (consumed if floating), for calls such as Item.SetSecret.
GVariant *kr_variant_tuple_of(GVariant *value);

// Creating items with raw calls (ServiceCall.createItem).

/// `(a{sv}(oayays)b)` for Collection.CreateItem: label and attributes, the encoded secret
/// (consumed if floating), and the replace flag (only for a provider whose replace matches
/// exactly these attributes: `Quirks.keepsItemChanges`).
GVariant *kr_create_item_tuple(const char *label, GHashTable *attributes, GVariant *secret, gboolean replace);

/// The item and prompt paths of a CreateItem reply, `(oo)`; both NULL for another shape. Free with g_free.
void kr_create_item_reply(GVariant *_Nullable reply, gchar *_Nullable *_Nonnull item, gchar *_Nullable *_Nonnull prompt);

const GVariantType *kr_variant_type_objpath(void);

/// The path in a prompt's result, an `o` variant; NULL for another shape. Free with g_free.
gchar *_Nullable kr_variant_objpath(GVariant *_Nullable value);

// Checking a KWallet session key against a plain session (Providers/KWallet+SessionCheck.swift).

/// `(o)` tuple, e.g. the session for Item.GetSecret.
GVariant *kr_variant_objpath_tuple(const char *path);

/// The value bytes of an Item.GetSecret reply, `((oayays))`, as a new `ay` variant (g_variant_unref);
/// NULL for another shape.
GVariant *_Nullable kr_get_secret_reply_value(GVariant *_Nullable reply);

#pragma clang assume_nonnull end

#endif
