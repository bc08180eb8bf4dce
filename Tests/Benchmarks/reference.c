/* Reference programs and process driver for scripts/bench.
 *
 * Built by scripts/bench with:
 *   gcc -O2 -o .build/bench/reference Tests/Benchmarks/reference.c $(pkg-config --cflags --libs libsecret-1)
 *
 * Every timing comes from clock_gettime(CLOCK_MONOTONIC). Output is one line per sample:
 *   sample <label> <nanoseconds>
 * plus free-form lines that start with '#'.
 *
 * Modes:
 *   reference lookup N ATTR VAL [ATTR VAL...]   1 first + N warm secret_password_lookupv_sync
 *   reference store N ATTR VAL [ATTR VAL...]    1 first + N warm secret_password_storev_sync (same item, new value)
 *   reference lookup-fresh N SERVICE            1 first + N lookupv_sync of service=SERVICE username='', each right after
 *                                               another process (secret-tool store) wrote a new value; only the lookup is
 *                                               timed; "# stale K" counts the lookups that did not return that value
 *   reference store-new N PREFIX                1 first + N stores of a NEW item each (service=PREFIX-i)
 *   reference populate FROM TO                  create unrelated items unrelated-FROM..TO-1 in the default
 *                                               (login) collection, timed in total
 *   reference populate-session FROM TO          the same in gnome-keyring's in-memory "session" collection
 *   reference populate-raw FROM TO COLLECTION   the same items in the collection at that object path, through
 *                                               raw CreateItem calls (plain session, no replace, 32 in flight)
 *   reference count ATTR VAL [ATTR VAL...]      one raw SearchItems on the service: "count <matches>", and its time
 *   reference fsync DIR N                       N times: write 8 KiB, fsync, rename (as gnome-keyring saves
 *                                               a keyring file); one sample each
 *   reference noop                              link libsecret, call nothing (start-up baseline)
 *   reference spawn REPS LABEL=CMD...           fork/exec each CMD once per repetition, interleaved
 *                                               (A,B,C,A,B,C...); CMD is split on \x1f; stdout -> /dev/null
 *   reference race N CMD                        start N copies of CMD at once, print the wall time and
 *                                               each copy's stdout as "out <line>"
 */
#define _GNU_SOURCE
#include <libsecret/secret.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what, GError *error) {
    fprintf(stderr, "reference: %s: %s\n", what, error ? error->message : "failed");
    exit(1);
}

/* A schema that matches any attribute set we pass, and never matches on the schema name
 * (secret-tool and python-keyring write no xdg:schema). */
static SecretSchema *schema_for(GHashTable *attributes) {
    GHashTable *types = g_hash_table_new(g_str_hash, g_str_equal);
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, attributes);
    while (g_hash_table_iter_next(&it, &key, NULL))
        g_hash_table_insert(types, key, GINT_TO_POINTER(SECRET_SCHEMA_ATTRIBUTE_STRING));
    SecretSchema *schema = secret_schema_newv("org.freedesktop.Secret.Generic", SECRET_SCHEMA_DONT_MATCH_NAME, types);
    g_hash_table_unref(types);
    return schema;
}

static GHashTable *table_from(int argc, char **argv) {
    GHashTable *t = g_hash_table_new(g_str_hash, g_str_equal);
    for (int i = 0; i + 1 < argc; i += 2) g_hash_table_insert(t, argv[i], argv[i + 1]);
    return t;
}

static int mode_lookup(int n, int argc, char **argv) {
    GHashTable *attributes = table_from(argc, argv);
    SecretSchema *schema = schema_for(attributes);
    for (int i = 0; i <= n; i++) {
        GError *error = NULL;
        long long t0 = now_ns();
        gchar *value = secret_password_lookupv_sync(schema, attributes, NULL, &error);
        long long t1 = now_ns();
        if (error) die("lookup", error);
        if (!value) { fprintf(stderr, "reference: lookup found nothing\n"); return 1; }
        secret_password_free(value);
        printf("sample %s %lld\n", i == 0 ? "first" : "warm", t1 - t0);
    }
    secret_schema_unref(schema);
    g_hash_table_unref(attributes);
    return 0;
}

