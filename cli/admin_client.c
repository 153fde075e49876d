// SPDX-License-Identifier: MIT
/* The admin socket from mroc-cli's side (see admin_client.h). */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "admin_client.h"

#define REPLY_MAX	(64u << 20)	/* far above any real reply */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until fd is ready for events before the deadline: 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		long long left = deadline - now_ms();
		int n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static int connect_to(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "admin socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno == EPERM ? EACCES : errno;	/* -EPERM: a refused command */

		snprintf(err, errlen, "cannot connect to mrocd at %s: %s", path, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

static int send_all(int fd, const char *buf, size_t len, long long deadline)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			int e = wait_fd(fd, POLLOUT, deadline);

			if (e)
				return e;
			continue;
		}
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read up to the newline (or EOF): a malloc'd string in *out. */
static int recv_line(int fd, char **out, long long deadline)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;
		int e;

		if (len + 1 >= cap) {
			char *b = cap < REPLY_MAX ? realloc(buf, cap * 2) : NULL;

			if (!b) {
				free(buf);
				return -EMSGSIZE;
			}
			buf = b;
			cap *= 2;
		}
		n = recv(fd, buf + len, cap - len - 1, MSG_DONTWAIT);
		if (n > 0) {
			len += (size_t)n;
			if (memchr(buf + len - (size_t)n, '\n', (size_t)n))
				break;
			continue;
		}
		if (n == 0)
			break;
		if (errno != EAGAIN && errno != EINTR) {
			e = -errno;
			free(buf);
			return e;
		}
		e = wait_fd(fd, POLLIN, deadline);
		if (e) {
			free(buf);
			return e;
		}
	}
	buf[len] = 0;
	*out = buf;
	return 0;
}

/* The reply line -> *out (ok: true, our version): 0, -EPROTO or -EREMOTEIO (the daemon's "error"). */
static int check_reply(const char *path, const char *cmd, const char *line, json_t **out,
		       char *err, size_t errlen)
{
	json_error_t je;
	json_t *r = json_loads(line, JSON_DISABLE_EOF_CHECK, &je);
	const char *msg;
	json_int_t v;

	if (!r || !json_is_object(r)) {
		snprintf(err, errlen, "mrocd at %s sent a reply that is not a JSON object%s%s",
			 path, r ? "" : ": ", r ? "" : je.text);
		json_decref(r);
		return -EPROTO;
	}
	v = json_integer_value(json_object_get(r, "version"));
	msg = json_string_value(json_object_get(r, "error"));
	if (!json_is_true(json_object_get(r, "ok"))) {
		/* Not an administrator (daemon.admin_group): mrocd's text says so. */
		bool denied = json_is_true(json_object_get(r, "denied"));

		if (denied)
			snprintf(err, errlen, "%s", msg ? msg : "permission denied");
		else
			snprintf(err, errlen, "mrocd refused \"%s\": %s", cmd,
				 msg ? msg : "no reason given");
		json_decref(r);
		return denied ? -EPERM : -EREMOTEIO;
	}
	if (v != ADMIN_VERSION) {
		snprintf(err, errlen, "mrocd at %s speaks admin protocol version %lld, mroc-cli %d",
			 path, (long long)v, ADMIN_VERSION);
		json_decref(r);
		return -EPROTO;
	}
	*out = r;
	return 0;
}

int admin_request(const char *path, const char *cmd, const json_t *args, json_t **reply,
		  char *err, size_t errlen)
{
	long long deadline = now_ms() + ADMIN_TIMEOUT_MS;
	json_t *req = json_object();
	char *out = NULL, *line = NULL;
	int fd, e;

	*reply = NULL;
	if (args)
		json_object_update(req, (json_t *)args);
	json_object_set_new(req, "version", json_integer(ADMIN_VERSION));
	json_object_set_new(req, "cmd", json_string(cmd));
	out = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (!out) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	fd = connect_to(path, err, errlen);
	if (fd < 0) {
		e = fd;
		goto out;
	}
	e = send_all(fd, out, strlen(out), deadline);
	if (!e)
		e = send_all(fd, "\n", 1, deadline);
	if (!e)
		e = recv_line(fd, &line, deadline);
	if (e == -ETIMEDOUT)
		snprintf(err, errlen, "mrocd at %s did not answer \"%s\" within %d s", path, cmd,
			 ADMIN_TIMEOUT_MS / 1000);
	else if (e)
		snprintf(err, errlen, "mrocd at %s: \"%s\": %s", path, cmd, strerror(-e));
	else if (!*line) {
		snprintf(err, errlen, "mrocd at %s closed the connection without a reply to \"%s\"",
			 path, cmd);
		e = -EPROTO;
	} else {
		e = check_reply(path, cmd, line, reply, err, errlen);
	}
	close(fd);
out:
	free(line);
	free(out);
	return e;
}
