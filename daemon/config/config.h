/* SPDX-License-Identifier: MIT */
/*
 * mrocd configuration: a libconfig file (conf/mrocd.conf documents every
 * key) read into a typed struct through one table of keys.  Each key has a
 * name ("group.key"), a type, bounds, a default, and a flag saying whether
 * SIGHUP can change it in a running daemon; the table drives loading,
 * defaults, config_dump and the reload diff.
 *
 * Everything the file can be wrong about is an error, never a warning:
 * unknown keys (with a "did you mean" for typos), wrong types, values out of
 * range, bad enum strings and addresses, integers too big for libconfig to
 * read faithfully, and inconsistent combinations.  Messages read
 * "FILE:LINE: key 'group.key': must be 1..16".
 *
 * What needs the running system (interfaces exist, link MTU, group exists,
 * CPUs online) is checked by the daemon at start, not here.
 *
 * Functions return 0 or a negative errno.
 */
#ifndef MROCD_CONFIG_H
#define MROCD_CONFIG_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "addr.h"

struct engine_config;

#define MROCD_CONF_DEFAULT	"/etc/mroc/mrocd.conf"

#define MROCD_MAX_IFACES	16	/* network.interfaces entries */
#define MROCD_MAX_QUEUES	64	/* queues per interface */
#define MROCD_MAX_PEERS		256	/* network.peers entries */
#define MROCD_MAX_CPUS		64	/* daemon.cpu_affinity entries */
#define MROCD_MAX_WORKERS	16	/* daemon.workers */
#define MROCD_SOCKPATH_MAX	108	/* sizeof(sun_path), with the NUL */
#define MROCD_GROUP_MAX		64

enum mrocd_backend {
	MROCD_BACKEND_AUTO = 0,		/* AF_XDP if it can be set up, else UDP */
	MROCD_BACKEND_AF_XDP,
	MROCD_BACKEND_UDP,
};

enum mrocd_xdp_mode {
	MROCD_XDP_AUTO = 0,		/* native, falling back to generic */
	MROCD_XDP_NATIVE,
	MROCD_XDP_GENERIC,
};

enum mrocd_zero_copy {
	MROCD_ZC_AUTO = 0,		/* zero-copy where the driver has it */
	MROCD_ZC_ON,			/* zero-copy or fail */
	MROCD_ZC_OFF,			/* always copy mode */
};

struct mrocd_iface {
	char name[IFNAMSIZ];
	uint32_t nqueues;		/* >= 1 */
	uint16_t queues[MROCD_MAX_QUEUES];	/* distinct, 0..255 */
	struct mroc_addr address;	/* the port's own address on its plane; family 0 = none
					 * (it sends from network.address) */
};

struct mrocd_iface_list {
	uint32_t n;
	struct mrocd_iface v[MROCD_MAX_IFACES];	/* distinct names */
};

struct mrocd_addr_list {
	uint32_t n;
	struct mroc_addr v[MROCD_MAX_PEERS];	/* distinct */
};

struct mrocd_cpu_list {
	uint32_t n;
	uint16_t v[MROCD_MAX_CPUS];	/* distinct CPU numbers */
};

