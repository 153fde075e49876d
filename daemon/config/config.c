// SPDX-License-Identifier: MIT
/*
 * mrocd configuration (config.h): the key table, each type's parse, dump,
 * compare and default function (config_types[]), dump and reload diff.
 * Loading a file is config_load.c's, the checks across keys
 * config_check.c's, the scan for integer literals libconfig would read
 * wrong config_lit.c's (a key whose value came from one is refused here,
 * saying how to write it), errors config_err.c's, the engine mapping
 * config_engine.c's; one parse's state is config_parse.h.
 */
#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "config.h"
#include "config_parse.h"
#include "engine.h"
#include "log.h"

_Static_assert(sizeof(enum mrocd_backend) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum mrocd_xdp_mode) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum mrocd_zero_copy) == sizeof(int), "enums are stored as int");

/* ---- the key table -------------------------------------------------------- */

static const struct config_enum backend_names[] = {
	{ "auto", MROCD_BACKEND_AUTO }, { "af_xdp", MROCD_BACKEND_AF_XDP },
	{ "udp", MROCD_BACKEND_UDP }, { NULL, 0 },
};
static const struct config_enum xdp_mode_names[] = {
	{ "auto", MROCD_XDP_AUTO }, { "native", MROCD_XDP_NATIVE },
	{ "generic", MROCD_XDP_GENERIC }, { NULL, 0 },
};
static const struct config_enum zero_copy_names[] = {
	{ "auto", MROCD_ZC_AUTO }, { "on", MROCD_ZC_ON }, { "off", MROCD_ZC_OFF }, { NULL, 0 },
};
static const struct config_enum sec_mode_names[] = {
	{ "none", MROC_SEC_NONE }, { "token", MROC_SEC_TOKEN }, { "aead", MROC_SEC_AEAD },
	{ NULL, 0 },
};

static const struct config_enum sec_cookie_names[] = {
	{ "busy", 0 }, { "always", 1 }, { NULL, 0 },
};
static const struct config_enum mode_names[] = {
	{ "metaroce", MROC_MODE_METAROCE }, { "rocev2", MROC_MODE_ROCEV2 }, { NULL, 0 },
};
/* Printed names of log levels; log_level_parse reads them (and aliases). */
static const struct config_enum log_level_names[] = {
	{ "emerg", LOG_EMERG }, { "alert", LOG_ALERT }, { "crit", LOG_CRIT },
	{ "err", LOG_ERR }, { "warning", LOG_WARNING }, { "notice", LOG_NOTICE },
	{ "info", LOG_INFO }, { "debug", LOG_DEBUG }, { NULL, 0 },
};

#define FIELD(f)	.off = offsetof(struct mrocd_config, f), \
			.size = sizeof(((struct mrocd_config *)0)->f)
#define R		CONFIG_F_RELOAD
#define P2		CONFIG_F_POW2

#define K_UINT(n, f, lo, hi, d, fl, u) \
	{ .name = n, .type = CONFIG_T_UINT, .flags = fl, .min = lo, .max = hi, .def = d, \
	  FIELD(f), .unit = u }
#define K_BOOL(n, f, d, fl) \
	{ .name = n, .type = CONFIG_T_BOOL, .flags = fl, .max = 1, .def = d, FIELD(f) }
#define K_ENUM(n, f, tab, d, fl) \
	{ .name = n, .type = CONFIG_T_ENUM, .flags = fl, .def = d, .names = tab, FIELD(f) }
#define K_STR(n, f, lo, d, fl) \
	{ .name = n, .type = CONFIG_T_STRING, .flags = fl, .min = lo, \
	  .max = sizeof(((struct mrocd_config *)0)->f) - 1, .def_str = d, FIELD(f) }
#define K_TYPE(n, t, f, lo, hi, fl) \
	{ .name = n, .type = t, .flags = fl, .min = lo, .max = hi, FIELD(f) }

