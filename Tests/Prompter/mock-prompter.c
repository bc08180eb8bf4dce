/*
 * A scripted stand-in for the desktop's unlock dialog, for tests only (not a product).
 *
 * Usage: mock-prompter CONTROL_FIFO REPLY_FIFO
 *
 * Starts gcr's mock system prompter on the session bus and prints its bus name on stdout (one
 * line). gnome-keyring-daemon started with GNOME_KEYRING_TEST_PROMPTER=<that name> sends its
 * unlock prompts here instead of to gcr-prompter. Then it reads commands, one a line, from
 * CONTROL_FIFO (reopened after every writer closes it):
 *   ok PASSWORD   answer the next password prompt with PASSWORD
 *   cancel        dismiss the next password prompt
 *   hang          never answer the next password prompt (an unattended desktop)
 *                 Each of these writes "queued" to REPLY_FIFO once the answer is queued, so that
 *                 the sender returns only then: a prompt that came between the write to
 *                 CONTROL_FIFO and this loop reading it met no answer and was dismissed (CI, loaded).
 *   status        write "expecting=yes|no unexpected=N" to REPLY_FIFO: whether a queued answer is
 *                 still unused, and how many prompts came with no answer queued (the mock
 *                 dismisses those)
 *   quit          stop
 * Build: gcc mock-prompter.c $(pkg-config --cflags --libs gcr-base-3)
 */
#define GCR_API_SUBJECT_TO_CHANGE 1
#include <gcr/gcr-base.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static gint unexpected = 0;

/* Tells the sender a command took effect (see the usage above). */
static void
acknowledge (const char *reply_fifo)
{
	FILE *reply = fopen (reply_fifo, "w");
	if (reply) {
		fputs ("queued\n", reply);
		fclose (reply);
	}
}

/* The mock reports a prompt it has no answer for with g_critical and dismisses it; count those
 * instead of aborting (tests run with G_DEBUG=fatal-criticals). */
static void
on_log (const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data)
{
	if ((level & G_LOG_LEVEL_CRITICAL) && message && strstr (message, "but not expected"))
		g_atomic_int_inc (&unexpected);
	fprintf (stderr, "mock-prompter: %s\n", message ? message : "");
}

static void
on_bus_closed (GDBusConnection *connection, gboolean remote_peer_vanished, GError *error, gpointer data)
{
	_exit (0);
}

/* Ends this process when the session bus goes away (scripts/with-keyring's dbus-run-session
 * ended), so a helper whose keyring-ctl never stopped it does not linger. */
static gpointer
watch_bus (gpointer data)
{
	GMainContext *context = g_main_context_new ();
	g_main_context_push_thread_default (context);
	GDBusConnection *connection = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, NULL);
	if (connection == NULL)
		_exit (0);
	g_dbus_connection_set_exit_on_close (connection, FALSE);
	g_signal_connect (connection, "closed", G_CALLBACK (on_bus_closed), NULL);
	for (;;)
		g_main_context_iteration (context, TRUE);
	return NULL;
}

int
main (int argc, char **argv)
{
	if (argc != 3) {
		fprintf (stderr, "usage: mock-prompter CONTROL_FIFO REPLY_FIFO\n");
		return 64;
	}
	g_log_set_always_fatal (G_LOG_FATAL_MASK);
	g_log_set_default_handler (on_log, NULL);
	g_log_set_handler ("Gcr", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL, on_log, NULL);

	const gchar *name = gcr_mock_prompter_start ();
	if (name == NULL) {
		fprintf (stderr, "mock-prompter: could not start the mock prompter\n");
		return 69;
	}
	g_thread_unref (g_thread_new ("bus-watch", watch_bus, NULL));
	printf ("%s\n", name);
	fflush (stdout);

	char line[4096];
	for (;;) {
		FILE *control = fopen (argv[1], "r");
		if (control == NULL) {
			perror ("mock-prompter: control fifo");
			return 66;
		}
		while (fgets (line, sizeof line, control)) {
			line[strcspn (line, "\n")] = '\0';
			if (g_str_has_prefix (line, "ok ")) {
				gcr_mock_prompter_set_delay_msec (0);
				/* Never tick gnome-keyring's "unlock this keyring automatically whenever I'm logged
				 * in": it would store the password in login, and later unlocks of that keyring
				 * (a lived-in one's "Work") would complete with no prompt at all. */
				gcr_mock_prompter_expect_password_ok (line + 3, "choice-chosen", FALSE, NULL);
				acknowledge (argv[2]);
			} else if (strcmp (line, "cancel") == 0) {
				gcr_mock_prompter_set_delay_msec (0);
				gcr_mock_prompter_expect_password_cancel ();
				acknowledge (argv[2]);
			} else if (strcmp (line, "hang") == 0) {
				/* An answer that arrives after an hour: the prompt stays open. */
				gcr_mock_prompter_set_delay_msec (3600 * 1000);
				gcr_mock_prompter_expect_password_cancel ();
				acknowledge (argv[2]);
			} else if (strcmp (line, "status") == 0) {
				FILE *reply = fopen (argv[2], "w");
				if (reply) {
					fprintf (reply, "expecting=%s unexpected=%d\n", gcr_mock_prompter_is_expecting () ? "yes" : "no",
					         g_atomic_int_get (&unexpected));
					fclose (reply);
				}
			} else if (strcmp (line, "quit") == 0) {
				fclose (control);
				gcr_mock_prompter_stop ();
				return 0;
			} else if (line[0] != '\0') {
				fprintf (stderr, "mock-prompter: unknown command: %s\n", line);
			}
		}
		fclose (control);
	}
}
