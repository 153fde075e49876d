// SPDX-License-Identifier: MIT
/*
 * mrocd configuration (daemon/config.[ch]): the shipped conf/mrocd.conf,
 * defaults, the bounds of every key in the table, unknown keys, types,
 * enums, addresses, interfaces, literals libconfig would cut, checks across
 * keys, syntax errors, missing files, dump round trip, the reload diff and
 * the engine mapping.
 *
 * conf/mrocd.conf is found through $MROC_CONF, else relative to the current
 * folder (make check runs from the top of the tree), else relative to this
 * source file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "engine.h"

static char tmpdir[64];
static char tmpconf[128];

static int setup(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/mroc-test-config.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(tmpconf, sizeof(tmpconf), "%s/t.conf", tmpdir);
	return 0;
}

static int teardown(void **state)
{
	char inc[160];

	snprintf(inc, sizeof(inc), "%s/inc.conf", tmpdir);
	unlink(inc);
	snprintf(inc, sizeof(inc), "%s/keys", tmpdir);
	unlink(inc);
	unlink(tmpconf);
	rmdir(tmpdir);
	return 0;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Loading fails with -EINVAL and a message containing every string given. */
static void expect_err(const char *text, ...)
{
	struct mrocd_config c;
	char err[512];
	const char *want;
	va_list ap;
	int rc;

	write_file(tmpconf, text);
	rc = config_load(tmpconf, &c, err, sizeof(err));
	if (rc != -EINVAL)
		fail_msg("expected -EINVAL, got %d for:\n%s\nmessage: %s", rc, text, err);
	va_start(ap, text);
	while ((want = va_arg(ap, const char *)))
		if (!strstr(err, want))
			fail_msg("message \"%s\" lacks \"%s\" for:\n%s", err, want, text);
	va_end(ap);
}

static void expect_ok(const char *text, struct mrocd_config *c)
{
	char err[512];
	int rc;

	write_file(tmpconf, text);
	rc = config_load(tmpconf, c, err, sizeof(err));
	if (rc)
		fail_msg("expected success, got %d: %s\nfor:\n%s", rc, err, text);
}

static size_t ndiff(const struct mrocd_config *a, const struct mrocd_config *b)
{
	return config_diff_restart(a, b, NULL, 0) + config_diff_reload(a, b, NULL, 0);
}

/* "L3" -> "t.conf:3:" with the full path. */
static const char *at_line(int line)
{
	static char buf[4][192];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s:%d:", tmpconf, line);
	return buf[i];
}

/* ---- the shipped file and the defaults ----------------------------------------- */

static const char *shipped_conf(void)
{
	static char path[512];
	const char *env = getenv("MROC_CONF"), *slash;

	if (env)
		return env;
	if (!access("conf/mrocd.conf", R_OK))
		return "conf/mrocd.conf";
	slash = strrchr(__FILE__, '/');
	snprintf(path, sizeof(path), "%.*s/../../conf/mrocd.conf",
		 slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".");
	return path;
}

static void test_shipped_conf(void **state)
{
	struct mrocd_config c, d;
	char err[512] = "";
	const char *names[8];
	int rc;

	memset(&c, 0xa5, sizeof(c));
	rc = config_load(shipped_conf(), &c, err, sizeof(err));
	if (rc)
		fail_msg("%s: %d %s", shipped_conf(), rc, err);
	/* The shipped file states every default: it loads to exactly config_defaults. */
	config_defaults(&d);
	size_t n = config_diff_restart(&d, &c, names, 8);
	for (size_t i = 0; i < n && i < 8; i++)
		print_message("differs from the default: %s\n", names[i]);
	assert_int_equal(n, 0);
	assert_int_equal(config_diff_reload(&d, &c, names, 8), 0);
}

/* Every key of the table appears in the shipped file (it documents them all). */
static void test_shipped_conf_lists_every_key(void **state)
{
	FILE *f = fopen(shipped_conf(), "r");
	static char text[64 * 1024];
	size_t n;

	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	for (size_t i = 0; i < config_key_count(); i++) {
		const char *key = strchr(config_key_at(i)->name, '.') + 1;
		char want[80];

		char derived[80];

		/* A key whose default is derived from others is shown commented out. */
		snprintf(want, sizeof(want), "\t%s = ", key);
		snprintf(derived, sizeof(derived), "\t#%s = ", key);
		if (!strstr(text, want) && !strstr(text, derived))
			fail_msg("conf/mrocd.conf does not set %s", config_key_at(i)->name);
	}
}

static void test_defaults(void **state)
{
	struct mrocd_config c;

	config_defaults(&c);
	assert_int_equal(c.daemon.log_level, LOG_INFO);
	assert_int_equal(c.daemon.busy_poll_us, 50);
	assert_string_equal(c.daemon.control_socket, "/run/mroc/mrocd.sock");
	assert_string_equal(c.daemon.admin_socket, "/run/mroc/admin.sock");
	assert_int_equal(c.daemon.socket_mode, 0660);
	assert_string_equal(c.daemon.socket_group, "");
	assert_int_equal(c.daemon.cpu_affinity.n, 0);
	assert_int_equal(c.network.backend, MROCD_BACKEND_AUTO);
	assert_int_equal(c.network.interfaces.n, 0);
	assert_int_equal(c.network.address.family, 0);
	assert_int_equal(c.network.udp_port, 4793);
	assert_int_equal(c.network.xdp_mode, MROCD_XDP_AUTO);
	assert_int_equal(c.network.zero_copy, MROCD_ZC_AUTO);
	assert_int_equal(c.network.umem_frames, 8192);
	assert_int_equal(c.network.frame_size, 2048);
	assert_int_equal(c.network.ring_size, 2048);
	assert_int_equal(c.network.mtu, 1024);
	assert_int_equal(c.network.peers.n, 0);
	assert_int_equal(c.network.sport_min, 49152);
	assert_int_equal(c.network.sport_max, 65535);
	assert_int_equal(c.transport.paths, 4);
	assert_int_equal(c.transport.mode, MROC_MODE_METAROCE);
	assert_int_equal(c.transport.keepalive_ms, 1000);
	assert_true(c.transport.rate_hints);
	assert_true(c.transport.repath);
	assert_int_equal(c.limits.max_mr_bytes_per_client, 1ull << 30);
	assert_int_equal(c.limits.max_locked_bytes_per_client, (1ull << 30) + (64ull << 20));
	assert_int_equal(c.limits.max_qps, 8192);
}