static int mode_store(int n, int argc, char **argv) {
    GHashTable *attributes = table_from(argc, argv);
    SecretSchema *schema = schema_for(attributes);
    for (int i = 0; i <= n; i++) {
        GError *error = NULL;
        char value[64];
        snprintf(value, sizeof value, "value-%d-%lld", i, now_ns());
        long long t0 = now_ns();
        gboolean ok = secret_password_storev_sync(schema, attributes, SECRET_COLLECTION_DEFAULT, "bench reference", value, NULL, &error);
        long long t1 = now_ns();
        if (error || !ok) die("store", error);
        printf("sample %s %lld\n", i == 0 ? "first" : "warm", t1 - t0);
    }
    secret_schema_unref(schema);
    g_hash_table_unref(attributes);
    return 0;
}

static int mode_lookup_fresh(int n, const char *service) {
    GHashTable *attributes = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_insert(attributes, "service", (gpointer)service);
    g_hash_table_insert(attributes, "username", "");
    SecretSchema *schema = schema_for(attributes);
    int stale = 0;
    for (int i = 0; i <= n; i++) {
        char value[64], command[256];
        snprintf(value, sizeof value, "fresh-ref-%d-%lld", i, now_ns());
        snprintf(command, sizeof command, "secret-tool store --label %s service %s username ''", service, service);
        FILE *pipe = popen(command, "w");
        if (!pipe) { fprintf(stderr, "reference: cannot start secret-tool\n"); return 1; }
        fputs(value, pipe);
        if (pclose(pipe) != 0) { fprintf(stderr, "reference: secret-tool store failed\n"); return 1; }
        GError *error = NULL;
        long long t0 = now_ns();
        gchar *read = secret_password_lookupv_sync(schema, attributes, NULL, &error);
        long long t1 = now_ns();
        if (error) die("lookup", error);
        if (!read || strcmp(read, value) != 0) stale++;
        if (read) secret_password_free(read);
        printf("sample %s %lld\n", i == 0 ? "first" : "warm", t1 - t0);
    }
    printf("# stale %d of %d\n", stale, n + 1);
    secret_schema_unref(schema);
    g_hash_table_unref(attributes);
    return 0;
}

static int mode_store_new(int n, const char *prefix) {
    GHashTable *types = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_insert(types, "service", GINT_TO_POINTER(SECRET_SCHEMA_ATTRIBUTE_STRING));
    g_hash_table_insert(types, "username", GINT_TO_POINTER(SECRET_SCHEMA_ATTRIBUTE_STRING));
    SecretSchema *schema = secret_schema_newv("org.freedesktop.Secret.Generic", SECRET_SCHEMA_DONT_MATCH_NAME, types);
    for (int i = 0; i <= n; i++) {
        char service[128];
        snprintf(service, sizeof service, "%s-%d", prefix, i);
        GHashTable *attributes = g_hash_table_new(g_str_hash, g_str_equal);
        g_hash_table_insert(attributes, "service", service);
        g_hash_table_insert(attributes, "username", "");
        GError *error = NULL;
        long long t0 = now_ns();
        gboolean ok = secret_password_storev_sync(schema, attributes, SECRET_COLLECTION_DEFAULT, service,
                                                  "0f8a1d3e-6c1b-4f7a-9a43-1b2c3d4e5f60", NULL, &error);
        long long t1 = now_ns();
        if (error || !ok) die("store-new", error);
        g_hash_table_unref(attributes);
        printf("sample %s %lld\n", i == 0 ? "first" : "warm", t1 - t0);
    }
    secret_schema_unref(schema);
    g_hash_table_unref(types);
    return 0;
}

/* gnome-keyring 42 makes each new item cost O(items already there) (it rewrites and re-encrypts the
 * keyring file, and emits the collection's whole Items list), so filling a collection is O(n^2):
 * ~37 s for 1000 items on the test machine. CreateItem(replace=false) through a collection proxy
 * was slower still, so this uses plain storev; populate-raw (below) is the fast way. */