static const struct config_key config_keys[] = {
	{ .name = "daemon.log_level", .type = CONFIG_T_LOGLEVEL, .flags = R,
	  .min = LOG_EMERG, .max = LOG_DEBUG, .def = LOG_INFO, .names = log_level_names,
	  FIELD(daemon.log_level) },
	K_TYPE("daemon.cpu_affinity", CONFIG_T_CPU_LIST, daemon.cpu_affinity, 0, 1023, 0),
	K_UINT("daemon.workers", daemon.workers, 0, MROCD_MAX_WORKERS, 0, 0, NULL),
	K_BOOL("daemon.lone_home_port", daemon.lone_home_port, 1, 0),
	K_UINT("daemon.busy_poll_us", daemon.busy_poll_us, 0, 1000, 50, R, "us"),
	K_STR("daemon.control_socket", daemon.control_socket, 1, "/run/mroc/mrocd.sock", 0),
	K_STR("daemon.admin_socket", daemon.admin_socket, 1, "/run/mroc/admin.sock", 0),
	{ .name = "daemon.socket_mode", .type = CONFIG_T_MODE, .max = 0777, .def = 0660,
	  FIELD(daemon.socket_mode) },
	K_STR("daemon.socket_group", daemon.socket_group, 0, "", 0),
	K_STR("daemon.admin_group", daemon.admin_group, 0, "", 0),

	K_ENUM("network.backend", network.backend, backend_names, MROCD_BACKEND_AUTO, 0),
	K_TYPE("network.interfaces", CONFIG_T_IFACE_LIST, network.interfaces, 0, 255, 0),
	K_TYPE("network.address", CONFIG_T_ADDR, network.address, 0, 0, 0),
	K_UINT("network.udp_port", network.udp_port, 1, 65535, 4793, 0, NULL),
	K_ENUM("network.xdp_mode", network.xdp_mode, xdp_mode_names, MROCD_XDP_AUTO, 0),
	K_ENUM("network.zero_copy", network.zero_copy, zero_copy_names, MROCD_ZC_AUTO, 0),
	K_UINT("network.umem_frames", network.umem_frames, 1024, 262144, 8192, P2, "frames"),
	K_UINT("network.frame_size", network.frame_size, 2048, 4096, 2048, P2, "bytes"),
	K_UINT("network.ring_size", network.ring_size, 64, 16384, 2048, P2, "descriptors"),
	K_UINT("network.port_dead_ms", network.port_dead_ms, 0, 60000, 1000, 0, "ms"),
	K_UINT("network.mtu", network.mtu, 256, 8192, 1024, 0, "bytes"),
	K_TYPE("network.peers", CONFIG_T_ADDR_LIST, network.peers, 0, 0, 0),
	K_UINT("network.sport_min", network.sport_min, 1024, 65535, 49152, 0, NULL),
	K_UINT("network.sport_max", network.sport_max, 1024, 65535, 65535, 0, NULL),
	K_BOOL("network.allow_loopback", network.allow_loopback, 0, R),

	K_UINT("transport.paths", transport.paths, 1, MROC_MAX_PATHS, 4, R, NULL),
	K_ENUM("transport.mode", transport.mode, mode_names, MROC_MODE_METAROCE, R),
	K_UINT("transport.ack_every", transport.ack_every, 1, 64, 4, 0, "packets"),
	K_UINT("transport.ack_delay_us", transport.ack_delay_us, 0, 100000, 20, 0, "us"),
	K_UINT("transport.rto_min_us", transport.rto_min_us, 1, 10000000, 2000, 0, "us"),
	K_UINT("transport.rto_init_us", transport.rto_init_us, 1, 60000000, 10000, 0, "us"),
	K_UINT("transport.rto_max_ms", transport.rto_max_ms, 1, 600000, 1000, 0, "ms"),
	K_UINT("transport.dupthresh", transport.dupthresh, 1, 64, 3, 0, "packets"),
	K_UINT("transport.init_pwnd_pkts", transport.init_pwnd_pkts, 1, MROC_SACK_BITS, 16, 0,
	       "packets"),
	K_UINT("transport.max_pwnd_pkts", transport.max_pwnd_pkts, 1, MROC_SACK_BITS,
	       MROC_SACK_BITS, 0, "packets"),
	K_UINT("transport.peer_window_pkts", transport.peer_window_pkts, 0, 1048576, 512, 0,
	       "packets"),
	K_UINT("transport.peer_host_delay_us", transport.peer_host_delay_us, 0, 1000000, 100, 0,
	       "us"),
	K_UINT("transport.loss_md_pkts", transport.loss_md_pkts, 1, 256, 4, 0, "packets"),
	K_UINT("transport.delay_target_us", transport.delay_target_us, 0, 1000000, 50, 0, "us"),
	K_UINT("transport.hint_interval_us", transport.hint_interval_us, 1, 1000000, 200, 0,
	       "us"),
	K_UINT("transport.max_retx", transport.max_retx, 1, 255, 32, 0, NULL),
	K_UINT("transport.rnr_retry", transport.rnr_retry, 0, 7, 7, 0, NULL),
	K_UINT("transport.rnr_delay_us", transport.rnr_delay_us, 1, 10000000, 1000, 0, "us"),
	K_UINT("transport.dead_peer_ms", transport.dead_peer_ms, 1, 3600000, 3000, 0, "ms"),
	K_UINT("transport.keepalive_ms", transport.keepalive_ms, 0, 3600000, 1000, 0, "ms"),
	K_UINT("transport.cm_retries", transport.cm_retries, 1, 255, 8, 0, NULL),
	K_BOOL("transport.rate_hints", transport.rate_hints, 1, 0),
	K_BOOL("transport.repath", transport.repath, 1, 0),
	K_BOOL("transport.repath_spread", transport.repath_spread, 0, 0),
	K_UINT("transport.repath_round_rtts", transport.repath_round_rtts, 0, 1000, 0, 0, "RTTs"),
	K_BOOL("transport.rack_reo_srtt", transport.rack_reo_srtt, 0, 0),
	K_BOOL("transport.tail_hedge", transport.tail_hedge, 1, 0),
	K_BOOL("transport.merge_acks", transport.merge_acks, 0, 0),
	K_UINT("transport.split_unit", transport.split_unit, 0, MROC_SPLIT_MAX, 0, 0, "bytes"),
	K_UINT("transport.dup_max", transport.dup_max, 0, 65536, 4096, 0, "bytes"),
	K_UINT("transport.link_rate_gbps", transport.link_rate_gbps, 0, 10000, 0, 0, "Gbit/s"),

	K_UINT("limits.max_clients", limits.max_clients, 1, 4096, 64, R, NULL),
	K_UINT("limits.max_clients_per_uid", limits.max_clients_per_uid, 1, 4096, 64, R, NULL),
	K_UINT("limits.uid_share_percent", limits.uid_share_percent, 1, 100, 75, R, "percent"),
	K_UINT("limits.admin_reserve_percent", limits.admin_reserve_percent, 0, 90, 10, R,
	       "percent"),
	K_UINT("limits.max_qps_per_client", limits.max_qps_per_client, 1, 65534, 256, R, NULL),
	K_UINT("limits.max_mrs_per_client", limits.max_mrs_per_client, 1, 4096, 256, R, NULL),
	K_UINT("limits.max_mr_bytes_per_client", limits.max_mr_bytes_per_client, 4096,
	       1ull << 40, 1ull << 30, R, "bytes"),
	K_UINT("limits.max_locked_bytes_per_client", limits.max_locked_bytes_per_client, 4096,
	       1ull << 40, (1ull << 30) + (64ull << 20), R, "bytes"),
	K_UINT("limits.max_sq_depth", limits.max_sq_depth, 1, 65536, 1024, R, "work requests"),
	K_UINT("limits.max_rq_depth", limits.max_rq_depth, 1, 65536, 1024, R, "work requests"),
	K_UINT("limits.ctl_rate_per_client", limits.ctl_rate_per_client, 0, 1000000, 4000, R,
	       "requests a second"),
	K_UINT("limits.ctl_burst_per_client", limits.ctl_burst_per_client, 1, 1000000, 8192, R,
	       "requests"),
	K_UINT("limits.max_qps", limits.max_qps, 1, 65534, 8192, 0, NULL),
	K_UINT("limits.max_mrs", limits.max_mrs, 1, 4096, 4096, 0, NULL),

	K_ENUM("security.mode", security.mode, sec_mode_names, MROC_SEC_TOKEN, 0),
	K_STR("security.key_file", security.key_file, 0, "", 0),
	K_UINT("security.key_id", security.key_id, 0, UINT32_MAX, 0, 0, NULL),
	K_ENUM("security.cookies", security.cookies, sec_cookie_names, 0, 0),
};