/* An empty file (and one with empty groups) gives the defaults. */
/* Left out, network.umem_frames holds every socket's fill and TX rings. */
static void test_umem_sized_from_sockets(void **state)
{
	struct mrocd_config c;

	(void)state;
	expect_ok("network = { ring_size = 8192; };\n", &c);
	assert_int_equal(c.network.umem_frames, 16384);
	expect_ok("network = { interfaces = ( \"p1\", \"p2\", \"p3\", \"p4\" ); };\n", &c);
	assert_int_equal(c.network.umem_frames, 16384);
	expect_ok("network = { interfaces = ( { name = \"p1\"; queues = [ 0, 1, 2 ]; } ); };\n", &c);
	assert_int_equal(c.network.umem_frames, 16384);
	expect_ok("network = { backend = \"udp\"; ring_size = 16384; };\n", &c);
	assert_int_equal(c.network.umem_frames, 32768);
}

static void test_empty_file(void **state)
{
	struct mrocd_config c, d;

	config_defaults(&d);
	expect_ok("", &c);
	assert_int_equal(ndiff(&c, &d), 0);
	expect_ok("# nothing\ndaemon = { };\nnetwork = { };\ntransport = { };\nlimits = { };\n", &c);
	assert_int_equal(ndiff(&c, &d), 0);
}

/* The defaults map to the engine's own defaults (but the seed, set by the daemon). */
static void test_engine_defaults(void **state)
{
	struct mrocd_config c;
	struct engine_config got, want;

	config_defaults(&c);
	assert_int_equal(config_engine(&c, &got), 0);
	engine_config_default(&want);
	/* Table sizes are the daemon's own: many clients' QPs, not one program's (issue #10). */
	assert_int_equal(got.max_qps, 8192);
	assert_int_equal(got.max_mrs, 4096);
	assert_int_equal(got.mtu, want.mtu);
	assert_int_equal(got.link_rate_bps, want.link_rate_bps);
	assert_int_equal(got.ack_every, want.ack_every);
	assert_int_equal(got.ack_delay_ns, want.ack_delay_ns);
	assert_int_equal(got.rto_init_ns, want.rto_init_ns);
	assert_int_equal(got.rto_min_ns, want.rto_min_ns);
	assert_int_equal(got.rto_max_ns, want.rto_max_ns);
	assert_int_equal(got.dupthresh, want.dupthresh);
	assert_int_equal(got.init_pwnd_pkts, want.init_pwnd_pkts);
	assert_int_equal(got.max_pwnd_pkts, want.max_pwnd_pkts);
	assert_int_equal(got.loss_md_pkts, want.loss_md_pkts);
	assert_int_equal(got.hint_interval_ns, want.hint_interval_ns);
	assert_int_equal(got.max_retx, want.max_retx);
	assert_int_equal(got.rnr_retry, want.rnr_retry);
	assert_int_equal(got.rnr_delay_ns, want.rnr_delay_ns);
	assert_int_equal(got.dead_peer_ns, want.dead_peer_ns);
	assert_int_equal(got.keepalive_ns, want.keepalive_ns);
	assert_int_equal(got.cm_retries, want.cm_retries);
	assert_int_equal(got.rate_hints, want.rate_hints);
	assert_int_equal(got.repath, want.repath);
	assert_int_equal(got.sport_min, want.sport_min);
	assert_int_equal(got.sport_max, want.sport_max);
	assert_int_equal(got.seed, want.seed);
}

static void test_engine_mapping(void **state)
{
	struct mrocd_config c;
	struct engine_config e;

	expect_ok("network = { mtu = 1500; sport_min = 2000; sport_max = 3000; };\n"
		  "transport = { ack_every = 8; ack_delay_us = 30; rto_min_us = 500;\n"
		  "  rto_init_us = 4000; rto_max_ms = 250; dupthresh = 5; init_pwnd_pkts = 8;\n"
		  "  max_pwnd_pkts = 128; loss_md_pkts = 2; hint_interval_us = 300; max_retx = 9;\n"
		  "  rnr_retry = 3; rnr_delay_us = 700; dead_peer_ms = 5000; keepalive_ms = 250;\n"
		  "  cm_retries = 4; rate_hints = false; repath = false; link_rate_gbps = 25; };\n"
		  "limits = { max_qps = 77; max_mrs = 66; max_qps_per_client = 7;\n"
		  "  max_mrs_per_client = 6; };\n", &c);
	assert_int_equal(config_engine(&c, &e), 0);
	assert_int_equal(e.mtu, 1500);
	assert_int_equal(e.sport_min, 2000);
	assert_int_equal(e.sport_max, 3000);
	assert_int_equal(e.ack_every, 8);
	assert_int_equal(e.ack_delay_ns, 30000);
	assert_int_equal(e.rto_min_ns, 500000);
	assert_int_equal(e.rto_init_ns, 4000000);
	assert_int_equal(e.rto_max_ns, 250000000);
	assert_int_equal(e.dupthresh, 5);
	assert_int_equal(e.init_pwnd_pkts, 8);
	assert_int_equal(e.max_pwnd_pkts, 128);
	assert_int_equal(e.loss_md_pkts, 2);
	assert_int_equal(e.hint_interval_ns, 300000);
	assert_int_equal(e.max_retx, 9);
	assert_int_equal(e.rnr_retry, 3);
	assert_int_equal(e.rnr_delay_ns, 700000);
	assert_int_equal(e.dead_peer_ns, 5000000000ull);
	assert_int_equal(e.keepalive_ns, 250000000);
	assert_int_equal(e.cm_retries, 4);
	assert_false(e.rate_hints);
	assert_false(e.repath);
	assert_int_equal(e.link_rate_bps, 25000000000ull);
	assert_int_equal(e.max_qps, 77);
	assert_int_equal(e.max_mrs, 66);
}

/* ---- every key's bounds ------------------------------------------------------------ */

/* "network.udp_port" -> "network = {\n\tudp_port = VALUE;\n};\n": the key is on line 3. */
static void key_file(char *buf, size_t len, const char *key, const char *value)
{
	const char *dot = strchr(key, '.');

	snprintf(buf, len, "# bounds\n%.*s = {\n\t%s = %s;\n};\n", (int)(dot - key), key, dot + 1,
		 value);
}

static void int_literal(char *buf, size_t len, long long v)
{
	snprintf(buf, len, "%lld%s", v, v > INT32_MAX || v < INT32_MIN ? "L" : "");
}