static int mode_populate(int from, int to, const char *collection) {
    GHashTable *types = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_insert(types, "service", GINT_TO_POINTER(SECRET_SCHEMA_ATTRIBUTE_STRING));
    g_hash_table_insert(types, "username", GINT_TO_POINTER(SECRET_SCHEMA_ATTRIBUTE_STRING));
    SecretSchema *schema = secret_schema_newv("org.freedesktop.Secret.Generic", SECRET_SCHEMA_DONT_MATCH_NAME, types);
    long long t0 = now_ns();
    for (int i = from; i < to; i++) {
        char service[64];
        snprintf(service, sizeof service, "unrelated-%d", i);
        GHashTable *attributes = g_hash_table_new(g_str_hash, g_str_equal);
        g_hash_table_insert(attributes, "service", service);
        g_hash_table_insert(attributes, "username", "someone");
        GError *error = NULL;
        if (!secret_password_storev_sync(schema, attributes, collection, service, "unrelated secret", NULL, &error))
            die("populate", error);
        g_hash_table_unref(attributes);
    }
    printf("sample populate %lld\n", now_ns() - t0);
    return 0;
}

/* populate-raw: the same items, through raw CreateItem calls (replace=false) on a plain session,
 * up to WINDOW calls in flight. No SecretService proxy, no search for an item to replace. */
static struct {
    GDBusConnection *bus;
    GMainLoop *loop;
    const char *collection, *session;
    int next, to, pending;
} raw;

static void raw_send(void);

static void raw_created(GObject *source, GAsyncResult *result, gpointer data) {
    (void)source; (void)data;
    GError *error = NULL;
    GVariant *reply = g_dbus_connection_call_finish(raw.bus, result, &error);
    if (!reply) die("CreateItem", error);
    g_variant_unref(reply);
    raw.pending--;
    raw_send();
    if (raw.pending == 0 && raw.next >= raw.to) g_main_loop_quit(raw.loop);
}

static void raw_send(void) {
    static const char value[] = "unrelated secret";
    while (raw.pending < 32 && raw.next < raw.to) {
        char service[64];
        snprintf(service, sizeof service, "unrelated-%d", raw.next++);
        GVariantBuilder attributes, properties;
        g_variant_builder_init(&attributes, G_VARIANT_TYPE("a{ss}"));
        g_variant_builder_add(&attributes, "{ss}", "service", service);
        g_variant_builder_add(&attributes, "{ss}", "username", "someone");
        g_variant_builder_init(&properties, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&properties, "{sv}", "org.freedesktop.Secret.Item.Label", g_variant_new_string(service));
        g_variant_builder_add(&properties, "{sv}", "org.freedesktop.Secret.Item.Attributes", g_variant_builder_end(&attributes));
        GVariant *secret = g_variant_new("(o@ay@ays)", raw.session,
                                         g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, "", 0, 1),
                                         g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, value, sizeof value - 1, 1),
                                         "text/plain");
        g_dbus_connection_call(raw.bus, "org.freedesktop.secrets", raw.collection, "org.freedesktop.Secret.Collection",
                               "CreateItem", g_variant_new("(@a{sv}@(oayays)b)", g_variant_builder_end(&properties), secret, FALSE),
                               G_VARIANT_TYPE("(oo)"), G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, NULL, raw_created, NULL);
        raw.pending++;
    }
}

static int mode_populate_raw(int from, int to, const char *collection) {
    GError *error = NULL;
    long long t0 = now_ns();
    raw.bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    if (!raw.bus) die("bus", error);
    GVariant *opened = g_dbus_connection_call_sync(raw.bus, "org.freedesktop.secrets", "/org/freedesktop/secrets",
                                                   "org.freedesktop.Secret.Service", "OpenSession",
                                                   g_variant_new("(sv)", "plain", g_variant_new_string("")),
                                                   G_VARIANT_TYPE("(vo)"), G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, NULL, &error);
    if (!opened) die("OpenSession", error);
    const char *session;
    g_variant_get(opened, "(v&o)", NULL, &session);
    raw.session = session;
    raw.collection = collection;
    raw.next = from;
    raw.to = to;
    raw.loop = g_main_loop_new(NULL, FALSE);
    raw_send();
    if (raw.pending) g_main_loop_run(raw.loop);
    printf("sample populate %lld\n", now_ns() - t0);
    g_variant_unref(opened);
    return 0;
}

