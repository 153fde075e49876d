// SPDX-License-Identifier: MIT
/*
 * The mroc provider against hostile peers (issue 24, items 15-20, and its
 * provider harness).  A victim drives the libfabric API; an attacker on
 * another host speaks the provider's protocol (libfabric/proto.h) itself over
 * raw libmroc QPs, beside a genuine libfabric endpoint X of its own:
 *
 *   fi_hostile victim CTLPORT
 *   fi_hostile attacker VICTIM_IP CTLPORT OWN_IP [FUZZ_CHUNKS]
 *
 * They keep in step over a TCP connection (CTLPORT, lines).  The attacker's
 * raw connections claim an identity M it can answer for (it listens on M's
 * service and confirms its nonces: a compromised peer), except in 20 where it
 * claims to be X.  Scenarios, each checked by the victim (exit 1 on the
 * first failure, the attacker's findings come over the line):
 *
 *   15  forged READ_RESP / RMA_ACK / ATOMIC_RESP naming the victim's write to X:
 *       no completion before X answers, the write's source buffer untouched
 *   16  an RMA_ACK for a write still being sent (credits withheld): no early
 *       completion; the write lands whole and completes once, at its answer
 *   19  a region closed between two chunks of a remote write (the rest is not
 *       written, EACCES answered) and during a remote read (nothing read after
 *       the close: the read ends with MFI_F_ABORT)
 *   18  FI_PEEK|FI_CLAIM|FI_DISCARD on a message still arriving: its buffer
 *       freed at once (mallinfo2), the rest of it goes nowhere
 *   17  fi_close(ep) with sends, a write, a read and receives outstanding
 *       (each ends FI_ECANCELED on the CQ), and with a message half received
 *       into a posted receive
 *   20  a connection claiming to be X: the victim's message to X reaches X
 *       only, and the forger's message "from X" never matches a receive
 *       directed at X
 *   21  forged rendezvous announcements (RTS, MFI_F_RNDV): one with a payload is
 *       refused; one naming 1 MiB of the attacker's region for a 64 KiB receive
 *       is read into that receive only (FI_ETRUNC, the bytes around it
 *       untouched, the FIN answered); one naming no region fails its receive
 *       with nothing written
 *   fuzz random headers and payloads (FUZZ_CHUNKS, default 3000) from M
 *       while the victim has receives and a read outstanding: no crash, no
 *       byte outside the registered region or a posted buffer changed, then a
 *       verified round trip with X
 *
 * The refusals are read from the provider's counters (fi_mroc.h) when it has
 * them.  Written for the mroc provider (FI_PROVIDER_PATH).
 */
#include "hostile.h"

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "victim"))
		return victim(atoi(argv[2]));
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "attacker"))
		return attacker(argv[2], atoi(argv[3]), argv[4], argc == 6 ? atol(argv[5]) : 3000);
	fprintf(stderr, "usage: fi_hostile victim CTLPORT\n"
			"       fi_hostile attacker VICTIM_IP CTLPORT OWN_IP [FUZZ_CHUNKS]\n");
	return 2;
}
