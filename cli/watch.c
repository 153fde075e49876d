// SPDX-License-Identifier: MIT
/*
 * -w SECONDS and the watch object: run an object's command again and again,
 * redrawing the terminal in place, until SIGINT or SIGTERM.  Each frame
 * keeps its replies (cli_request) so the next can print rates per second.
 * Not on a terminal, frames follow one another; with -j each frame is one
 * JSON document on its own line.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleep until the monotonic time t, or a signal. */
static void sleep_until(double t)
{
	while (!stop) {
		double left = t - now_s();
		struct timespec ts;

		if (left <= 0)
			return;
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
		if (nanosleep(&ts, NULL) && errno != EINTR)
			return;
	}
}

static void header(const struct cli *c, const struct cli_object *obj, int argc, char **argv,
		   bool tty)
{
	char when[32] = "";
	time_t t = time(NULL);
	struct tm tm;

	if (localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	if (tty)
		fputs("\033[H\033[2J", stdout);
	printf("Every %gs: " CLI_NAME " %s", c->watch_s, obj->name);
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("%s%s\n\n", tty ? "  (Ctrl-C stops)  " : "  ", when);
	fflush(stdout);
}

int cli_watch(struct cli *c, const struct cli_object *obj)
{
	struct sigaction sa = { .sa_handler = on_signal };	/* no SA_RESTART: wake the sleep */
	bool tty = !c->po.json && isatty(STDOUT_FILENO);
	int argc = c->argc, rc = 0;
	char **argv = c->argv;

	for (int i = 0; i < argc; i++)
		if (!strcmp(argv[i], "help"))
			return obj->fn(c);	/* help once, no loop */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	c->watching = true;
	for (unsigned frame = 0; !stop; frame++) {
		c->argc = argc;
		c->argv = argv;
		c->cur = json_object();
		c->cur_t = now_s();
		if (!c->po.json) {
			if (frame && !tty)
				putchar('\n');
			header(c, obj, argc, argv, tty);
		}
		rc = obj->fn(c);
		fflush(stdout);
		if (rc && !frame)
			break;		/* a usage error or no daemon at all: say so once */
		rc = 0;			/* later: mrocd may be restarting; keep trying */
		json_decref(c->prev);
		c->prev = c->cur;
		c->prev_t = c->cur_t;
		c->cur = NULL;
		sleep_until(c->prev_t + c->watch_s);
	}
	json_decref(c->prev);
	json_decref(c->cur);
	c->prev = c->cur = NULL;
	c->watching = false;
	return rc;
}