struct mrocd_config {
	struct {
		int log_level;			/* LOG_ERR .. LOG_DEBUG */
		struct mrocd_cpu_list cpu_affinity;	/* workers; empty = not pinned */
		uint32_t workers;		/* data-plane threads; 0 = one per socket */
		bool lone_home_port;		/* a lone packet (or a short burst) leaves by its worker's ports */
		uint32_t busy_poll_us;		/* spin this long before sleeping */
		char control_socket[MROCD_SOCKPATH_MAX];	/* clients (libmroc) */
		char admin_socket[MROCD_SOCKPATH_MAX];	/* the CLI */
		uint32_t socket_mode;		/* permission bits of both sockets */
		char socket_group[MROCD_GROUP_MAX];	/* "" = the daemon's group */
		char admin_group[MROCD_GROUP_MAX];	/* administrators; "" = root and ours only */
	} daemon;
	struct {
		enum mrocd_backend backend;
		struct mrocd_iface_list interfaces;
		struct mroc_addr address;	/* family 0 = learn from the interface */
		uint16_t udp_port;		/* MetaRoCE destination port */
		enum mrocd_xdp_mode xdp_mode;
		enum mrocd_zero_copy zero_copy;
		uint32_t umem_frames;		/* power of two */
		uint32_t frame_size;		/* 2048 or 4096 */
		uint32_t port_dead_ms;		/* porthealth.h: silence that counts a port down; 0 = off */
		uint32_t ring_size;		/* power of two, each XSK ring */
		uint32_t mtu;			/* MetaRoCE payload bytes per packet */
		struct mrocd_addr_list peers;	/* keep control connections with */
		uint16_t sport_min, sport_max;	/* UDP source ports for paths */
		bool allow_loopback;		/* clients may connect to 127/8, ::1 */
	} network;
	struct {
		uint32_t paths;			/* default paths per QP, 1..16 */
		uint32_t mode;			/* default enum mroc_mode */
		uint32_t ack_every;
		uint32_t ack_delay_us;
		uint32_t rto_min_us;
		uint32_t rto_init_us;
		uint32_t rto_max_ms;
		uint32_t dupthresh;
		uint32_t init_pwnd_pkts;
		uint32_t peer_window_pkts;
		uint32_t peer_host_delay_us;
		uint32_t max_pwnd_pkts;
		uint32_t loss_md_pkts;
		uint32_t delay_target_us;
		uint32_t hint_interval_us;
		uint32_t max_retx;
		uint32_t rnr_retry;
		uint32_t rnr_delay_us;
		uint32_t dead_peer_ms;
		uint32_t keepalive_ms;		/* 0 = off */
		uint32_t cm_retries;
		bool rate_hints;
		bool repath;
		bool repath_spread;
		uint32_t repath_round_rtts;	/* engine_config.repath_round_rtts; 0 = off */
		bool rack_reo_srtt;		/* engine_config.rack_reo_srtt */
		bool tail_hedge;		/* engine_config.tail_hedge */
		bool merge_acks;		/* engine_config.merge_acks */
		uint32_t split_unit;		/* bytes, multiple of 16; 0 = off (PROTOCOL 5.2) */
		uint32_t dup_max;		/* bytes; 0 = no copies (PROTOCOL 5.2) */
		uint32_t link_rate_gbps;	/* 0 = read the interface speed */
	} transport;
	struct {				/* per client, then engine tables */
		uint32_t max_clients;
		uint32_t max_clients_per_uid;
		uint32_t uid_share_percent;	/* one user's share of clients, QPs, MRs */
		uint32_t admin_reserve_percent;	/* of them, for administrators only */
		uint32_t max_qps_per_client;
		uint32_t max_mrs_per_client;
		uint64_t max_mr_bytes_per_client;
		uint64_t max_locked_bytes_per_client;
		uint32_t max_sq_depth;
		uint32_t max_rq_depth;
		uint32_t ctl_rate_per_client;	/* control requests a second; 0 = no budget */
		uint32_t ctl_burst_per_client;	/* ... at once */
		uint32_t max_qps;
		uint32_t max_mrs;
	} limits;
	struct {
		uint32_t mode;			/* enum mroc_sec; peers must use the same */
		char key_file[256];		/* "aead": absolute path, mode 0600 */
		uint32_t key_id;		/* "aead": the key sealing what we send, 0 = highest */
		uint32_t cookies;		/* "aead": 1 = a cookie from every source not heard
						 * from, 0 = only over the budget (aead.h) */
	} security;
};

/* ---- loading ------------------------------------------------------------ */

/* Every key at its default (what conf/mrocd.conf also says). */
void config_defaults(struct mrocd_config *out);

