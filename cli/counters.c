// SPDX-License-Identifier: MIT
/*
 * mroc-cli counters: the daemon's totals (admin commands "counters" and
 * "counters_reset"): engine, XDP program (per-CPU counters summed), AF_XDP
 * sockets (XDP_STATISTICS), malformed packets by reason, clients, worker.
 * The Prometheus form is prom.c's.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fmt.h"

void help_counters(FILE *f)
{
	fprintf(f,
		"Usage: " CLI_NAME " counters [ show ]\n"
		"       " CLI_NAME " counters reset\n"
		"       " CLI_NAME " counters prometheus\n"
		"       " CLI_NAME " counters help\n"
		"show        totals since mrocd started or since the last reset: engine, the\n"
		"            XDP program's per-CPU counters summed, the backend with the\n"
		"            AF_XDP sockets' XDP_STATISTICS (xsk_*), malformed packets by\n"
		"            reason, clients, worker.  Zero counters are left out unless -s;\n"
		"            watching (-w) adds a rate per second to each.\n"
		"reset       make the counters start again from zero (mrocd keeps a baseline;\n"
		"            per-QP and per-path counters and the Prometheus output are not\n"
		"            affected)\n"
		"prometheus  counters, QPs and paths in the Prometheus text exposition format,\n"
		"            e.g. for node_exporter's textfile collector:\n"
		"              " CLI_NAME " counters prometheus > /var/lib/node_exporter/mroc.prom.$$ &&\n"
		"              mv /var/lib/node_exporter/mroc.prom.$$ /var/lib/node_exporter/mroc.prom\n");
}

static const struct {
	const char *key, *title;
} groups[] = {
	{ "engine", "engine (MetaRoCE transport)" },
	{ "xdp", "xdp (XDP program, summed over CPUs)" },
	{ "backend", "backend (packets; xsk_*: AF_XDP sockets' XDP_STATISTICS)" },
	{ "clients", "clients (libmroc applications)" },
	{ "worker", "worker (data-plane thread)" },
};

/* Keys of a counters reply that are not counter groups. */
static const char *const not_groups[] = {
	"ok", "version", "uptime_ns", "counting_ns", "reset", NULL,
};

/* Gauges: no rate. */
static const char *const gauges[] = { "clients", "qps", "mrs", "qps_hot", "qps_sending", NULL };

static bool in(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (!strcmp(*list, s))
			return true;
	return false;
}

static bool any_nonzero(const json_t *o)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)o, key, v)
		if (json_is_object(v) ? any_nonzero(v) : json_integer_value(v) != 0)
			return true;
	return false;
}

static const char *title_of(const char *key)
{
	if (!strcmp(key, "rx_malformed_by_reason"))
		return "rx_malformed_by_reason (malformed packets)";
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		if (!strcmp(groups[i].key, key))
			return groups[i].title;
	return key;
}

struct walk {
	bool text_all;		/* -s: zeros too */
	bool rates;		/* a previous frame exists */
	double dt;
	unsigned hidden;	/* zero counters left out */
};

/* One counter group: a line per counter (text), a key per counter (JSON). */
static void print_group(struct walk *w, const char *key, const json_t *o, const json_t *prev)
{
	const char *k;
	json_t *v;

	if (!print_is_json() && !w->text_all && !any_nonzero(o)) {
		w->hidden++;
		return;
	}
	print_group_start(PRINT_RIGHT, key, title_of(key));
	json_object_foreach((json_t *)o, k, v) {
		const json_t *pv = json_object_get(prev, k);

		if (json_is_object(v)) {
			print_group(w, k, v, pv);
			continue;
		}
		if (!json_is_integer(v))
			continue;
		if (!print_is_json() && !w->text_all && !json_integer_value(v)) {
			w->hidden++;
			continue;
		}
		print_uint(0, k, k, (uint64_t)json_integer_value(v));
		if (w->rates && !in(gauges, k))
			print_rate(0, NULL, NULL, pv ? fmt_rate((uint64_t)json_integer_value(v),
				(uint64_t)json_integer_value(pv), w->dt) : 0);
	}
	print_group_end();
}