/* count: how many items one SearchItems on the service returns (unlocked + locked), the call
 * every lookup starts with; it proves the populated items are in what a search scans. */
static int mode_count(int argc, char **argv) {
    GError *error = NULL;
    GDBusConnection *bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    if (!bus) die("bus", error);
    GVariantBuilder attributes;
    g_variant_builder_init(&attributes, G_VARIANT_TYPE("a{ss}"));
    for (int i = 0; i + 1 < argc; i += 2) g_variant_builder_add(&attributes, "{ss}", argv[i], argv[i + 1]);
    long long t0 = now_ns();
    GVariant *reply = g_dbus_connection_call_sync(bus, "org.freedesktop.secrets", "/org/freedesktop/secrets",
                                                  "org.freedesktop.Secret.Service", "SearchItems",
                                                  g_variant_new("(@a{ss})", g_variant_builder_end(&attributes)),
                                                  G_VARIANT_TYPE("(aoao)"), G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, NULL, &error);
    long long t1 = now_ns();
    if (!reply) die("SearchItems", error);
    GVariant *unlocked = g_variant_get_child_value(reply, 0), *locked = g_variant_get_child_value(reply, 1);
    printf("count %zu\n", g_variant_n_children(unlocked) + g_variant_n_children(locked));
    printf("sample search %lld\n", t1 - t0);
    g_variant_unref(unlocked);
    g_variant_unref(locked);
    g_variant_unref(reply);
    return 0;
}

/* fsync DIR N: N times write 8 KiB to a new file in DIR, fsync it and rename it over DIR/.bench-fsync,
 * as gnome-keyring saves a keyring file on every write. The write cases depend on this latency, which
 * another job's disk traffic can raise tenfold. */
static int mode_fsync(const char *dir, int n) {
    char tmp[4096], dst[4096], block[8192];
    memset(block, 'x', sizeof block);
    snprintf(dst, sizeof dst, "%s/.bench-fsync", dir);
    for (int i = 0; i < n; i++) {
        snprintf(tmp, sizeof tmp, "%s/.bench-fsync-%d", dir, i);
        long long t0 = now_ns();
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || write(fd, block, sizeof block) != (ssize_t)sizeof block || fsync(fd) != 0 || close(fd) != 0 ||
            rename(tmp, dst) != 0) { perror("reference: fsync"); return 1; }
        printf("sample fsync %lld\n", now_ns() - t0);
    }
    unlink(dst);
    return 0;
}

static char **split_cmd(const char *spec) {
    /* fields separated by \x1f (unit separator) so arguments may hold spaces or be empty */
    int count = 1;
    for (const char *p = spec; *p; p++) if (*p == '\x1f') count++;
    char **argv = calloc(count + 1, sizeof *argv);
    char *copy = strdup(spec);
    int i = 0;
    argv[i++] = copy;
    for (char *p = copy; *p; p++) if (*p == '\x1f') { *p = 0; argv[i++] = p + 1; }
    argv[i] = NULL;
    return argv;
}

