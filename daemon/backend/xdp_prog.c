// SPDX-License-Identifier: MIT
/*
 * Load, attach and feed the XDP steering program (xdp_prog.h).
 *
 * mrocd attaches its program through a bpf_link (BPF_LINK_CREATE): the
 * kernel detaches it when the link's last file descriptor closes, so a
 * crashed mrocd leaves nothing on the interface, and a restart needs no
 * CAP_SYS_ADMIN to open a leftover program by id (mrocd.service runs with
 * CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF and CAP_PERFMON only).
 *
 * A program attached with bpf_xdp_attach() (netlink, e.g. by an mrocd older
 * than the bpf_link, or by ip link) stays on the interface when its loader
 * dies.  mrocd's is recognised by its name; it is stale when no process
 * holds a file descriptor to it any more (fds are found in
 * /proc/PID/fdinfo, so only this PID namespace is seen).  Only stale
 * mroc_xdp programs are detached, each with XDP_FLAGS_REPLACE so a program
 * that changed meanwhile is left alone.  Inspecting one takes CAP_SYS_ADMIN
 * (BPF_PROG_GET_FD_BY_ID); without it mrocd says how to remove it.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "log.h"
#include "mroc_xdp.skel.h"
#include "xdp_prog.h"

struct attached {
	int ifindex;
	enum xdp_prog_mode mode;	/* NATIVE or GENERIC, as attached */
	int link_fd;			/* closing it detaches the program */
};

struct sock_slot {
	struct mroc_xdp_key key;
	bool used;
};

struct xdp_prog {
	struct mroc_xdp *skel;
	int prog_fd, xskmap_fd, slots_fd, counters_fd, ours_fd, macs_fd, vlans_fd;
	uint32_t prog_id;
	uint16_t udp_port;
	uint32_t max_sockets;
	struct sock_slot *slots;	/* by XSKMAP slot */
	struct attached *att;
	int n_att;
	bool stamps;			/* the loaded program writes arrival stamps */
};

static const char *const counter_names[MROC_XDP_CNT__COUNT] = {
#define XDP_PROG_CNT_NAME(u, l) [MROC_XDP_CNT_##u] = #l,
	MROC_XDP_COUNTERS(XDP_PROG_CNT_NAME)
#undef XDP_PROG_CNT_NAME
};

_Static_assert(sizeof(struct xdp_prog_counters) == sizeof(struct mroc_xdp_stats),
	       "one named field per counter");

const char *xdp_prog_counter_name(unsigned int i)
{
	return i < MROC_XDP_CNT__COUNT ? counter_names[i] : NULL;
}

/* ---- logging ----------------------------------------------------------------- */

/* One log line per line of the library's message, without its newlines. */
static int lib_print(int prio, const char *fmt, va_list ap)
{
	char *msg, *line, *save = NULL;

	if (prio > log_get_level())
		return 0;
	if (vasprintf(&msg, fmt, ap) < 0)
		return 0;
	for (line = strtok_r(msg, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		log_msg(prio, "%s", line);
	free(msg);
	return 0;
}

/* Set while a load that may fail and be retried runs: its verifier log is debug output. */
static bool quiet_load;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return lib_print(level == LIBBPF_WARN && !quiet_load ? LOG_WARNING :
			 level == LIBBPF_INFO ? LOG_INFO : LOG_DEBUG, fmt, ap);
}

static int libxdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	return lib_print(level == LIBXDP_WARN ? LOG_WARNING :
			 level == LIBXDP_INFO ? LOG_INFO : LOG_DEBUG, fmt, ap);
}

void xdp_prog_init_logging(void)
{
	libbpf_set_print(libbpf_print);
	libxdp_set_print(libxdp_print);
}

/* ---- modes ------------------------------------------------------------------- */