#define NKEYS	(sizeof(config_keys) / sizeof(config_keys[0]))
_Static_assert(NKEYS <= 256, "CONFIG_MAX_KEYS (config_load.c)");


size_t config_key_count(void)
{
	return NKEYS;
}

const struct config_key *config_key_at(size_t i)
{
	return i < NKEYS ? &config_keys[i] : NULL;
}

const struct config_key *config_key_find(const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(config_keys[i].name, name))
			return &config_keys[i];
	return NULL;
}

const char *config_enum_name(const struct config_key *k, int value)
{
	for (const struct config_enum *e = k->names; e && e->name; e++)
		if (e->value == value)
			return e->name;
	return "?";
}

/* ---- per-type parse, dump, compare, default ---------------------------------- */

static void store_uint(void *field, size_t size, uint64_t v)
{
	switch (size) {
	case 1: { uint8_t x = (uint8_t)v; memcpy(field, &x, 1); break; }
	case 2: { uint16_t x = (uint16_t)v; memcpy(field, &x, 2); break; }
	case 4: { uint32_t x = (uint32_t)v; memcpy(field, &x, 4); break; }
	default: memcpy(field, &v, 8); break;
	}
}

static uint64_t load_uint(const void *field, size_t size)
{
	uint8_t b; uint16_t h; uint32_t w; uint64_t q;

	switch (size) {
	case 1: memcpy(&b, field, 1); return b;
	case 2: memcpy(&h, field, 2); return h;
	case 4: memcpy(&w, field, 4); return w;
	default: memcpy(&q, field, 8); return q;
	}
}

