// SPDX-License-Identifier: MIT
/*
 * mroc-cli config: the daemon's effective configuration (admin command
 * "config"), and reload (admin command "reload": the daemon re-reads its file
 * and answers when done; systemd's ExecReload, so that a failed reload fails
 * "systemctl reload").
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

void help_config(FILE *f)
{
	fprintf(f,
		"Usage: " CLI_NAME " config [ show ]\n"
		"       " CLI_NAME " config reload\n"
		"       " CLI_NAME " config help\n"
		"show: the configuration mrocd runs with, every key with its value (defaults\n"
		"included), in mrocd.conf(5) syntax, after the file it was read from.\n"
		"reload: mrocd re-reads that file and applies its [reload] keys (as SIGHUP);\n"
		"exit status 1 with the reason when the file is bad (the old one stays).\n");
}

static int config_show(struct cli *c)
{
	const char *text, *path;
	json_t *r;
	int rc;

	rc = cli_no_more(c, help_config);
	if (rc)
		return rc < 0 ? 0 : rc;
	r = cli_request(c, "config", NULL);
	if (!r)
		return 1;
	text = jget_str(r, "config") ?: "";
	path = jget_str(r, "path");
	print_start(&c->po);
	print_str(0, "path", NULL, path);
	print_str(0, "config", NULL, text);
	print_line("# mrocd's effective configuration (read from %s)\n%s%s", path ? path : "?", text,
		   *text && text[strlen(text) - 1] != '\n' ? "\n" : "");
	json_decref(r);
	return cli_print_end(c);
}

static int config_reload(struct cli *c)
{
	json_t *r;
	int rc;

	rc = cli_no_more(c, help_config);
	if (rc)
		return rc < 0 ? 0 : rc;
	r = cli_request(c, "reload", NULL);
	if (!r)
		return 1;
	print_start(&c->po);
	print_str(0, "result", NULL, jget_str(r, "result"));
	print_line("reloaded: %s\n", jget_str(r, "result") ?: "");
	json_decref(r);
	return cli_print_end(c);
}

int cmd_config(struct cli *c)
{
	static const struct cli_cmd cmds[] = {
		{ "show", config_show, CLI_SHOW_ALIASES },
		{ "reload", config_reload, NULL },
		{ NULL, NULL, NULL },
	};

	return cli_dispatch(c, cmds, help_config);
}