int xdp_prog_mode_parse(const char *name)
{
	if (!strcmp(name, "auto"))
		return XDP_PROG_MODE_AUTO;
	if (!strcmp(name, "native") || !strcmp(name, "drv"))
		return XDP_PROG_MODE_NATIVE;
	if (!strcmp(name, "generic") || !strcmp(name, "skb"))
		return XDP_PROG_MODE_GENERIC;
	return -EINVAL;
}

const char *xdp_prog_mode_name(enum xdp_prog_mode mode)
{
	switch (mode) {
	case XDP_PROG_MODE_AUTO:	return "auto";
	case XDP_PROG_MODE_NATIVE:	return "native";
	case XDP_PROG_MODE_GENERIC:	return "generic";
	}
	return "?";
}

static uint32_t mode_flag(enum xdp_prog_mode mode)
{
	return mode == XDP_PROG_MODE_GENERIC ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
}

/* ---- helpers ----------------------------------------------------------------- */

#define IFNAME_LEN 32

static const char *ifname(int ifindex, char buf[IFNAME_LEN])
{
	char name[IF_NAMESIZE];

	if (if_indextoname(ifindex, name))
		snprintf(buf, IFNAME_LEN, "%s", name);
	else
		snprintf(buf, IFNAME_LEN, "ifindex %d", ifindex);
	return buf;
}

/* A new fd for program id and its name; -ENOENT if it is gone. */
static int prog_get(uint32_t id, char name[BPF_OBJ_NAME_LEN], int *fdp)
{
	struct bpf_prog_info info = {};
	uint32_t len = sizeof(info);
	int fd, err;

	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return fd;
	err = bpf_obj_get_info_by_fd(fd, &info, &len);
	if (err) {
		close(fd);
		return err;
	}
	memcpy(name, info.name, BPF_OBJ_NAME_LEN);
	name[BPF_OBJ_NAME_LEN - 1] = '\0';
	*fdp = fd;
	return 0;
}

/* A /proc directory entry that is a number (pid, fd): it, else -1. */
static int dirent_num(const struct dirent *e)
{
	char *end;
	long v;

	if (e->d_name[0] < '0' || e->d_name[0] > '9')
		return -1;
	v = strtol(e->d_name, &end, 10);
	return *end || v > INT_MAX ? -1 : (int)v;
}

/* Does fd of process pid (a bpf-prog or bpf_link fd) refer to program id? */
static bool fd_refers_to(int pid, int fd, uint32_t id)
{
	char path[64], link[64], line[128];
	bool hit = false;
	unsigned int v;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = '\0';
	if (strcmp(link, "anon_inode:bpf-prog") && strcmp(link, "anon_inode:bpf_link"))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!hit && fgets(line, sizeof(line), f))
		hit = sscanf(line, "prog_id: %u", &v) == 1 && v == id;
	fclose(f);
	return hit;
}

/*
 * A process holding program id, other than fd skip_fd of this process: its
 * pid, 0 if none, -errno if /proc cannot be read.
 */
static int prog_holder(uint32_t id, int skip_fd)
{
	int self = getpid(), holder = 0, pid, fd;
	struct dirent *pe, *fe;
	DIR *proc, *fds;
	char path[64];

	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while (!holder && (pe = readdir(proc))) {
		pid = dirent_num(pe);
		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd", pid);
		fds = opendir(path);
		if (!fds)
			continue;	/* gone meanwhile */
		while (!holder && (fe = readdir(fds))) {
			fd = dirent_num(fe);
			if (fd < 0 || (pid == self && fd == skip_fd))
				continue;
			if (fd_refers_to(pid, fd, id))
				holder = pid;
		}
		closedir(fds);
	}
	closedir(proc);
	return holder;
}

/*
 * Program id attached to ifindex in mode `mode_name` is not ours: detach it
 * if it is a stale mroc_xdp, else -EBUSY.  -ENOENT-like races (it went away
 * meanwhile) count as done.
 */