static int get_int(struct cparse *p, const config_setting_t *s, const char *key, int64_t *v)
{
	const struct badlit *b;
	int t = config_setting_type(s);

	if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
		return config_err(p, s, key, "expected an integer, got %s", config_type_name(s));
	b = config_badlit_find(p, s);
	if (b && b->wide)
		return config_err(p, s, key, "integer %s does not fit in 64 bits", b->text);
	if (b)
		return config_err(p, s, key, "integer %s does not fit in 32 bits, libconfig's default: "
			    "write %sL", b->text, b->text);
	*v = config_setting_get_int64(s);
	return 0;
}

static int get_uint_in(struct cparse *p, const config_setting_t *s, const char *key,
		       uint64_t min, uint64_t max, uint64_t *out)
{
	int64_t v = 0;
	int rc = get_int(p, s, key, &v);

	if (rc)
		return rc;
	if (v < 0 || (uint64_t)v < min || (uint64_t)v > max)
		return config_err(p, s, key, "must be %llu..%llu (got %lld)", (unsigned long long)min,
			    (unsigned long long)max, (long long)v);
	*out = (uint64_t)v;
	return 0;
}

static int get_string(struct cparse *p, const config_setting_t *s, const char *key,
		      const char **out)
{
	if (config_setting_type(s) != CONFIG_TYPE_STRING)
		return config_err(p, s, key, "expected a string, got %s", config_type_name(s));
	*out = config_setting_get_string(s);
	return 0;
}

/* Arrays and lists alike; a lone scalar is not a list. */
static int get_list(struct cparse *p, const config_setting_t *s, const char *key,
		    unsigned int max, const char *example)
{
	int n;

	if (!config_setting_is_array(s) && !config_setting_is_list(s))
		return config_err(p, s, key, "expected a list such as %s, got %s", example,
			    config_type_name(s));
	n = config_setting_length(s);
	if ((unsigned int)n > max)
		return config_err(p, s, key, "at most %u entries (got %d)", max, n);
	return 0;
}

static int parse_uint(struct cparse *p, const struct config_key *k, const config_setting_t *s,
		      const char *key, void *field)
{
	uint64_t v;
	int rc = get_uint_in(p, s, key, k->min, k->max, &v);

	if (rc)
		return rc;
	if ((k->flags & CONFIG_F_POW2) && (v & (v - 1)))
		return config_err(p, s, key, "must be a power of two in %llu..%llu (got %llu)",
			    (unsigned long long)k->min, (unsigned long long)k->max,
			    (unsigned long long)v);
	store_uint(field, k->size, v);
	return 0;
}

static int parse_bool(struct cparse *p, const struct config_key *k, const config_setting_t *s,
		      const char *key, void *field)
{
	if (config_setting_type(s) != CONFIG_TYPE_BOOL)
		return config_err(p, s, key, "expected true or false, got %s", config_type_name(s));
	*(bool *)field = config_setting_get_bool(s);
	return 0;
}

static int parse_enum(struct cparse *p, const struct config_key *k, const config_setting_t *s,
		      const char *key, void *field)
{
	char list[128];
	const char *v = "";
	size_t n = 0;
	int rc = get_string(p, s, key, &v);

	if (rc)
		return rc;
	for (const struct config_enum *e = k->names; e->name; e++) {
		if (!strcmp(v, e->name)) {
			memcpy(field, &e->value, sizeof(int));
			return 0;
		}
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s\"%s\"", n ? ", " : "",
				      e->name);
	}
	return config_err(p, s, key, "must be one of %s (got \"%s\")", list, v);
}

