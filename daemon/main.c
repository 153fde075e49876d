// SPDX-License-Identifier: MIT
/* mrocd: arguments, configuration, then daemon.c does the rest. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "log.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mrocd [-c FILE] [--check-config] [--dump-config] [--version]\n"
		"\n"
		"  -c, --config FILE   configuration (default " MROCD_CONF_DEFAULT ")\n"
		"  -t, --check-config  validate the configuration and exit (0 = valid)\n"
		"      --dump-config   print the effective configuration and exit\n"
		"  -V, --version       print the version and exit\n"
		"  -h, --help          this text\n"
		"\n"
		"Signals: SIGTERM/SIGINT stop cleanly, SIGHUP reloads the configuration.\n"
		"Logs go to stderr with <N> priority prefixes (journald reads them).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 't' },
		{ "dump-config", no_argument, NULL, 'D' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *path = MROCD_CONF_DEFAULT;
	bool check = false, dump = false;
	struct mrocd_config cfg;
	struct mrocd *d;
	char err[512];
	int c, ret;

	while ((c = getopt_long(argc, argv, "c:tVh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			path = optarg;
			break;
		case 't':
			check = true;
			break;
		case 'D':
			dump = true;
			break;
		case 'V':
			printf("mrocd " MROCD_VERSION "\n");
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	ret = config_load(path, &cfg, err, sizeof(err));
	if (ret) {
		if (check)
			fprintf(stderr, "%s\n", err);
		else
			pr_err("%s", err);
		return 1;
	}
	if (check) {
		const char *names[64];
		size_t n = config_reload_keys(names, 64);

		printf("%s: configuration is valid\n", path);
		/* What an operator may change on a running daemon, and what not. */
		printf("a reload (SIGHUP, systemctl reload, mroc-cli config reload) applies:");
		for (size_t i = 0; i < n && i < 64; i++)
			printf(" %s", names[i]);
		printf("\nevery other key needs a restart\n");
		return 0;
	}
	if (dump)
		return config_dump(stdout, &cfg) ? 1 : 0;
	ret = mrocd_start(&cfg, path, &d);
	if (ret) {
		pr_err("start-up failed: %s", strerror(-ret));
		return 1;
	}
	mrocd_run(d);
	mrocd_stop(d);
	return 0;
}
