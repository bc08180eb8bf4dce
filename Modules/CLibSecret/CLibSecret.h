// libsecret, GIO and GLib, as Swift and the KeyringShim C target see them: this header only
// includes them, so every module that uses their types gets them from this one module. The C
// helpers over them (macros, casts, variadic calls, libsecret's private file backend) are in
// Modules/KeyringShim.
#ifndef KEYRING_IDENTITY_CLIBSECRET_H
#define KEYRING_IDENTITY_CLIBSECRET_H

// The dbus-path calls (secret-paths.h) let a lookup take two round trips, as libsecret's own does.
#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>
#include <gio/gio.h>
#include <glib.h>
// secret.h leaves the backend interface out (KeyringShim's file backend uses it); its own guard
// wants this define.
#define __SECRET_INSIDE_HEADER__
#include <libsecret/secret-backend.h>
#undef __SECRET_INSIDE_HEADER__

#endif