static int parse_loglevel(struct cparse *p, const struct config_key *k,
			  const config_setting_t *s, const char *key, void *field)
{
	const char *v = "";
	int rc = get_string(p, s, key, &v), level;

	if (rc)
		return rc;
	level = log_level_parse(v);
	if (level < 0)
		return config_err(p, s, key,
			    "must be one of \"err\", \"warning\", \"notice\", \"info\", \"debug\" "
			    "(got \"%s\")", v);
	memcpy(field, &level, sizeof(int));
	return 0;
}

static int parse_string(struct cparse *p, const struct config_key *k, const config_setting_t *s,
			const char *key, void *field)
{
	const char *v = "";
	int rc = get_string(p, s, key, &v);
	size_t len;

	if (rc)
		return rc;
	len = strlen(v);
	if (len < k->min || len > k->max)
		return config_err(p, s, key, "must be %llu..%llu characters long (got %zu)",
			    (unsigned long long)k->min, (unsigned long long)k->max, len);
	memcpy(field, v, len + 1);
	return 0;
}

static int parse_mode(struct cparse *p, const struct config_key *k, const config_setting_t *s,
		      const char *key, void *field)
{
	const char *v = "";
	unsigned long m;
	uint32_t out;

	if (config_setting_type(s) == CONFIG_TYPE_INT || config_setting_type(s) == CONFIG_TYPE_INT64)
		return config_err(p, s, key, "must be an octal string such as \"0660\" "
			    "(libconfig reads 0660 as the decimal 660)");
	if (get_string(p, s, key, &v))
		return -EINVAL;
	m = strtoul(v, NULL, 8);
	if (!*v || strlen(v) > 4 || strspn(v, "01234567") != strlen(v) || m > k->max)
		return config_err(p, s, key, "must be an octal string from \"0000\" to \"%04llo\" "
			    "(got \"%s\")", (unsigned long long)k->max, v);
	out = (uint32_t)m;
	memcpy(field, &out, sizeof(out));
	return 0;
}

static int get_addr(struct cparse *p, const config_setting_t *s, const char *key,
		    struct mroc_addr *a, bool empty_ok)
{
	const char *v = "";
	int rc = get_string(p, s, key, &v);

	if (rc)
		return rc;
	if (!*v && empty_ok) {
		memset(a, 0, sizeof(*a));
		return 0;
	}
	if (addr_parse(v, a))
		return config_err(p, s, key, "not an IPv4 or IPv6 address (got \"%s\")", v);
	return 0;
}

static int parse_addr(struct cparse *p, const struct config_key *k, const config_setting_t *s,
		      const char *key, void *field)
{
	return get_addr(p, s, key, field, true);
}

static int parse_addr_list(struct cparse *p, const struct config_key *k,
			   const config_setting_t *s, const char *key, void *field)
{
	struct mrocd_addr_list *l = field;
	char ek[128], buf[MROC_ADDR_STRLEN];
	int rc = get_list(p, s, key, MROCD_MAX_PEERS, "[ \"192.0.2.2\" ]");

	l->n = 0;
	for (int i = 0; !rc && i < config_setting_length(s); i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned int)i);

		snprintf(ek, sizeof(ek), "%s[%d]", key, i);
		rc = get_addr(p, e, ek, &l->v[i], false);
		for (int j = 0; !rc && j < i; j++)
			if (addr_eq(&l->v[i], &l->v[j]))
				rc = config_err(p, e, ek, "%s is listed twice (also %s[%d])",
					  addr_str(&l->v[i], buf, sizeof(buf)), key, j);
		l->n = (uint32_t)i + !rc;
	}
	return rc;
}

/* A list of distinct integers in min..max, into v[], count into *n. */
static int parse_uint_set(struct cparse *p, const config_setting_t *s, const char *key,
			  uint64_t min, uint64_t max, unsigned int cap, uint16_t *v,
			  uint32_t *n, const char *example)
{
	char ek[128];
	int rc = get_list(p, s, key, cap, example);

	*n = 0;
	for (int i = 0; !rc && i < config_setting_length(s); i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned int)i);
		uint64_t x;

		snprintf(ek, sizeof(ek), "%s[%d]", key, i);
		rc = get_uint_in(p, e, ek, min, max, &x);
		for (int j = 0; !rc && j < i; j++)
			if (v[j] == x)
				rc = config_err(p, e, ek, "%llu is listed twice (also %s[%d])",
					  (unsigned long long)x, key, j);
		v[i] = (uint16_t)x;
		*n = (uint32_t)i + !rc;
	}
	return rc;
}