static void expect_key_err(const char *key, const char *value, const char *what)
{
	char text[512], kq[96];

	key_file(text, sizeof(text), key, value);
	snprintf(kq, sizeof(kq), "key '%s%s'", key, what ? what : "");
	expect_err(text, at_line(3), kq, NULL);
}

/* A bad value quoted back stays on one line: no newline or escape from the file (fuzz_config). */
static void test_error_one_line(void **state)
{
	struct mrocd_config c;
	char err[512];

	(void)state;
	write_file(tmpconf, "daemon = {\n socket_mode = \"07\\n<3>forged\\x1b[2J\";\n};\n");
	assert_int_equal(config_load(tmpconf, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "key 'daemon.socket_mode'"));
	for (const char *e = err; *e; e++)
		assert_true((unsigned char)*e >= 0x20 && *e != 0x7f);
}

static void test_uint_bounds(void **state)
{
	struct mrocd_config c, d;
	char text[512], v[64];
	unsigned int tested = 0;

	config_defaults(&d);
	for (size_t i = 0; i < config_key_count(); i++) {
		const struct config_key *k = config_key_at(i);

		if (k->type != CONFIG_T_UINT)
			continue;
		tested++;
		int_literal(v, sizeof(v), (long long)k->max + 1);
		expect_key_err(k->name, v, NULL);
		int_literal(v, sizeof(v), (long long)k->min - 1);
		expect_key_err(k->name, v, NULL);
		/* A power of two key refuses its neighbours inside the range too. */
		if ((k->flags & CONFIG_F_POW2) && k->min + 1 < k->max) {
			int_literal(v, sizeof(v), (long long)k->min + 1);
			expect_key_err(k->name, v, NULL);
		}
		/* The default, written out, is accepted and changes nothing. */
		int_literal(v, sizeof(v), (long long)k->def);
		key_file(text, sizeof(text), k->name, v);
		expect_ok(text, &c);
		assert_int_equal(ndiff(&c, &d), 0);
	}
	assert_true(tested >= 30);
}

/* The extremes of each range load when the other keys allow them. */
static void test_uint_extremes_accepted(void **state)
{
	struct mrocd_config c;

	expect_ok("network = { udp_port = 1; umem_frames = 262144; frame_size = 4096;\n"
		  "  ring_size = 64; mtu = 256; sport_min = 1024; sport_max = 1027; };\n"
		  "transport = { paths = 4; rnr_retry = 0; keepalive_ms = 0; link_rate_gbps = 10000;\n"
		  "  rto_min_us = 1; rto_init_us = 1; rto_max_ms = 1; };\n"
		  "limits = { max_mr_bytes_per_client = 1099511627776L; max_qps = 65534;\n"
		  "  max_qps_per_client = 65534; max_sq_depth = 65536; };\n"
		  "daemon = { busy_poll_us = 0; };\n", &c);
	assert_int_equal(c.network.udp_port, 1);
	assert_int_equal(c.network.umem_frames, 262144);
	assert_int_equal(c.network.ring_size, 64);
	assert_int_equal(c.limits.max_mr_bytes_per_client, 1ull << 40);
	assert_int_equal(c.limits.max_sq_depth, 65536);
	expect_ok("network = { frame_size = 2048; ring_size = 16384; umem_frames = 32768;\n"
		  "  sport_min = 65535; sport_max = 65535; mtu = 1662; };\n"
		  "transport = { paths = 1; };\nsecurity = { mode = \"none\"; };\n", &c);
	assert_int_equal(c.network.ring_size, 16384);
	expect_ok("network = { backend = \"udp\"; mtu = 8192; };\n", &c);
	assert_int_equal(c.network.mtu, 8192);
}

static void test_other_bounds(void **state)
{
	char long_path[160], v[200];

	/* Strings: empty and one character too long. */
	memset(long_path, 'a', 108);
	long_path[0] = '/';
	long_path[108] = '\0';
	snprintf(v, sizeof(v), "\"%s\"", long_path);
	expect_key_err("daemon.control_socket", v, NULL);
	expect_key_err("daemon.admin_socket", v, NULL);
	expect_key_err("daemon.control_socket", "\"\"", NULL);
	memset(long_path, 'g', 64);
	long_path[64] = '\0';
	snprintf(v, sizeof(v), "\"%s\"", long_path);
	expect_key_err("daemon.socket_group", v, NULL);
	/* Socket mode: octal strings up to 0777, not integers. */
	expect_key_err("daemon.socket_mode", "\"1000\"", NULL);
	expect_key_err("daemon.socket_mode", "\"0778\"", NULL);
	expect_key_err("daemon.socket_mode", "\"\"", NULL);
	expect_key_err("daemon.socket_mode", "\"rw\"", NULL);
	expect_err("daemon = {\n socket_mode = 0660;\n};\n", at_line(2), "key 'daemon.socket_mode'",
		   "octal", NULL);
	/* List elements: CPUs 0..1023, queues 0..255. */
	expect_key_err("daemon.cpu_affinity", "[ 0, 1024 ]", "[1]");
	expect_key_err("daemon.cpu_affinity", "[ -1 ]", "[0]");
	expect_key_err("network.interfaces", "( { name = \"eth0\"; queues = [ 256 ]; } )",
		       "[0].queues[0]");
	expect_key_err("network.interfaces", "( { name = \"eth0\"; queues = [ -1 ]; } )",
		       "[0].queues[0]");
	expect_key_err("network.interfaces", "( { name = \"eth0\"; address = \"10.1.0.300\"; } )",
		       "[0].address");
	expect_key_err("network.interfaces", "( { name = \"eth0\"; address = \"\"; } )",
		       "[0].address");
	expect_key_err("network.interfaces", "( { name = \"eth0\"; address = 10; } )",
		       "[0].address");
}

