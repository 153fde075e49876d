// SPDX-License-Identifier: MIT
/* mroc-cli link: the daemon's control links to other daemons (admin command "links"). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

void help_link(FILE *f)
{
	fprintf(f,
		"Usage: " CLI_NAME " link [ show ]\n"
		"       " CLI_NAME " link help\n"
		"The control links mrocd keeps with other daemons (one QP each, with\n"
		"keepalives): peer, state, direction (out: the peer is in our config), QP,\n"
		"time up, connection attempts and failures.  -br: peer and state.\n");
}

static int link_show(struct cli *c)
{
	const json_t *l;
	json_t *r;
	size_t i;
	int rc;

	rc = cli_no_more(c, help_link);
	if (rc)
		return rc < 0 ? 0 : rc;
	r = cli_request(c, "links", NULL);
	if (!r)
		return 1;
	print_start(&c->po);
	print_table_start("links");
	json_array_foreach(json_object_get(r, "links"), i, l) {
		bool up = !strcmp(jget_str(l, "state") ?: "", "up");

		print_row_start();
		print_str(PRINT_BRIEF, "peer", "PEER", jget_str(l, "peer"));
		print_str(PRINT_BRIEF, "state", "STATE", jget_str(l, "state"));
		print_text(0, NULL, "DIR", json_is_true(json_object_get(l, "outgoing")) ? "out" : "in",
			   NULL);
		print_bool(0, "outgoing", NULL, json_is_true(json_object_get(l, "outgoing")));
		print_uint(0, "qpn", "QPN", jget_u64(l, "qpn"));
		if (up)
			print_duration(0, "up_for_ns", "UP", jget_u64(l, "up_for_ns"));
		else
			print_text(0, "up_for_ns", "UP", "-", json_integer(0));
		print_uint(0, "connects", "CONNECTS", jget_u64(l, "connects"));
		print_uint(0, "failures", "FAILURES", jget_u64(l, "failures"));
		print_row_end();
	}
	print_table_end();
	if (!json_array_size(json_object_get(r, "links")))
		print_line("no control links (network.peers is empty and no daemon connected)\n");
	json_decref(r);
	return cli_print_end(c);
}

int cmd_link(struct cli *c)
{
	static const struct cli_cmd cmds[] = {
		{ "show", link_show, CLI_SHOW_ALIASES },
		{ NULL, NULL, NULL },
	};

	return cli_dispatch(c, cmds, help_link);
}