static int parse_cpu_list(struct cparse *p, const struct config_key *k,
			  const config_setting_t *s, const char *key, void *field)
{
	struct mrocd_cpu_list *l = field;

	return parse_uint_set(p, s, key, k->min, k->max, MROCD_MAX_CPUS, l->v, &l->n,
			      "[ 0, 1 ]");
}

static int check_ifname(struct cparse *p, const config_setting_t *s, const char *key,
			const char *name)
{
	size_t len = strlen(name);

	if (!len || len > IFNAMSIZ - 1)
		return config_err(p, s, key, "interface name must be 1..%d characters (got \"%s\")",
			    IFNAMSIZ - 1, name);
	if (!strcmp(name, ".") || !strcmp(name, "..") || strpbrk(name, "/: \t\n"))
		return config_err(p, s, key, "\"%s\" is not a valid interface name", name);
	return 0;
}

/* { name = "eth1"; queues = [ 0, 1 ]; address = "10.1.0.2"; } */
static int parse_iface_group(struct cparse *p, const struct config_key *k,
			     const config_setting_t *g, const char *key, struct mrocd_iface *ifc)
{
	static const char *const members[] = { "name", "queues", "address" };
	char mk[160];
	const char *name = NULL;
	int rc = 0;

	ifc->nqueues = 0;
	for (int i = 0; !rc && i < config_setting_length(g); i++) {
		const config_setting_t *m = config_setting_get_elem(g, (unsigned int)i);
		const char *mn = config_setting_name(m), *hint;

		snprintf(mk, sizeof(mk), "%s.%s", key, mn);
		if (!strcmp(mn, "name")) {
			rc = get_string(p, m, mk, &name);
			rc = rc ? rc : check_ifname(p, m, mk, name);
		} else if (!strcmp(mn, "queues")) {
			rc = parse_uint_set(p, m, mk, k->min, k->max, MROCD_MAX_QUEUES, ifc->queues,
					    &ifc->nqueues, "[ 0, 1 ]");
			if (!rc && !ifc->nqueues)
				rc = config_err(p, m, mk, "needs at least one queue (or leave it out: "
					  "queue 0)");
		} else if (!strcmp(mn, "address")) {
			rc = get_addr(p, m, mk, &ifc->address, false);
		} else if ((hint = config_suggest(mn, members, 3))) {
			rc = config_err(p, m, NULL, "unknown key '%s' (did you mean '%s.%s'?)", mk, key,
				  hint);
		} else {
			rc = config_err(p, m, NULL, "unknown key '%s' (an interface has name, queues and address)",
				  mk);
		}
	}
	if (rc)
		return rc;
	if (!name)
		return config_err(p, g, key, "missing name = \"...\";");
	snprintf(ifc->name, sizeof(ifc->name), "%s", name);
	if (!config_setting_get_member(g, "queues")) {
		ifc->nqueues = 1;
		ifc->queues[0] = 0;
	}
	return 0;
}

static int parse_iface_list(struct cparse *p, const struct config_key *k,
			    const config_setting_t *s, const char *key, void *field)
{
	struct mrocd_iface_list *l = field;
	char ek[128];
	int rc = get_list(p, s, key, MROCD_MAX_IFACES,
			  "( \"eth0\", { name = \"eth1\"; queues = [ 0, 1 ]; } )");

	l->n = 0;
	for (int i = 0; !rc && i < config_setting_length(s); i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned int)i);
		struct mrocd_iface *ifc = &l->v[i];
		const char *name;

		snprintf(ek, sizeof(ek), "%s[%d]", key, i);
		memset(ifc, 0, sizeof(*ifc));
		if (config_setting_type(e) == CONFIG_TYPE_STRING) {
			name = config_setting_get_string(e);
			rc = check_ifname(p, e, ek, name);
			snprintf(ifc->name, sizeof(ifc->name), "%s", name);
			ifc->nqueues = 1;
		} else if (config_setting_is_group(e)) {
			rc = parse_iface_group(p, k, e, ek, ifc);
		} else {
			rc = config_err(p, e, ek, "expected \"name\" or { name = \"...\"; queues = [ ... ]; }"
				  ", got %s", config_type_name(e));
		}
		for (int j = 0; !rc && j < i; j++)
			if (!strcmp(l->v[j].name, ifc->name))
				rc = config_err(p, e, ek, "interface %s is listed twice (also %s[%d]): "
					  "list all its queues in one entry", ifc->name, key, j);
		l->n = (uint32_t)i + !rc;
	}
	return rc;
}

/* ---- dump ---- */

