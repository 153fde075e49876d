/* SPDX-License-Identifier: MIT */
/*
 * The control thread's event loop (io_uring): signals through a signalfd,
 * the systemd watchdog through a timerfd, and the admin socket, a unix
 * stream socket speaking one JSON request and one JSON reply per connection
 * (newline-terminated, each with "version").  The loop runs on the main
 * thread until SIGTERM or SIGINT.
 *
 * Both sockets bound what a user can hold (ctl.c): an admin connection has
 * 5 s for its request and reply, a user at most 4 at once; a client has
 * 5 s for its HELLO, a user at most 64 connections without one.
 */
#ifndef MROCD_CTL_H
#define MROCD_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <jansson.h>

#define MROCD_ADMIN_VERSION 1

struct ctl;

/*
 * Who sent an admin request (SO_PEERCRED when it connected, #24 item 11):
 * an administrator (uid 0, mrocd's own uid, or a member of
 * daemon.admin_group, primary or supplementary: SO_PEERGROUPS) sees and may
 * do everything; anyone else who may open the socket (the socket group)
 * sees only its own objects (admin.c).
 */
struct ctl_caller {
	uid_t uid;
	pid_t pid;
	bool admin;
};

struct ctl_cfg {
	const char *admin_path;		/* NULL = no admin socket */
	mode_t mode;			/* permissions of the socket file */
	gid_t gid;			/* (gid_t)-1 = leave the group alone */
	gid_t admin_gid;		/* its members are administrators; (gid_t)-1 = none */
	uint64_t watchdog_usec;		/* from sd_watchdog_enabled(); 0 = none */
	/* Answer a request: return a new reply object (the loop adds "version"). */
	json_t *(*handle)(void *ctx, const json_t *req, const struct ctl_caller *who);
	/* SIGHUP. */
	void (*reload)(void *ctx);
	/* Each watchdog tick: return 0 if the daemon is healthy (WATCHDOG=1 is sent then). */
	int (*healthy)(void *ctx);
	/*
	 * The client socket (SOCK_SEQPACKET, libmroc): NULL path = none.  A new
	 * client is offered to client_open (NULL refuses it; admin: it is an
	 * administrator, as ctl_caller's); each message, with the fds that
	 * came with it (now the callee's), to client_msg, which writes the reply
	 * into reply (room: *reply_len, set to its length) and returns true once
	 * the client is established (its HELLO accepted: no deadline any more);
	 * a closed or failed connection to client_close.
	 */
	const char *client_path;
	void *(*client_open)(void *ctx, int fd, const struct ucred *cred, bool admin);
	bool (*client_msg)(void *ctx, void *client, const void *msg, size_t len, int *fds,
			   int nfds, void *reply, size_t *reply_len);
	void (*client_close)(void *ctx, void *client);
	/*
	 * After client_open and after each message's reply: ns to wait before
	 * the client's next message is read (its request budget); 0 or NULL:
	 * at once.
	 */
	uint64_t (*client_wait)(void *ctx, void *client);
	void *ctx;
};

struct ctl_stats {
	uint64_t hello_timeouts;	/* clients closed for sending no HELLO in time */
	uint64_t clients_refused;	/* too many connections without HELLO from one user */
	uint64_t admin_timeouts;	/* admin connections cut at their deadline */
	uint64_t admin_refused;		/* too many admin connections (of one user, or all) */
};

int ctl_create(const struct ctl_cfg *cfg, struct ctl **out);
/* Control thread (e.g. in handle). */
void ctl_get_stats(const struct ctl *c, struct ctl_stats *out);
/*
 * Before ctl_run: call fn(ctx) on the control thread whenever fd is
 * readable (fn reads it).  One fd; mrocd's: address changes (netlink).
 */
void ctl_watch(struct ctl *c, int fd, void (*fn)(void *ctx));
/* Serve until SIGTERM/SIGINT; returns the signal number that ended it. */
int ctl_run(struct ctl *c);
/* Drop every client connection (client_close for each): before the worker stops. */
void ctl_close_clients(struct ctl *c);
void ctl_destroy(struct ctl *c);

#endif