static long long run_once(char **argv, int *status_out) {
    long long t0 = now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execvp(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    long long t1 = now_ns();
    *status_out = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return t1 - t0;
}

static int mode_spawn(int reps, int argc, char **argv) {
    char **labels = calloc(argc, sizeof *labels);
    char ***cmds = calloc(argc, sizeof *cmds);
    int *expect = calloc(argc, sizeof *expect);
    for (int i = 0; i < argc; i++) {
        /* LABEL[:EXPECTED_STATUS]=CMD */
        char *eq = strchr(argv[i], '=');
        if (!eq) { fprintf(stderr, "reference: spawn: bad spec %s\n", argv[i]); return 64; }
        *eq = 0;
        labels[i] = argv[i];
        char *colon = strchr(labels[i], ':');
        if (colon) { *colon = 0; expect[i] = atoi(colon + 1); }
        cmds[i] = split_cmd(eq + 1);
    }
    /* one untimed warm-up pass so page cache and the daemon are in the same state for all */
    for (int i = 0; i < argc; i++) { int st; run_once(cmds[i], &st); }
    for (int r = 0; r < reps; r++) {
        for (int k = 0; k < argc; k++) {
            /* rotate the start so no command always runs right after the same one */
            int i = (k + r) % argc;
            int st;
            long long ns = run_once(cmds[i], &st);
            if (st != expect[i]) {
                fprintf(stderr, "reference: spawn: %s exited %d, expected %d\n", labels[i], st, expect[i]);
                return 1;
            }
            printf("sample %s %lld\n", labels[i], ns);
            fflush(stdout);
        }
    }
    return 0;
}

static int mode_race(int n, const char *spec) {
    char **argv = split_cmd(spec);
    pid_t *pids = calloc(n, sizeof *pids);
    int *fds = calloc(n, sizeof *fds);
    long long t0 = now_ns();
    for (int i = 0; i < n; i++) {
        int p[2];
        if (pipe(p) != 0) { perror("pipe"); return 1; }
        pids[i] = fork();
        if (pids[i] == 0) {
            dup2(p[1], 1);
            close(p[0]);
            close(p[1]);
            execvp(argv[0], argv);
            _exit(127);
        }
        close(p[1]);
        fds[i] = p[0];
    }
    int failures = 0;
    char outputs[64][256];
    for (int i = 0; i < n && i < 64; i++) {
        ssize_t len = 0, got;
        while ((got = read(fds[i], outputs[i] + len, sizeof outputs[i] - 1 - len)) > 0) len += got;
        outputs[i][len] = 0;
        char *nl = strchr(outputs[i], '\n');
        if (nl) *nl = 0;
        close(fds[i]);
    }
    for (int i = 0; i < n; i++) {
        int status;
        while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR) {}
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failures++;
    }
    long long t1 = now_ns();
    printf("sample wall %lld\n", t1 - t0);
    for (int i = 0; i < n && i < 64; i++) printf("out %s\n", outputs[i]);
    printf("# failures %d\n", failures);
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) { fprintf(stderr, "usage: see the comment at the top of reference.c\n"); return 64; }
    const char *mode = argv[1];
    if (!strcmp(mode, "noop")) return 0;
    if (!strcmp(mode, "lookup") && argc >= 5) return mode_lookup(atoi(argv[2]), argc - 3, argv + 3);
    if (!strcmp(mode, "store") && argc >= 5) return mode_store(atoi(argv[2]), argc - 3, argv + 3);
    if (!strcmp(mode, "lookup-fresh") && argc == 4) return mode_lookup_fresh(atoi(argv[2]), argv[3]);
    if (!strcmp(mode, "store-new") && argc == 4) return mode_store_new(atoi(argv[2]), argv[3]);
    if (!strcmp(mode, "populate") && argc == 4) return mode_populate(atoi(argv[2]), atoi(argv[3]), SECRET_COLLECTION_DEFAULT);
    if (!strcmp(mode, "populate-session") && argc == 4) return mode_populate(atoi(argv[2]), atoi(argv[3]), SECRET_COLLECTION_SESSION);
    if (!strcmp(mode, "populate-raw") && argc == 5) return mode_populate_raw(atoi(argv[2]), atoi(argv[3]), argv[4]);
    if (!strcmp(mode, "fsync") && argc == 4) return mode_fsync(argv[2], atoi(argv[3]));
    if (!strcmp(mode, "count") && argc >= 4) return mode_count(argc - 2, argv + 2);
    if (!strcmp(mode, "spawn") && argc >= 4) return mode_spawn(atoi(argv[2]), argc - 3, argv + 3);
    if (!strcmp(mode, "race") && argc == 4 && atoi(argv[2]) <= 64) return mode_race(atoi(argv[2]), argv[3]);
    fprintf(stderr, "reference: bad arguments\n");
    return 64;
}