static void dump_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void dump_uint(FILE *f, const struct config_key *k, const void *field)
{
	uint64_t v = load_uint(field, k->size);

	fprintf(f, "%llu%s", (unsigned long long)v, v > INT32_MAX ? "L" : "");
}

static void dump_bool(FILE *f, const struct config_key *k, const void *field)
{
	fputs(*(const bool *)field ? "true" : "false", f);
}

static void dump_enum(FILE *f, const struct config_key *k, const void *field)
{
	int v;

	memcpy(&v, field, sizeof(v));
	dump_str(f, config_enum_name(k, v));
}

static void dump_string(FILE *f, const struct config_key *k, const void *field)
{
	dump_str(f, field);
}

static void dump_mode(FILE *f, const struct config_key *k, const void *field)
{
	fprintf(f, "\"%04llo\"", (unsigned long long)load_uint(field, sizeof(uint32_t)));
}

static void dump_addr(FILE *f, const struct config_key *k, const void *field)
{
	char buf[MROC_ADDR_STRLEN];
	const struct mroc_addr *a = field;

	dump_str(f, a->family ? addr_str(a, buf, sizeof(buf)) : "");
}

static void dump_addr_list(FILE *f, const struct config_key *k, const void *field)
{
	const struct mrocd_addr_list *l = field;
	char buf[MROC_ADDR_STRLEN];

	fputs("[", f);
	for (uint32_t i = 0; i < l->n; i++) {
		fputs(i ? ", " : " ", f);
		dump_str(f, addr_str(&l->v[i], buf, sizeof(buf)));
	}
	fputs(" ]", f);
}

static void dump_u16s(FILE *f, const uint16_t *v, uint32_t n)
{
	fputs("[", f);
	for (uint32_t i = 0; i < n; i++)
		fprintf(f, "%s%u", i ? ", " : " ", v[i]);
	fputs(" ]", f);
}

static void dump_cpu_list(FILE *f, const struct config_key *k, const void *field)
{
	const struct mrocd_cpu_list *l = field;

	dump_u16s(f, l->v, l->n);
}

static void dump_iface_list(FILE *f, const struct config_key *k, const void *field)
{
	const struct mrocd_iface_list *l = field;

	fputs("(", f);
	for (uint32_t i = 0; i < l->n; i++) {
		fputs(i ? ", { name = " : " { name = ", f);
		dump_str(f, l->v[i].name);
		fputs("; queues = ", f);
		dump_u16s(f, l->v[i].queues, l->v[i].nqueues);
		if (l->v[i].address.family) {
			char buf[MROC_ADDR_STRLEN];

			fputs("; address = ", f);
			dump_str(f, addr_str(&l->v[i].address, buf, sizeof(buf)));
		}
		fputs("; }", f);
	}
	fputs(" )", f);
}

/* ---- compare ---- */

static bool eq_bytes(const struct config_key *k, const void *a, const void *b)
{
	return !memcmp(a, b, k->size);
}

static bool eq_string(const struct config_key *k, const void *a, const void *b)
{
	return !strcmp(a, b);
}

static bool eq_addr(const struct config_key *k, const void *a, const void *b)
{
	return addr_eq(a, b);
}

static bool eq_addr_list(const struct config_key *k, const void *a, const void *b)
{
	const struct mrocd_addr_list *x = a, *y = b;

	if (x->n != y->n)
		return false;
	for (uint32_t i = 0; i < x->n; i++)
		if (!addr_eq(&x->v[i], &y->v[i]))
			return false;
	return true;
}

static bool eq_cpu_list(const struct config_key *k, const void *a, const void *b)
{
	const struct mrocd_cpu_list *x = a, *y = b;

	return x->n == y->n && !memcmp(x->v, y->v, x->n * sizeof(x->v[0]));
}

static bool eq_iface_list(const struct config_key *k, const void *a, const void *b)
{
	const struct mrocd_iface_list *x = a, *y = b;

	if (x->n != y->n)
		return false;
	for (uint32_t i = 0; i < x->n; i++)
		if (strcmp(x->v[i].name, y->v[i].name) || x->v[i].nqueues != y->v[i].nqueues ||
		    memcmp(x->v[i].queues, y->v[i].queues, x->v[i].nqueues * sizeof(uint16_t)) ||
		    !addr_eq(&x->v[i].address, &y->v[i].address))
			return false;
	return true;
}