/* JSON only: the same shape with rates per second. */
static void print_rates(const struct walk *w, const char *key, const json_t *o, const json_t *prev)
{
	const char *k;
	json_t *v;

	print_group_start(0, key, NULL);
	json_object_foreach((json_t *)o, k, v) {
		const json_t *pv = json_object_get(prev, k);

		if (json_is_object(v))
			print_rates(w, k, v, pv);
		else if (json_is_integer(v) && !in(gauges, k))
			print_rate(0, k, NULL, pv ? fmt_rate((uint64_t)json_integer_value(v),
				(uint64_t)json_integer_value(pv), w->dt) : 0);
	}
	print_group_end();
}

/* Known groups in our order, then any newer daemon's extra ones. */
static void for_each_group(const json_t *r, const json_t *prev, struct walk *w,
			   void (*fn)(struct walk *w, const char *key, const json_t *o,
				      const json_t *prev))
{
	const char *k;
	json_t *v;

	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
		const json_t *g = json_object_get(r, groups[i].key);

		if (json_is_object(g))
			fn(w, groups[i].key, g, json_object_get(prev, groups[i].key));
	}
	json_object_foreach((json_t *)r, k, v) {
		bool known = in(not_groups, k);

		for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]) && !known; i++)
			known = !strcmp(groups[i].key, k);
		if (!known && json_is_object(v))
			fn(w, k, v, json_object_get(prev, k));
	}
}

static void rates_fn(struct walk *w, const char *key, const json_t *o, const json_t *prev)
{
	print_rates(w, key, o, prev);
}

static int counters_show(struct cli *c)
{
	struct walk w = { .text_all = c->po.stats };
	const json_t *prev;
	char d[FMT_LEN];
	json_t *r;
	int rc;

	rc = cli_no_more(c, help_counters);
	if (rc)
		return rc < 0 ? 0 : rc;
	r = cli_request(c, "counters", NULL);
	if (!r)
		return 1;
	prev = cli_prev(c, "counters", &w.dt);
	w.rates = prev && w.dt > 0;
	print_start(&c->po);
	print_uint(0, "uptime_ns", NULL, jget_u64(r, "uptime_ns"));
	print_uint(0, "counting_ns", NULL, jget_u64(r, "counting_ns"));
	print_bool(0, "reset", NULL, json_is_true(json_object_get(r, "reset")));
	print_line("counters since %s, %s ago%s\n",
		   json_is_true(json_object_get(r, "reset")) ? "the last reset" : "mrocd started",
		   fmt_duration(d, sizeof(d), jget_u64(r, "counting_ns")),
		   w.rates ? "; rates per second over the last refresh" : "");
	for_each_group(r, prev, &w, print_group);
	if (w.rates && print_is_json()) {
		print_group_start(0, "rates_per_s", NULL);
		for_each_group(r, prev, &w, rates_fn);
		print_group_end();
	}
	if (w.hidden)
		print_line("(%u zero counters not shown; -s shows them)\n", w.hidden);
	json_decref(r);
	return cli_print_end(c);
}

static int counters_reset(struct cli *c)
{
	json_t *r;
	int rc;

	rc = cli_no_more(c, help_counters);
	if (rc)
		return rc < 0 ? 0 : rc;
	r = cli_request(c, "counters_reset", NULL);
	if (!r)
		return 1;
	print_start(&c->po);
	print_bool(0, "reset", NULL, true);
	print_uint(0, "uptime_ns", NULL, jget_u64(r, "uptime_ns"));
	json_decref(r);
	return cli_print_end(c);
}

static int counters_prom(struct cli *c)
{
	int rc = cli_no_more(c, help_counters);

	if (rc)
		return rc < 0 ? 0 : rc;
	return counters_prometheus(c);
}

int cmd_counters(struct cli *c)
{
	static const struct cli_cmd cmds[] = {
		{ "show", counters_show, CLI_SHOW_ALIASES },
		{ "reset", counters_reset, NULL },
		{ "prometheus", counters_prom, "prom" },
		{ NULL, NULL, NULL },
	};

	return cli_dispatch(c, cmds, help_counters);
}