static int remove_stale(int ifindex, uint32_t id, uint32_t flag, const char *mode_name)
{
	char name[BPF_OBJ_NAME_LEN], ifn[IFNAME_LEN];
	int fd, err, holder;

	ifname(ifindex, ifn);
	err = prog_get(id, name, &fd);
	if (err == -ENOENT)
		return 0;
	if (err == -EPERM) {
		pr_err("%s: XDP program id %u is attached and mrocd, without CAP_SYS_ADMIN, cannot "
		       "open it to see whose it is (one left by an earlier mrocd that attached "
		       "without a bpf_link?); remove it with 'ip link set dev %s xdp off'", ifn, id,
		       ifn);
		return -EBUSY;
	}
	if (err) {
		pr_err("%s: cannot inspect the attached XDP program id %u: %s", ifn, id,
		       strerror(-err));
		return err;
	}
	if (strcmp(name, MROC_XDP_PROG_NAME) || flag == XDP_FLAGS_HW_MODE) {
		pr_err("%s: XDP program '%s' (id %u, %s mode) is attached and is not mrocd's; "
		       "not touching it (remove it first, e.g. 'ip link set dev %s xdp off')",
		       ifn, name, id, mode_name, ifn);
		err = -EBUSY;
		goto out;
	}
	holder = prog_holder(id, fd);
	if (holder > 0) {
		pr_err("%s: mroc_xdp program id %u (%s mode) is in use by process %d "
		       "(another mrocd?); not detaching it", ifn, id, mode_name, holder);
		err = -EBUSY;
		goto out;
	}
	if (holder < 0)
		pr_warn("cannot scan /proc for users of XDP program id %u (%s); assuming it is stale",
			id, strerror(-holder));
	pr_warn("%s: detaching stale mroc_xdp program id %u (%s mode) left by an earlier mrocd",
		ifn, id, mode_name);
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = fd);
	err = bpf_xdp_detach(ifindex, flag | XDP_FLAGS_REPLACE, &opts);
	if (err)
		pr_err("%s: detaching stale XDP program id %u failed: %s", ifn, id,
		       strerror(-err));
out:
	close(fd);
	return err;
}

/* Leave ifindex with no XDP program but possibly ours; see xdp_prog_attach. */
static int make_room(struct xdp_prog *p, int ifindex)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	char ifn[IFNAME_LEN];
	int err;

	err = bpf_xdp_query(ifindex, 0, &q);
	if (err) {
		pr_err("%s: XDP query failed: %s", ifname(ifindex, ifn), strerror(-err));
		return err;
	}
	const struct { uint32_t id, flag; const char *mode; } cur[] = {
		{ q.drv_prog_id, XDP_FLAGS_DRV_MODE, "native" },
		{ q.skb_prog_id, XDP_FLAGS_SKB_MODE, "generic" },
		{ q.hw_prog_id, XDP_FLAGS_HW_MODE, "offload" },
	};
	for (size_t i = 0; i < sizeof(cur) / sizeof(cur[0]); i++) {
		if (!cur[i].id || cur[i].id == p->prog_id)
			continue;
		err = remove_stale(ifindex, cur[i].id, cur[i].flag, cur[i].mode);
		if (err)
			return err;
	}
	return 0;
}

/* The id attached to ifindex in `mode`, 0 if none; -errno if the query fails. */
static int64_t attached_id(int ifindex, enum xdp_prog_mode mode)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int err = bpf_xdp_query(ifindex, 0, &q);

	if (err)
		return err;
	return mode == XDP_PROG_MODE_GENERIC ? q.skb_prog_id : q.drv_prog_id;
}

static struct attached *find_att(const struct xdp_prog *p, int ifindex)
{
	for (int i = 0; i < p->n_att; i++)
		if (p->att[i].ifindex == ifindex)
			return &p->att[i];
	return NULL;
}

/* ---- open / close ------------------------------------------------------------ */