struct config_type_ops {
	int (*parse)(struct cparse *p, const struct config_key *k, const config_setting_t *s,
		     const char *key, void *field);
	void (*dump)(FILE *f, const struct config_key *k, const void *field);
	bool (*equal)(const struct config_key *k, const void *a, const void *b);
};

static const struct config_type_ops config_types[] = {
	[CONFIG_T_UINT]		= { parse_uint, dump_uint, eq_bytes },
	[CONFIG_T_BOOL]		= { parse_bool, dump_bool, eq_bytes },
	[CONFIG_T_ENUM]		= { parse_enum, dump_enum, eq_bytes },
	[CONFIG_T_LOGLEVEL]	= { parse_loglevel, dump_enum, eq_bytes },
	[CONFIG_T_STRING]	= { parse_string, dump_string, eq_string },
	[CONFIG_T_MODE]		= { parse_mode, dump_mode, eq_bytes },
	[CONFIG_T_ADDR]		= { parse_addr, dump_addr, eq_addr },
	[CONFIG_T_ADDR_LIST]	= { parse_addr_list, dump_addr_list, eq_addr_list },
	[CONFIG_T_CPU_LIST]	= { parse_cpu_list, dump_cpu_list, eq_cpu_list },
	[CONFIG_T_IFACE_LIST]	= { parse_iface_list, dump_iface_list, eq_iface_list },
};

int config_key_parse(struct cparse *p, const struct config_key *k, const config_setting_t *s,
		     const char *key, struct mrocd_config *c)
{
	return config_types[k->type].parse(p, k, s, key, (char *)c + k->off);
}

void config_defaults(struct mrocd_config *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < NKEYS; i++) {
		const struct config_key *k = &config_keys[i];
		void *field = (char *)out + k->off;
		int v = (int)k->def;

		switch (k->type) {
		case CONFIG_T_UINT:
		case CONFIG_T_MODE:
			store_uint(field, k->size, k->def);
			break;
		case CONFIG_T_BOOL:
			*(bool *)field = k->def;
			break;
		case CONFIG_T_ENUM:
		case CONFIG_T_LOGLEVEL:
			memcpy(field, &v, sizeof(v));
			break;
		case CONFIG_T_STRING:
			snprintf(field, k->size, "%s", k->def_str);
			break;
		default:		/* addresses and lists: unset, empty */
			break;
		}
	}
}

/* ---- dump, diff, reload ---------------------------------------------------------- */

int config_dump(FILE *f, const struct mrocd_config *c)
{
	size_t glen = 0;

	for (size_t i = 0; i < NKEYS; i++) {
		const struct config_key *k = &config_keys[i];
		const char *dot = strchr(k->name, '.');

		if (!glen || strncmp(k->name, config_keys[i - 1].name, glen + 1)) {
			if (glen)
				fputs("};\n\n", f);
			glen = (size_t)(dot - k->name);
			fprintf(f, "%.*s = {\n", (int)glen, k->name);
		}
		fprintf(f, "\t%s = ", dot + 1);
		config_types[k->type].dump(f, k, (const char *)c + k->off);
		fputs(";\n", f);
	}
	if (glen)
		fputs("};\n", f);
	return ferror(f) ? -EIO : 0;
}

static size_t diff(const struct mrocd_config *a, const struct mrocd_config *b, bool reloadable,
		   const char **names, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < NKEYS; i++) {
		const struct config_key *k = &config_keys[i];

		if (!!(k->flags & CONFIG_F_RELOAD) != reloadable ||
		    config_types[k->type].equal(k, (const char *)a + k->off,
						(const char *)b + k->off))
			continue;
		if (n < max)
			names[n] = k->name;
		n++;
	}
	return n;
}

size_t config_diff_restart(const struct mrocd_config *old, const struct mrocd_config *new,
			   const char **names, size_t max)
{
	return diff(old, new, false, names, max);
}

size_t config_diff_reload(const struct mrocd_config *old, const struct mrocd_config *new,
			  const char **names, size_t max)
{
	return diff(old, new, true, names, max);
}

size_t config_reload_keys(const char **names, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < NKEYS; i++) {
		if (!(config_keys[i].flags & CONFIG_F_RELOAD))
			continue;
		if (n < max)
			names[n] = config_keys[i].name;
		n++;
	}
	return n;
}

void config_apply_reload(struct mrocd_config *running, const struct mrocd_config *next)
{
	for (size_t i = 0; i < NKEYS; i++) {
		const struct config_key *k = &config_keys[i];

		if (k->flags & CONFIG_F_RELOAD)
			memcpy((char *)running + k->off, (const char *)next + k->off, k->size);
	}
}