static void test_valid_values(void **state)
{
	struct mrocd_config c;

	expect_ok("daemon = { log_level = \"debug\"; socket_mode = \"0600\"; socket_group = \"mroc\";\n"
		  "  cpu_affinity = [ 3, 1 ]; };\n"
		  "network = { backend = \"af_xdp\"; xdp_mode = \"generic\"; zero_copy = \"off\";\n"
		  "  interfaces = ( \"veth0\", { name = \"veth1\"; queues = [ 2, 0 ]; },\n"
		  "                 { name = \"eth-longname-15\"; } );\n"
		  "  address = \"fd00::1\"; peers = [ \"fd00::2\", \"fd00::3\" ]; };\n"
		  "transport = { mode = \"rocev2\"; };\n", &c);
	assert_int_equal(c.daemon.log_level, LOG_DEBUG);
	assert_int_equal(c.daemon.socket_mode, 0600);
	assert_string_equal(c.daemon.socket_group, "mroc");
	assert_int_equal(c.daemon.cpu_affinity.n, 2);
	assert_int_equal(c.daemon.cpu_affinity.v[0], 3);
	assert_int_equal(c.daemon.cpu_affinity.v[1], 1);
	assert_int_equal(c.network.backend, MROCD_BACKEND_AF_XDP);
	assert_int_equal(c.network.xdp_mode, MROCD_XDP_GENERIC);
	assert_int_equal(c.network.zero_copy, MROCD_ZC_OFF);
	assert_int_equal(c.network.interfaces.n, 3);
	assert_string_equal(c.network.interfaces.v[0].name, "veth0");
	assert_int_equal(c.network.interfaces.v[0].nqueues, 1);
	assert_int_equal(c.network.interfaces.v[0].queues[0], 0);
	assert_string_equal(c.network.interfaces.v[1].name, "veth1");
	assert_int_equal(c.network.interfaces.v[1].nqueues, 2);
	assert_int_equal(c.network.interfaces.v[1].queues[0], 2);
	assert_int_equal(c.network.interfaces.v[1].queues[1], 0);
	assert_string_equal(c.network.interfaces.v[2].name, "eth-longname-15");
	assert_int_equal(c.network.interfaces.v[2].nqueues, 1);
	assert_int_equal(c.network.address.family, AF_INET6);
	assert_int_equal(c.network.peers.n, 2);
	assert_int_equal(c.transport.mode, MROC_MODE_ROCEV2);
	/* Arrays of strings work for interfaces too; lists for peers. */
	expect_ok("network = { interfaces = [ \"a\", \"b\" ]; peers = ( \"10.0.0.2\" );\n"
		  "  address = \"10.0.0.1\"; };\n", &c);
	assert_int_equal(c.network.interfaces.n, 2);
	assert_int_equal(c.network.peers.v[0].family, AF_INET);
	assert_int_equal(c.network.interfaces.v[0].address.family, 0);
	/* A port's own address, IPv4 or IPv6 like network.address. */
	expect_ok("network = { address = \"fd00::1\";\n"
		  "  interfaces = ( { name = \"p1\"; address = \"fd01::2\"; }, \"p2\",\n"
		  "                 { name = \"p3\"; queues = [ 1 ]; address = \"fd03::2\"; } ); };\n",
		  &c);
	assert_int_equal(c.network.interfaces.v[0].address.family, AF_INET6);
	assert_int_equal(c.network.interfaces.v[0].address.bytes[1], 0x01);
	assert_int_equal(c.network.interfaces.v[1].address.family, 0);
	assert_int_equal(c.network.interfaces.v[2].address.family, AF_INET6);
	assert_int_equal(c.network.interfaces.v[2].queues[0], 1);
	expect_ok("network = { interfaces = ( { name = \"p1\"; address = \"10.1.0.2\"; } ); };\n",
		  &c);
	assert_int_equal(c.network.interfaces.v[0].address.family, AF_INET);
	/* Log level aliases. */
	expect_ok("daemon = { log_level = \"warn\"; };\n", &c);
	assert_int_equal(c.daemon.log_level, LOG_WARNING);
}

/* ---- what is refused ------------------------------------------------------------- */

static void test_unknown_keys(void **state)
{
	expect_err("network = {\n\tudp_prot = 4793;\n};\n", at_line(2),
		   "unknown key 'network.udp_prot'", "did you mean 'network.udp_port'", NULL);
	expect_err("transport = {\n\n\tudp_port = 4793;\n};\n", at_line(3),
		   "unknown key 'transport.udp_port'", "did you mean 'network.udp_port'", NULL);
	expect_err("netwrok = {\n};\n", at_line(1), "unknown key 'netwrok'", "'network'", NULL);
	expect_err("udp_port = 4793;\n", at_line(1), "unknown key 'udp_port'",
		   "'network.udp_port'", NULL);
	expect_err("# a\nfoo = 1;\n", at_line(2), "unknown key 'foo'", NULL);
	expect_err("limits = { zzz_completely_unknown = 1; };\n", at_line(1),
		   "unknown key 'limits.zzz_completely_unknown'", NULL);
	expect_err("network = {\n interfaces = ( { name = \"a\";\n quuees = [ 0 ]; } );\n};\n",
		   at_line(3), "unknown key 'network.interfaces[0].quuees'", "queues", NULL);
	expect_err("network = {\n interfaces = ( { name = \"a\"; foo = 1; } );\n};\n",
		   at_line(2), "unknown key 'network.interfaces[0].foo'", NULL);
	/* A group where a key belongs, a key where a group belongs. */
	expect_err("network = 5;\n", at_line(1), "key 'network'", "expected a group", NULL);
	/* Duplicate keys are a libconfig parse error. */
	expect_err("network = {\n udp_port = 1;\n udp_port = 2;\n};\n", at_line(3),
		   "\"udp_port\" is set twice", NULL);
}

static void test_wrong_types(void **state)
{
	expect_err("network = {\n udp_port = \"4793\";\n};\n", at_line(2),
		   "key 'network.udp_port'", "expected an integer, got a string", NULL);
	expect_err("network = {\n udp_port = 4793.0;\n};\n", at_line(2),
		   "key 'network.udp_port'", "got a float", NULL);
	expect_err("network = {\n udp_port = true;\n};\n", at_line(2), "key 'network.udp_port'",
		   NULL);
	expect_err("transport = {\n rate_hints = 1;\n};\n", at_line(2),
		   "key 'transport.rate_hints'", "true or false", NULL);
	expect_err("network = {\n backend = 1;\n};\n", at_line(2), "key 'network.backend'",
		   "expected a string", NULL);
	expect_err("network = {\n peers = \"10.0.0.1\";\n};\n", at_line(2), "key 'network.peers'",
		   "expected a list", NULL);
	expect_err("network = {\n interfaces = \"eth0\";\n};\n", at_line(2),
		   "key 'network.interfaces'", "expected a list", NULL);
	expect_err("network = {\n interfaces = ( 5 );\n};\n", at_line(2),
		   "key 'network.interfaces[0]'", NULL);
	expect_err("network = {\n interfaces = ( { queues = [ 0 ]; } );\n};\n", at_line(2),
		   "key 'network.interfaces[0]'", "missing name", NULL);
	expect_err("daemon = {\n cpu_affinity = ( 1, \"2\" );\n};\n", at_line(2),
		   "key 'daemon.cpu_affinity[1]'", "expected an integer", NULL);
	expect_err("daemon = {\n cpu_affinity = { a = 1; };\n};\n", at_line(2),
		   "key 'daemon.cpu_affinity'", "got a group", NULL);
	expect_err("daemon = {\n control_socket = 5;\n};\n", at_line(2),
		   "key 'daemon.control_socket'", "expected a string", NULL);
	expect_err("daemon = {\n log_level = 7;\n};\n", at_line(2), "key 'daemon.log_level'",
		   NULL);
}

