/* Preloaded into the AddressSanitizer run (scripts/sanitize): GLib's shared thread pool (GTask's
 * threads, which GDBus connects on) ends idle threads after 15 s and spare ones at once, at times
 * that follow the machine's load. A thread ending while the process exits has already cleared its
 * thread-local pointers but not yet freed what they held (its slice magazine, its main-context
 * stack), so LeakSanitizer's exit check reports those as leaked. With every pool thread kept, no
 * thread ends during the run and each one's thread-local data stays reachable. */
#include <glib.h>

__attribute__((constructor)) static void keep_glib_pool_threads(void) {
    g_thread_pool_set_max_unused_threads(-1);
    g_thread_pool_set_max_idle_time(0);
}