/* Open, size and load the skeleton with p's port, sockets and stamp choice. */
static int load_skel(struct xdp_prog *p)
{
	int err;

	p->skel = mroc_xdp__open();
	if (!p->skel) {
		err = -errno;
		return err ? err : -ENOMEM;
	}
	p->skel->rodata->udp_port = p->udp_port;
	p->skel->rodata->no_stamp = !p->stamps;
	err = bpf_map__set_max_entries(p->skel->maps.xsks, p->max_sockets);
	if (!err)
		err = bpf_map__set_max_entries(p->skel->maps.xsk_slots, p->max_sockets);
	if (!err)
		err = mroc_xdp__load(p->skel);
	return err;
}

int xdp_prog_open(struct xdp_prog **out, const struct xdp_prog_opts *opts)
{
	struct bpf_prog_info info = {};
	uint32_t len = sizeof(info);
	struct xdp_prog *p;
	int err;

	*out = NULL;
	if (!opts || opts->sz < sizeof(*opts) || !opts->udp_port ||
	    opts->max_sockets > XDP_PROG_MAX_SOCKETS) {
		pr_err("xdp: bad options (udp_port must be set, max_sockets <= %d)",
		       XDP_PROG_MAX_SOCKETS);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->udp_port = opts->udp_port;
	p->max_sockets = opts->max_sockets ? opts->max_sockets : XDP_PROG_DEFAULT_SOCKETS;
	p->slots = calloc(p->max_sockets, sizeof(*p->slots));
	if (!p->slots) {
		err = -ENOMEM;
		goto fail;
	}

	p->stamps = !opts->no_stamp;
	quiet_load = p->stamps;
	err = load_skel(p);
	quiet_load = false;
	if (err == -EINVAL && p->stamps) {
		/*
		 * Some kernels refuse bpf_xdp_adjust_meta to XDP programs (seen:
		 * 6.18.44-fc, "program of this type cannot use helper").  The
		 * stamp only sharpens the delay signal (PROTOCOL 9.3a): without it
		 * the worker's poll time stands in, so run without rather than not at all.
		 */
		mroc_xdp__destroy(p->skel);
		p->skel = NULL;
		p->stamps = false;
		err = load_skel(p);
		if (!err)
			pr_warn("xdp: this kernel refuses bpf_xdp_adjust_meta in XDP programs: "
				"no arrival stamps (the host's own wait counts as path delay)");
	}
	if (err) {
		pr_err("xdp: loading the XDP program failed: %s (is BPF allowed here? CAP_BPF, "
		       "CAP_NET_ADMIN)", strerror(-err));
		goto fail;
	}
	p->prog_fd = bpf_program__fd(p->skel->progs.mroc_xdp);
	p->xskmap_fd = bpf_map__fd(p->skel->maps.xsks);
	p->slots_fd = bpf_map__fd(p->skel->maps.xsk_slots);
	p->counters_fd = bpf_map__fd(p->skel->maps.counters);
	p->ours_fd = bpf_map__fd(p->skel->maps.ours);
	p->macs_fd = bpf_map__fd(p->skel->maps.our_macs);
	p->vlans_fd = bpf_map__fd(p->skel->maps.our_vlans);
	err = bpf_obj_get_info_by_fd(p->prog_fd, &info, &len);
	if (err) {
		pr_err("xdp: reading the program id failed: %s", strerror(-err));
		goto fail;
	}
	p->prog_id = info.id;
	pr_debug("xdp: program %s loaded, id %u, UDP port %u, %u socket slots%s",
		 MROC_XDP_PROG_NAME, p->prog_id, p->udp_port, p->max_sockets,
		 p->stamps ? "" : ", no arrival stamps");
	*out = p;
	return 0;
fail:
	xdp_prog_close(p);
	return err;
}

void xdp_prog_close(struct xdp_prog *p)
{
	if (!p)
		return;
	while (p->n_att > 0)
		xdp_prog_detach(p, p->att[p->n_att - 1].ifindex);
	mroc_xdp__destroy(p->skel);
	free(p->att);
	free(p->slots);
	free(p);
}

/* ---- attach / detach --------------------------------------------------------- */

/* A bpf_link attaching our program to ifindex: its fd, or -errno (-EBUSY: taken). */
static int attach_mode(struct xdp_prog *p, int ifindex, enum xdp_prog_mode mode)
{
	LIBBPF_OPTS(bpf_link_create_opts, o, .flags = mode_flag(mode));
	int fd = bpf_link_create(p->prog_fd, ifindex, BPF_XDP, &o);

	return fd < 0 ? -errno : fd;
}

int xdp_prog_attach(struct xdp_prog *p, int ifindex, enum xdp_prog_mode mode)
{
	enum xdp_prog_mode used = mode == XDP_PROG_MODE_AUTO ? XDP_PROG_MODE_NATIVE : mode;
	char ifn[IFNAME_LEN];
	struct attached *a;
	int64_t id;
	int err, link_fd;

	if (find_att(p, ifindex))
		return 0;
	err = make_room(p, ifindex);
	if (err)
		return err;

	err = link_fd = attach_mode(p, ifindex, used);
	if (err < 0 && mode == XDP_PROG_MODE_AUTO && err != -EBUSY && err != -EEXIST) {
		pr_warn("%s: native XDP failed (%s); falling back to generic (skb) mode, "
			"which is slower", ifname(ifindex, ifn), strerror(-err));
		used = XDP_PROG_MODE_GENERIC;
		err = link_fd = attach_mode(p, ifindex, used);
	}
	if (err < 0) {
		pr_err("%s: attaching the XDP program in %s mode failed: %s",
		       ifname(ifindex, ifn), xdp_prog_mode_name(used), strerror(-err));
		return err;
	}
	id = attached_id(ifindex, used);
	if (id != p->prog_id) {
		pr_err("%s: XDP program attached but the interface reports id %lld, not %u",
		       ifname(ifindex, ifn), (long long)id, p->prog_id);
		close(link_fd);
		return id < 0 ? (int)id : -EIO;
	}

	a = realloc(p->att, (p->n_att + 1) * sizeof(*a));
	if (!a) {
		close(link_fd);
		return -ENOMEM;
	}
	p->att = a;
	p->att[p->n_att++] = (struct attached){ .ifindex = ifindex, .mode = used,
						.link_fd = link_fd };
	pr_info("%s: XDP program id %u attached in %s mode (UDP port %u)",
		ifname(ifindex, ifn), p->prog_id, xdp_prog_mode_name(used), p->udp_port);
	return 0;
}

int xdp_prog_detach(struct xdp_prog *p, int ifindex)
{
	struct attached *a = find_att(p, ifindex);
	char ifn[IFNAME_LEN];
	int64_t id;
	int err = 0;

	if (!a)
		return -ENOENT;
	id = attached_id(ifindex, a->mode);
	if (id == -ENODEV) {
		pr_info("%s: interface gone, nothing to detach", ifname(ifindex, ifn));
	} else if (id < 0) {
		err = id;
		pr_err("%s: XDP query failed, not detaching: %s", ifname(ifindex, ifn),
		       strerror(-err));
	} else if (id != p->prog_id) {
		pr_warn("%s: the %s XDP program is no longer ours (id %lld, ours %u); leaving it",
			ifname(ifindex, ifn), xdp_prog_mode_name(a->mode), (long long)id,
			p->prog_id);
	} else {
		/* Now, not when the fd closes: a forked child could hold a copy. */
		err = bpf_link_detach(a->link_fd) ? -errno : 0;
		if (err)
			pr_err("%s: detaching XDP program id %u failed: %s",
			       ifname(ifindex, ifn), p->prog_id, strerror(-err));
		else
			pr_info("%s: XDP program id %u detached", ifname(ifindex, ifn),
				p->prog_id);
	}
	close(a->link_fd);
	*a = p->att[--p->n_att];
	return err;
}

int xdp_prog_attach_mode(const struct xdp_prog *p, int ifindex)
{
	const struct attached *a = find_att(p, ifindex);

	return a ? (int)a->mode : -ENOENT;
}

bool xdp_prog_stamps(const struct xdp_prog *p)
{
	return p->stamps;
}

uint32_t xdp_prog_id(const struct xdp_prog *p)
{
	return p->prog_id;
}

int xdp_prog_fd(const struct xdp_prog *p)
{
	return p->prog_fd;
}

int xdp_prog_xskmap_fd(const struct xdp_prog *p)
{
	return p->xskmap_fd;
}

uint16_t xdp_prog_udp_port(const struct xdp_prog *p)
{
	return p->udp_port;
}

/* ---- sockets ----------------------------------------------------------------- */

static int find_slot(const struct xdp_prog *p, uint32_t ifindex, uint32_t queue)
{
	for (uint32_t i = 0; i < p->max_sockets; i++)
		if (p->slots[i].used && p->slots[i].key.ifindex == ifindex &&
		    p->slots[i].key.queue == queue)
			return i;
	return -ENOENT;
}

int xdp_prog_add_socket(struct xdp_prog *p, uint32_t ifindex, uint32_t queue, int xsk_fd)
{
	struct mroc_xdp_key key = { .ifindex = ifindex, .queue = queue };
	uint32_t slot, fd = xsk_fd;
	char ifn[IFNAME_LEN];
	int err;

	if (xsk_fd < 0)
		return -EINVAL;
	if (find_slot(p, ifindex, queue) >= 0) {
		pr_err("%s queue %u: an AF_XDP socket is registered already",
		       ifname(ifindex, ifn), queue);
		return -EEXIST;
	}
	for (slot = 0; slot < p->max_sockets && p->slots[slot].used; slot++)
		;
	if (slot == p->max_sockets) {
		pr_err("%s queue %u: all %u AF_XDP socket slots are in use",
		       ifname(ifindex, ifn), queue, p->max_sockets);
		return -ENOSPC;
	}
	/* Socket first, then the lookup entry: the hash never names an empty slot. */
	err = bpf_map_update_elem(p->xskmap_fd, &slot, &fd, BPF_ANY);
	if (err) {
		pr_err("%s queue %u: putting AF_XDP socket fd %d in the XSKMAP failed: %s",
		       ifname(ifindex, ifn), queue, xsk_fd, strerror(-err));
		return err;
	}
	err = bpf_map_update_elem(p->slots_fd, &key, &slot, BPF_NOEXIST);
	if (err) {
		pr_err("%s queue %u: adding the socket lookup entry failed: %s",
		       ifname(ifindex, ifn), queue, strerror(-err));
		bpf_map_delete_elem(p->xskmap_fd, &slot);
		return err;
	}
	p->slots[slot] = (struct sock_slot){ .key = key, .used = true };
	pr_debug("%s queue %u: AF_XDP socket fd %d in slot %u", ifname(ifindex, ifn), queue,
		 xsk_fd, slot);
	return slot;
}

int xdp_prog_remove_socket(struct xdp_prog *p, uint32_t ifindex, uint32_t queue)
{
	struct mroc_xdp_key key = { .ifindex = ifindex, .queue = queue };
	int slot = find_slot(p, ifindex, queue);
	uint32_t s;
	int err;

	if (slot < 0)
		return slot;
	s = slot;
	/* Lookup entry first: packets pass to the kernel, never to an empty slot. */
	err = bpf_map_delete_elem(p->slots_fd, &key);
	if (err && err != -ENOENT)
		pr_warn("queue %u of ifindex %u: removing the socket lookup entry failed: %s",
			queue, ifindex, strerror(-err));
	err = bpf_map_delete_elem(p->xskmap_fd, &s);
	if (err && err != -ENOENT)
		pr_warn("queue %u of ifindex %u: clearing XSKMAP slot %u failed: %s",
			queue, ifindex, s, strerror(-err));
	p->slots[s].used = false;
	return 0;
}

/* ---- whose frames ------------------------------------------------------------- */

/* Is ifindex a loopback device (IFF_LOOPBACK)?  One that cannot be asked is not. */
static bool is_loopback_dev(int ifindex)
{
	struct ifreq ifr = { .ifr_flags = 0 };
	bool lo = false;
	int fd;

	if (!if_indextoname(ifindex, ifr.ifr_name))
		return false;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	if (!ioctl(fd, SIOCGIFFLAGS, &ifr))
		lo = ifr.ifr_flags & IFF_LOOPBACK;
	close(fd);
	return lo;
}

int xdp_prog_set_mac(struct xdp_prog *p, int ifindex, const uint8_t mac[6])
{
	struct mroc_xdp_mac v = { .loopback = is_loopback_dev(ifindex) };
	__u32 key = (__u32)ifindex;

	memcpy(v.addr, mac, sizeof(v.addr));
	return bpf_map_update_elem(p->macs_fd, &key, &v, BPF_ANY) ? -errno : 0;
}

int xdp_prog_set_vlans(struct xdp_prog *p, int ifindex, const uint16_t *vids, unsigned n)
{
	struct mroc_xdp_vlan k = { .ifindex = (__u32)ifindex }, next;
	__u8 one = 1;
	bool keep;

	if (n > MROC_XDP_MAX_VLANS)
		return -E2BIG;
	for (unsigned i = 0; i < n; i++) {
		k.vid = vids[i];
		if (bpf_map_update_elem(p->vlans_fd, &k, &one, BPF_ANY))
			return -errno;
	}
	/* Then this interface's that are gone (as xdp_prog_set_addrs). */
	for (int more = !bpf_map_get_next_key(p->vlans_fd, NULL, &k); more; k = next) {
		more = !bpf_map_get_next_key(p->vlans_fd, &k, &next);
		keep = k.ifindex != (__u32)ifindex;
		for (unsigned i = 0; i < n && !keep; i++)
			keep = k.vid == vids[i];
		if (!keep)
			bpf_map_delete_elem(p->vlans_fd, &k);
	}
	return 0;
}

static struct mroc_xdp_addr xdp_addr_of(const struct mroc_addr *a)
{
	struct mroc_xdp_addr k = { .family = a->family == AF_INET6 ? 6 : 4 };

	memcpy(k.addr, a->bytes, a->family == AF_INET6 ? 16 : 4);
	return k;
}

int xdp_prog_set_addrs(struct xdp_prog *p, const struct mroc_addr *addr, unsigned n)
{
	struct mroc_xdp_addr k, next;
	__u8 one = 1;
	bool keep;

	if (n > MROC_XDP_MAX_ADDRS)
		return -E2BIG;
	for (unsigned i = 0; i < n; i++) {
		k = xdp_addr_of(&addr[i]);
		if (bpf_map_update_elem(p->ours_fd, &k, &one, BPF_ANY))
			return -errno;
	}
	/* Then those no longer ours go (a frame between the two finds either set). */
	for (int more = !bpf_map_get_next_key(p->ours_fd, NULL, &k); more; k = next) {
		more = !bpf_map_get_next_key(p->ours_fd, &k, &next);
		keep = false;
		for (unsigned i = 0; i < n && !keep; i++) {
			struct mroc_xdp_addr a = xdp_addr_of(&addr[i]);

			keep = !memcmp(&a, &k, sizeof(a));
		}
		if (!keep)
			bpf_map_delete_elem(p->ours_fd, &k);
	}
	return 0;
}

/* ---- counters ---------------------------------------------------------------- */

int xdp_prog_read_counters(const struct xdp_prog *p, struct xdp_prog_counters *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct mroc_xdp_stats *percpu;
	uint32_t zero = 0;
	int err;

	memset(out, 0, sizeof(*out));
	if (ncpu < 0)
		return ncpu;
	percpu = calloc(ncpu, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	err = bpf_map_lookup_elem(p->counters_fd, &zero, percpu);
	if (!err)
		for (int c = 0; c < ncpu; c++)
			for (int i = 0; i < MROC_XDP_CNT__COUNT; i++)
				out->v[i] += percpu[c].cnt[i];
	free(percpu);
	return err;
}