static void test_bad_enums(void **state)
{
	expect_err("network = {\n backend = \"xdp\";\n};\n", at_line(2), "key 'network.backend'",
		   "\"auto\", \"af_xdp\", \"udp\"", "(got \"xdp\")", NULL);
	expect_err("network = {\n xdp_mode = \"drv\";\n};\n", at_line(2), "key 'network.xdp_mode'",
		   NULL);
	expect_err("network = {\n zero_copy = \"yes\";\n};\n", at_line(2),
		   "key 'network.zero_copy'", NULL);
	expect_err("transport = {\n mode = \"MetaRoCE\";\n};\n", at_line(2),
		   "key 'transport.mode'", NULL);
	expect_err("daemon = {\n log_level = \"verbose\";\n};\n", at_line(2),
		   "key 'daemon.log_level'", "\"debug\"", NULL);
}

static void test_bad_addresses(void **state)
{
	expect_err("network = {\n address = \"10.0.0.256\";\n};\n", at_line(2),
		   "key 'network.address'", "not an IPv4 or IPv6 address", NULL);
	expect_err("network = {\n address = \"eth0\";\n};\n", at_line(2), "key 'network.address'",
		   NULL);
	expect_err("network = {\n peers = [ \"10.0.0.2\",\n \"fd00::zz\" ];\n};\n", at_line(3),
		   "key 'network.peers[1]'", NULL);
	expect_err("network = {\n peers = [ \"\" ];\n};\n", at_line(2), "key 'network.peers[0]'",
		   NULL);
	expect_err("network = {\n peers = [ \"10.0.0.2\", \"10.0.0.2\" ];\n};\n", at_line(2),
		   "key 'network.peers[1]'", "listed twice", NULL);
	expect_err("network = {\n address = \"10.0.0.1\";\n peers = [ \"fd00::2\" ];\n};\n",
		   at_line(3), "key 'network.peers'", "family", NULL);
}

static void test_bad_interfaces(void **state)
{
	expect_err("network = {\n interfaces = ( \"\" );\n};\n", at_line(2),
		   "key 'network.interfaces[0]'", "1..15", NULL);
	expect_err("network = {\n interfaces = ( \"sixteen-chars-xx\" );\n};\n", at_line(2),
		   "key 'network.interfaces[0]'", "1..15", NULL);
	expect_err("network = {\n interfaces = ( \"a/b\" );\n};\n", at_line(2),
		   "key 'network.interfaces[0]'", "not a valid interface name", NULL);
	expect_err("network = {\n interfaces = ( \"eth0\",\n { name = \"eth0\"; } );\n};\n",
		   at_line(3), "key 'network.interfaces[1]'", "listed twice", NULL);
	expect_err("network = {\n interfaces = ( { name = \"eth0\";\n queues = [ ]; } );\n};\n",
		   at_line(3), "key 'network.interfaces[0].queues'", "at least one", NULL);
	expect_err("network = {\n interfaces = ( { name = \"eth0\"; queues = [ 1, 1 ]; } );\n};\n",
		   at_line(2), "key 'network.interfaces[0].queues[1]'", "listed twice", NULL);
	expect_err("network = {\n interfaces = ( { name = 5; } );\n};\n", at_line(2),
		   "key 'network.interfaces[0].name'", NULL);
	expect_err("daemon = {\n cpu_affinity = [ 1, 2, 1 ];\n};\n", at_line(2),
		   "key 'daemon.cpu_affinity[2]'", "listed twice", NULL);

	/* Too many entries. */
	char text[4096];
	size_t n = (size_t)snprintf(text, sizeof(text), "network = {\n interfaces = (");
	for (int i = 0; i <= MROCD_MAX_IFACES; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s\"if%d\"", i ? ", " : " ", i);
	snprintf(text + n, sizeof(text) - n, " );\n};\n");
	expect_err(text, at_line(2), "key 'network.interfaces'", "at most 16", NULL);
}

/* libconfig 1.5 keeps the low 32 bits of a big literal without the L suffix. */
static void test_wide_literals(void **state)
{
	struct mrocd_config c;

	expect_err("limits = {\n max_mr_bytes_per_client = 4294967296;\n};\n", at_line(2),
		   "key 'limits.max_mr_bytes_per_client'", "write 4294967296L", NULL);
	/* A group on one line: the key the literal belongs to, not the line's first. */
	expect_err("limits = { max_qps = 100; max_mr_bytes_per_client = 4294967296; };\n",
		   at_line(1), "key 'limits.max_mr_bytes_per_client'", "write 4294967296L", NULL);
	expect_err("daemon = { cpu_affinity = [ 1, 4294967296 ]; };\n", at_line(1),
		   "key 'daemon.cpu_affinity[1]'", "write 4294967296L", NULL);
	/* 2^32 + 4793 would otherwise read as 4793. */
	expect_err("network = {\n udp_port = 4294972089;\n};\n", at_line(2),
		   "key 'network.udp_port'", "32 bits", NULL);
	expect_err("network = {\n udp_port = 0x100000001;\n};\n", at_line(2),
		   "key 'network.udp_port'", "32 bits", NULL);
	expect_err("limits = {\n max_mr_bytes_per_client = 99999999999999999999L;\n};\n",
		   at_line(2), "key 'limits.max_mr_bytes_per_client'", "64 bits", NULL);
	expect_err("daemon = {\n cpu_affinity = [ 1,\n 4294967297 ];\n};\n", at_line(3),
		   "key 'daemon.cpu_affinity[1]'", "32 bits", NULL);
	/* With the suffix, or in a comment or string, it is fine. */
	expect_ok("limits = {\n max_mr_bytes_per_client = 4294967296L; # not 4294967296\n};\n"
		  "daemon = { socket_group = \"g4294967296\"; }; // 99999999999\n"
		  "/* 4294967296\n 5000000000 */\n", &c);
	assert_int_equal(c.limits.max_mr_bytes_per_client, 1ull << 32);
	expect_ok("network = { udp_port = 0x12B9; };\n", &c);
	assert_int_equal(c.network.udp_port, 4793);
	expect_err("network = {\n mtu = 2e3;\n};\n", at_line(2), "key 'network.mtu'",
		   "got a float", NULL);
}