/*
 * Read and validate path.  On success fills *out (keys the file leaves out
 * keep their defaults) and returns 0.  On failure *out is untouched, err
 * holds one line, e.g. "mrocd.conf:12: key 'transport.paths': must be
 * 1..16 (got 17)", and the return value is -ENOENT (or another open(2)
 * errno) when the file cannot be opened, -EINVAL for anything in it.
 */
int config_load(const char *path, struct mrocd_config *out, char *err, size_t errlen);

/*
 * Print c as a config file (every key, in table order) that config_load
 * reads back to the same values.  0 or -EIO.
 */
int config_dump(FILE *f, const struct mrocd_config *c);

/*
 * Engine parameters from the transport, network.mtu, sport range and
 * limits.max_qps/max_mrs keys, in the engine's units; link_rate_bps is 0
 * when link_rate_gbps is (the daemon fills it from the interface speed).
 * The seed stays engine_config_default's: the daemon sets a random one.
 * Returns engine_config_check's result (config_load already ran it).
 */
int config_engine(const struct mrocd_config *c, struct engine_config *out);

/* Bytes security.mode adds to a packet beyond the engine's data header and payload. */
uint32_t config_sec_overhead(const struct mrocd_config *c);

/* ---- reload (SIGHUP) ---------------------------------------------------- */

/*
 * Keys whose values differ between old and new: config_diff_restart lists
 * those a running daemon cannot change (they need a restart),
 * config_diff_reload those it can.  Names (static strings, table order) go
 * into names[0..max); the return value is the full count, which may be
 * larger than max.
 */
size_t config_diff_restart(const struct mrocd_config *old, const struct mrocd_config *new,
			   const char **names, size_t max);
size_t config_diff_reload(const struct mrocd_config *old, const struct mrocd_config *new,
			  const char **names, size_t max);
/* The names of the keys a reload applies (table order), count as above. */
size_t config_reload_keys(const char **names, size_t max);
/* Copy the reloadable keys of next into running; the others stay. */
void config_apply_reload(struct mrocd_config *running, const struct mrocd_config *next);

/* ---- the key table ------------------------------------------------------ */

enum config_type {
	CONFIG_T_UINT = 0,	/* integer in min..max (CONFIG_F_POW2: powers of two) */
	CONFIG_T_BOOL,
	CONFIG_T_ENUM,		/* one of a list of strings, stored as an int */
	CONFIG_T_LOGLEVEL,	/* "err" .. "debug" (log_level_parse), stored as LOG_* */
	CONFIG_T_STRING,	/* length min..max */
	CONFIG_T_MODE,		/* permission bits as an octal string, "0660" */
	CONFIG_T_ADDR,		/* IPv4 or IPv6 address; "" = unset */
	CONFIG_T_ADDR_LIST,	/* [ "10.0.0.2", ... ] */
	CONFIG_T_CPU_LIST,	/* [ 0, 1 ]: CPU numbers min..max */
	CONFIG_T_IFACE_LIST,	/* ( "eth0", { name = "eth1"; queues = [ 0, 1 ]; } ) */
};

#define CONFIG_F_RELOAD		0x1	/* SIGHUP applies it */
#define CONFIG_F_POW2		0x2	/* CONFIG_T_UINT: a power of two */

struct config_enum {
	const char *name;
	int value;
};

struct config_key {
	const char *name;		/* "group.key" */
	enum config_type type;
	unsigned int flags;		/* CONFIG_F_* */
	uint64_t min, max;		/* value, string length, or list element bounds */
	uint64_t def;			/* UINT, BOOL, ENUM, LOGLEVEL, MODE */
	const char *def_str;		/* STRING */
	const struct config_enum *names;	/* ENUM: ends with a NULL name */
	size_t off, size;		/* the field in struct mrocd_config */
	const char *unit;		/* "us", "ms", "bytes", ... or NULL */
};

size_t config_key_count(void);
const struct config_key *config_key_at(size_t i);
/* NULL when there is no such key. */
const struct config_key *config_key_find(const char *name);
/* The string of an ENUM or LOGLEVEL key's value, "?" if none. */
const char *config_enum_name(const struct config_key *k, int value);

#endif
