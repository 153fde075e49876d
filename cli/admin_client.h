/* SPDX-License-Identifier: MIT */
/*
 * The admin socket from mroc-cli's side: one connection per request, one
 * JSON object each way, newline-terminated (daemon/ctl.h has the protocol,
 * daemon/admin.c the commands).
 */
#ifndef MROC_CLI_ADMIN_CLIENT_H
#define MROC_CLI_ADMIN_CLIENT_H

#include <jansson.h>
#include <stddef.h>

#define ADMIN_VERSION		1
#define ADMIN_SOCKET_DEFAULT	"/run/mroc/admin.sock"
#define ADMIN_SOCKET_ENV	"MROC_ADMIN_SOCKET"
#define ADMIN_TIMEOUT_MS	5000

/*
 * Send {"version":1,"cmd":cmd, ...args} (args may be NULL; it is not
 * taken) to the socket at path; the reply, which has "ok": true, goes to
 * *reply (the caller's).  Returns 0, or a negative errno with a message for
 * the operator in err: the connect error (-ENOENT, -ECONNREFUSED, -EACCES:
 * mrocd unreachable, the socket path in the message), -ETIMEDOUT, -EPROTO
 * (not a reply of ours), -EREMOTEIO (mrocd refused: its "error"), -EPERM
 * (a command for administrators: err is mrocd's "permission denied: ...").
 */
int admin_request(const char *path, const char *cmd, const json_t *args, json_t **reply,
		  char *err, size_t errlen);

#endif