/* n ports with an address each, at network.mtu 256: 14 fit a CONNECT_REQ, 15 do not. */
static void port_addrs_conf(char *buf, size_t len, unsigned n)
{
	size_t off = (size_t)snprintf(buf, len, "network = {\n mtu = 256;\n interfaces = (");

	for (unsigned i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, len - off,
					"%s { name = \"p%u\"; address = \"10.%u.0.2\"; }",
					i ? "," : "", i, i + 1);
	snprintf(buf + off, len - off, " );\n};\n");
}

static void port_addrs_vs_mtu(void)
{
	struct mrocd_config c;
	char text[2048];

	port_addrs_conf(text, sizeof(text), 14);
	expect_ok(text, &c);
	assert_int_equal(c.network.interfaces.n, 14);
	port_addrs_conf(text, sizeof(text), 15);
	expect_err(text, "key 'network.mtu'", "announces 15 port addresses", NULL);
}

static void test_cross_checks(void **state)
{
	expect_err("network = {\n sport_min = 5000;\n sport_max = 4000;\n};\n", at_line(2),
		   "key 'network.sport_min'", "network.sport_max", NULL);
	/* Only sport_max set: the message points at it. */
	expect_err("network = {\n\n sport_max = 40000;\n};\n", at_line(3),
		   "key 'network.sport_max'", NULL);
	expect_err("network = {\n sport_min = 5000;\n sport_max = 5001;\n};\n", at_line(3),
		   "key 'network.sport_max'", "transport.paths", NULL);
	expect_err("network = {\n udp_port = 50000;\n};\n", at_line(2), "key 'network.udp_port'",
		   "inside", NULL);
	expect_err("transport = {\n rto_min_us = 20000;\n};\n", at_line(2),
		   "key 'transport.rto_min_us'", "rto_init_us", NULL);
	expect_err("transport = {\n rto_init_us = 2000000;\n};\n", at_line(2),
		   "key 'transport.rto_init_us'", "rto_max_ms", NULL);
	/* init_pwnd_pkts is left at 16: the message points at what the file sets. */
	expect_err("transport = {\n max_pwnd_pkts = 8;\n};\n", at_line(2),
		   "key 'transport.max_pwnd_pkts'", "init_pwnd_pkts", NULL);
	expect_err("transport = {\n max_pwnd_pkts = 8;\n init_pwnd_pkts = 9;\n};\n", at_line(3),
		   "key 'transport.init_pwnd_pkts'", NULL);
	expect_err("transport = {\n keepalive_ms = 3000;\n};\n", at_line(2),
		   "key 'transport.keepalive_ms'", "dead_peer_ms", NULL);
	expect_err("network = {\n backend = \"af_xdp\";\n};\n", at_line(2),
		   "key 'network.backend'", "interfaces", NULL);
	expect_err("network = {\n mtu = 1663;\n};\nsecurity = { mode = \"none\"; };\n",
		   at_line(2), "key 'network.mtu'", "at most 1662", NULL);
	/* The tag of "token" (the default) takes 8 bytes of the frame. */
	expect_err("network = {\n mtu = 1655;\n};\n", at_line(2), "key 'network.mtu'",
		   "at most 1654", NULL);
	expect_err("network = {\n frame_size = 4096;\n mtu = 3711;\n};\n", at_line(3),
		   "key 'network.mtu'", "at most 3702", NULL);
	expect_err("network = {\n ring_size = 8192;\n umem_frames = 8192;\n};\n", at_line(3),
		   "key 'network.umem_frames'", "at least 16384", NULL);
	expect_err("network = {\n umem_frames = 2048;\n};\n", at_line(2),
		   "key 'network.umem_frames'", "at least 4096", NULL);
	/* Four ports with the default rings: what start-up refuses, the check refuses too. */
	expect_err("network = {\n interfaces = ( \"p1\", \"p2\", \"p3\", \"p4\" );\n"
		   " umem_frames = 8192;\n};\n", at_line(3), "key 'network.umem_frames'",
		   "4 AF_XDP sockets", "at least 16384", NULL);
	expect_err("network = {\n interfaces = ( { name = \"p1\"; queues = [ 0, 1, 2 ]; } );\n"
		   " ring_size = 4096;\n umem_frames = 16384;\n};\n", at_line(4),
		   "key 'network.umem_frames'", "3 AF_XDP sockets", "at least 24576", NULL);
	expect_err("limits = {\n max_qps_per_client = 10000;\n};\n", at_line(2),
		   "key 'limits.max_qps_per_client'", "limits.max_qps", NULL);
	expect_err("limits = {\n max_mrs = 100;\n};\n", at_line(2), "key 'limits.max_mrs", NULL);
	expect_err("daemon = {\n admin_socket = \"/run/mroc/mrocd.sock\";\n};\n", at_line(2),
		   "key 'daemon.admin_socket'", NULL);
	/* Per-port addresses: of the host's one family, each port its own. */
	expect_err("network = {\n address = \"10.9.0.2\";\n interfaces = ( { name = \"a\";\n"
		   " address = \"fd01::2\"; } );\n};\n", "key 'network.interfaces'",
		   "interfaces[0].address fd01::2", "family of 10.9.0.2", NULL);
	expect_err("network = {\n interfaces = ( { name = \"a\"; address = \"10.1.0.2\"; },\n"
		   " \"b\", { name = \"c\"; address = \"fd03::2\"; } );\n};\n",
		   "interfaces[2].address fd03::2", "family of 10.1.0.2", NULL);
	expect_err("network = {\n interfaces = ( { name = \"a\"; address = \"10.1.0.2\"; },\n"
		   " { name = \"b\"; address = \"10.1.0.2\"; } );\n};\n",
		   "interfaces[1].address 10.1.0.2 is also network.interfaces[0]'s", NULL);
	port_addrs_vs_mtu();
}

