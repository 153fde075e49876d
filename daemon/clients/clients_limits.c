// SPDX-License-Identifier: MIT
/*
 * libmroc clients: the control thread's limits per user (established
 * clients, QPs, regions, services by uid), users' shares of the daemon's
 * tables and the administrators' reserve (#24 item 12).
 */
#include <errno.h>
#include "clients_priv.h"
#include "log.h"

/* uid's entry (it has established clients), or NULL. */
struct uid_count *clients_uid_of(struct clients *cs, uid_t uid)
{
	for (uint32_t i = 0; i < cs->nuids; i++)
		if (cs->uids[i].uid == uid)
			return &cs->uids[i];
	return NULL;
}

/*
 * One user's share of a table of total entries (#24 item 12): at least one,
 * so that nobody is shut out by rounding.  Root is not held to it: it can
 * reconfigure mrocd anyway, and a single-user host (one training job, 4,000
 * QPs, as root) must be able to use the whole table.
 */
uint32_t clients_share(const struct clients_limits *lim, uint32_t total, uid_t uid)
{
	uint64_t n;

	if (uid == 0)
		return UINT32_MAX;
	n = (uint64_t)total * (lim->uid_share ? lim->uid_share : 100) / 100;

	return n ? (uint32_t)n : 1;
}

/*
 * The administrators' reserve (limits.admin_reserve_percent, #24 item 12):
 * clients that are no administrators hold at most the rest of a table of
 * total entries between them, so several users (or one person with several
 * uids) cannot fill it and lock out the administrator who would clean up.
 * held: what they hold now.  True, logged and counted, when cl may not take one more.
 */
bool clients_over_reserve(struct clients *ctl, const struct client *cl, uint32_t held,
		  uint32_t total, const char *what)
{
	uint64_t open = (uint64_t)total * (100 - ctl->lim.admin_reserve) / 100;

	if (cl->admin || held < (open ? open : 1))
		return false;
	pr_warn_rl("client %u (pid %d, uid %u): refused: clients that are no administrators hold "
		   "%u %s, all but the administrators' reserve (limits.admin_reserve_percent %u%%)",
		   cl->id, (int)cl->pid, (unsigned)cl->uid, held, what, ctl->lim.admin_reserve);
	ctl->reserve_refused++;
	return true;
}

int clients_over_share(struct clients *ctl, struct client *cl, const char *what, uint32_t n)
{
	pr_warn_rl("client %u (pid %d, uid %u): refused: its user holds %u %s, its share "
		   "(limits.uid_share_percent %u%%)", cl->id, (int)cl->pid, (unsigned)cl->uid, n,
		   what, ctl->lim.uid_share);
	ctl->share_refused++;
	return -EDQUOT;
}

/* Established clients of uid, changed by delta (+1, -1) unless 0. */
uint32_t clients_uid_count(struct clients *cs, uid_t uid, int delta)
{
	uint32_t i;

	for (i = 0; i < cs->nuids && cs->uids[i].uid != uid; i++)
		;
	if (i == cs->nuids) {
		if (delta <= 0 || cs->nuids == UIDS_MAX)
			return 0;
		cs->uids[cs->nuids++] = (struct uid_count){ .uid = uid };
	}
	cs->uids[i].n += (uint32_t)delta;
	if (cs->uids[i].n)
		return cs->uids[i].n;
	cs->uids[i] = cs->uids[--cs->nuids];	/* its last client went */
	return 0;
}