static void test_syntax_error(void **state)
{
	expect_err("# one\nnetwork = {\n udp_port = ;\n};\n", at_line(3), "syntax error", NULL);
	expect_err("network = {\n udp_port = 1\n mtu = 1024;\n", NULL);
	expect_err("network = { interfaces = [ \"a\", 1 ]; };\n", at_line(1), NULL);
	expect_err("@include \"missing.conf\"\n", at_line(1), "include", NULL);
	/* libconfig's "duplicate setting name" gets the name (issue 15). */
	expect_err("transport = {\n paths = 4; paths = 2;\n};\n", at_line(2),
		   "\"paths\" is set twice", NULL);
	expect_err("transport = { paths = 4; };\n# x = 1\ntransport = { mode = \"metaroce\"; };\n",
		   at_line(3), "\"transport\" is set twice", NULL);
	expect_err("network = {\n udp_port = 4793;\n mtu = 1500; udp_port = 4800;\n};\n", at_line(3),
		   "\"udp_port\" is set twice", NULL);
}

static void test_include(void **state)
{
	struct mrocd_config c;
	char inc[160];

	/* @include is relative to the including file, and line numbers name the right file. */
	snprintf(inc, sizeof(inc), "%s/inc.conf", tmpdir);
	write_file(inc, "network = {\n udp_port = 4800;\n};\n");
	expect_ok("@include \"inc.conf\"\n", &c);
	assert_int_equal(c.network.udp_port, 4800);
	write_file(inc, "network = {\n\n udp_port = 0;\n};\n");
	expect_err("@include \"inc.conf\"\n", "inc.conf:3:", "key 'network.udp_port'", NULL);
	write_file(inc, "network = {\n udp_port = 4294972089;\n};\n");
	expect_err("@include \"inc.conf\"\n", "inc.conf:2:", "32 bits", NULL);
}

static void test_missing_file(void **state)
{
	struct mrocd_config c;
	char err[256];

	assert_int_equal(config_load("/nonexistent/mrocd.conf", &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/mrocd.conf"));
	assert_int_equal(config_load(tmpdir, &c, err, sizeof(err)), -EISDIR);
}

static void test_failure_leaves_output(void **state)
{
	struct mrocd_config c, d;
	char err[8];

	config_defaults(&c);
	d = c;
	write_file(tmpconf, "network = { udp_port = 0; };\n");
	/* A short buffer is cut, not overrun; no buffer at all is fine too. */
	assert_int_equal(config_load(tmpconf, &c, err, sizeof(err)), -EINVAL);
	assert_int_equal(strlen(err), sizeof(err) - 1);
	assert_int_equal(config_load(tmpconf, &c, NULL, 0), -EINVAL);
	assert_memory_equal(&c, &d, sizeof(c));
}

/* ---- dump, diff and reload --------------------------------------------------------- */

static const char *const busy_conf =
	"daemon = { log_level = \"debug\"; cpu_affinity = [ 1, 0 ]; busy_poll_us = 7;\n"
	"  control_socket = \"/tmp/a \\\"quoted\\\" sock\"; admin_socket = \"/tmp/b.sock\";\n"
	"  socket_mode = \"0600\"; socket_group = \"wheel\"; };\n"
	"network = { backend = \"udp\"; interfaces = ( \"v0\", { name = \"v1\"; queues = [ 3, 1 ];\n"
	"  address = \"fd01::2\"; } );\n"
	"  address = \"fd00::1\"; udp_port = 5000; xdp_mode = \"native\"; zero_copy = \"on\";\n"
	"  umem_frames = 4096; frame_size = 4096; ring_size = 512; mtu = 4000;\n"
	"  peers = [ \"fd00::2\", \"fd00::3\" ]; sport_min = 10000; sport_max = 10100; };\n"
	"transport = { paths = 8; mode = \"rocev2\"; ack_every = 2; keepalive_ms = 0;\n"
	"  rate_hints = false; link_rate_gbps = 100; };\n"
	"limits = { max_clients = 3; max_mr_bytes_per_client = 8589934592L; max_qps = 2048; };\n";

static void test_dump_round_trip(void **state)
{
	struct mrocd_config a, b, d;
	char err[512];
	FILE *f;

	expect_ok(busy_conf, &a);
	config_defaults(&d);
	/* Most keys differ from the defaults, so the round trip means something. */
	assert_true(ndiff(&a, &d) >= 25);
	f = fopen(tmpconf, "w");
	assert_non_null(f);
	assert_int_equal(config_dump(f, &a), 0);
	fclose(f);
	if (config_load(tmpconf, &b, err, sizeof(err)))
		fail_msg("dump does not load: %s", err);
	assert_int_equal(ndiff(&a, &b), 0);
	assert_string_equal(b.daemon.control_socket, "/tmp/a \"quoted\" sock");
	assert_int_equal(b.limits.max_mr_bytes_per_client, 8589934592ull);

	/* The defaults dump to a file that loads back to the defaults. */
	f = fopen(tmpconf, "w");
	assert_int_equal(config_dump(f, &d), 0);
	fclose(f);
	assert_int_equal(config_load(tmpconf, &b, err, sizeof(err)), 0);
	assert_int_equal(ndiff(&d, &b), 0);
}

static bool has_name(const char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

static void test_diff_restart(void **state)
{
	struct mrocd_config old, new, run;
	const char *names[64];
	size_t n;

	config_defaults(&old);
	new = old;
	assert_int_equal(config_diff_restart(&old, &new, names, 64), 0);
	assert_int_equal(config_diff_reload(&old, &new, names, 64), 0);

	expect_ok("daemon = { log_level = \"debug\"; busy_poll_us = 10; };\n"
		  "network = { udp_port = 5000; peers = [ \"10.0.0.9\" ];\n"
		  "  interfaces = ( \"eth1\" ); };\n"
		  "transport = { paths = 2; rto_min_us = 1000; };\n"
		  "limits = { max_clients = 5; max_qps = 2000; };\n", &new);
	n = config_diff_restart(&old, &new, names, 64);
	assert_int_equal(n, 5);
	assert_string_equal(names[0], "network.interfaces");	/* table order */
	assert_true(has_name(names, n, "network.udp_port"));
	assert_true(has_name(names, n, "network.peers"));	/* links are made at start */
	assert_true(has_name(names, n, "transport.rto_min_us"));
	assert_true(has_name(names, n, "limits.max_qps"));
	n = config_diff_reload(&old, &new, names, 64);
	assert_int_equal(n, 4);
	assert_true(has_name(names, n, "daemon.log_level"));
	assert_true(has_name(names, n, "daemon.busy_poll_us"));
	assert_true(has_name(names, n, "transport.paths"));
	assert_true(has_name(names, n, "limits.max_clients"));
	/* max bounds what is written, not the count. */
	names[1] = "untouched";
	assert_int_equal(config_diff_restart(&old, &new, names, 1), 5);
	assert_string_equal(names[1], "untouched");
	assert_int_equal(config_diff_restart(&old, &new, NULL, 0), 5);

	/* Queues of an interface count as a change of network.interfaces. */
	run = new;
	run.network.interfaces.v[0].queues[0] = 1;
	n = config_diff_restart(&new, &run, names, 64);
	assert_int_equal(n, 1);
	assert_string_equal(names[0], "network.interfaces");

	/* Applying a reload takes the reloadable keys only. */
	run = old;
	config_apply_reload(&run, &new);
	assert_int_equal(run.daemon.log_level, LOG_DEBUG);
	assert_int_equal(run.daemon.busy_poll_us, 10);
	assert_int_equal(run.network.peers.n, 0);	/* a restart key */
	assert_int_equal(run.transport.paths, 2);
	assert_int_equal(run.limits.max_clients, 5);
	assert_int_equal(run.network.udp_port, 4793);
	assert_int_equal(run.network.interfaces.n, 0);
	assert_int_equal(run.limits.max_qps, 8192);
	assert_int_equal(config_diff_reload(&run, &new, NULL, 0), 0);
	assert_int_equal(config_diff_restart(&run, &old, NULL, 0), 0);
}

static void test_key_table(void **state)
{
	const struct config_key *k;

	for (size_t i = 0; i < config_key_count(); i++) {
		k = config_key_at(i);
		assert_ptr_equal(config_key_find(k->name), k);
		assert_non_null(strchr(k->name, '.'));
		assert_true(k->min <= k->max || k->type == CONFIG_T_ADDR ||
			    k->type == CONFIG_T_ADDR_LIST);
		if (k->type == CONFIG_T_UINT)
			assert_true(k->def >= k->min && k->def <= k->max);
	}
	assert_null(config_key_at(config_key_count()));
	assert_null(config_key_find("network.nope"));
	k = config_key_find("network.backend");
	assert_non_null(k);
	assert_string_equal(config_enum_name(k, MROCD_BACKEND_UDP), "udp");
	assert_string_equal(config_enum_name(k, 99), "?");
	assert_true(config_key_find("daemon.log_level")->flags & CONFIG_F_RELOAD);
	assert_false(config_key_find("network.udp_port")->flags & CONFIG_F_RELOAD);
}

#define KEY_A	"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

/* A config of security.mode "aead" with keys in tmpdir/keys (mode `mode`). */
static void aead_conf(char *text, size_t len, const char *keys, mode_t mode, const char *extra)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/keys", tmpdir);
	write_file(path, keys);
	assert_int_equal(chmod(path, mode), 0);
	snprintf(text, len, "security = {\n mode = \"aead\";\n key_file = \"%s\";\n%s};\n",
		 path, extra);
}

/* security: "aead" needs a key file of mode 0600 with good keys, holding key_id. */
static void test_security(void **state)
{
	struct mrocd_config c;
	char text[512];

	expect_ok("", &c);
	assert_int_equal(c.security.mode, MROC_SEC_TOKEN);
	expect_ok("security = { mode = \"none\"; };\n", &c);
	assert_int_equal(c.security.mode, MROC_SEC_NONE);
	expect_err("security = {\n mode = \"tls\";\n};\n", "key 'security.mode'", NULL);
	expect_err("security = {\n mode = \"aead\";\n};\n", "key 'security.mode'", "key_file",
		   "absolute path", NULL);
	aead_conf(text, sizeof(text), "# two keys\n7 " KEY_A "\n\n9 " KEY_A " # next\n", 0600, "");
	expect_ok(text, &c);
	assert_int_equal(c.security.mode, MROC_SEC_AEAD);
	aead_conf(text, sizeof(text), "7 " KEY_A "\n", 0644, "");
	expect_err(text, "key 'security.key_file'", "mode 0644", "0600", NULL);
	aead_conf(text, sizeof(text), "7 " KEY_A "\n", 0640, "");
	expect_err(text, "key 'security.key_file'", "mode 0640", NULL);
	aead_conf(text, sizeof(text), "7 " KEY_A "\n8 00112233\n", 0600, "");
	expect_err(text, "key 'security.key_file'", "keys:2:", "64 hex digits", NULL);
	aead_conf(text, sizeof(text), "7 " KEY_A "\n7 " KEY_A "\n", 0600, "");
	expect_err(text, "keys:2:", "used twice", NULL);
	aead_conf(text, sizeof(text), "0 " KEY_A "\n", 0600, "");
	expect_err(text, "keys:1:", "key id", NULL);
	aead_conf(text, sizeof(text), "# none\n", 0600, "");
	expect_err(text, "no key", NULL);
	aead_conf(text, sizeof(text), "7 " KEY_A "\n", 0600, " key_id = 8;\n");
	expect_err(text, "key 'security.key_id'", "not in", NULL);
	aead_conf(text, sizeof(text), "7 " KEY_A "\n8 " KEY_A "\n", 0600, " key_id = 8;\n");
	expect_ok(text, &c);
	assert_int_equal(c.security.key_id, 8);
	/* aead's trailer is 36 bytes of the frame */
	expect_err("network = {\n mtu = 1627;\n};\nsecurity = { mode = \"aead\"; };\n",
		   at_line(2), "key 'network.mtu'", "at most 1626", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_conf),
		cmocka_unit_test(test_shipped_conf_lists_every_key),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_umem_sized_from_sockets),
		cmocka_unit_test(test_empty_file),
		cmocka_unit_test(test_engine_defaults),
		cmocka_unit_test(test_engine_mapping),
		cmocka_unit_test(test_error_one_line),
		cmocka_unit_test(test_uint_bounds),
		cmocka_unit_test(test_uint_extremes_accepted),
		cmocka_unit_test(test_other_bounds),
		cmocka_unit_test(test_valid_values),
		cmocka_unit_test(test_unknown_keys),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_bad_enums),
		cmocka_unit_test(test_bad_addresses),
		cmocka_unit_test(test_bad_interfaces),
		cmocka_unit_test(test_wide_literals),
		cmocka_unit_test(test_cross_checks),
		cmocka_unit_test(test_syntax_error),
		cmocka_unit_test(test_include),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_failure_leaves_output),
		cmocka_unit_test(test_dump_round_trip),
		cmocka_unit_test(test_diff_restart),
		cmocka_unit_test(test_key_table),
		cmocka_unit_test(test_security),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
