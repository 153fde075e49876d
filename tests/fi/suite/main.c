// SPDX-License-Identifier: MIT
/*
 * What fabtests' quick and standard lists ask of an RDM provider, written
 * with libfabric only (any provider: FI_PROVIDER or -p; the tests run it with
 * mroc, scripts/bench-mpi.sh also with udp;ofi_rxd and tcp;ofi_rxm).  Each
 * test checks the bytes it moves.  A server and a client exchange endpoint
 * names (and region keys) over TCP, as fabtests' out-of-band socket does.
 *
 *   fi_suite [-p PROV] [-P PORT] [-n ITERS] [-S SIZES] [-w WINDOW] [-c CLIENTS] [-q] [-H FILE] TEST [SERVER]
 *
 * Without SERVER it is the server (unit needs no peer).  TEST:
 *   unit             getinfo (hints honoured and refused), domain (busy while an
 *                    endpoint is open), eq (an entry written; FI_WAIT_FD: poll on
 *                    FI_GETWAIT's fd and fi_eq_sread woken by another thread's write,
 *                    fi_trywait, sread's timeout), av (insert, lookup, remove, bad names), cq
 *                    (sizes, formats, empty reads), mr (sizes, keys, descriptors), cntr
 *                    (attributes, values, waits, FI_GETWAIT, fi_trywait, bind flags, close
 *                    while bound, an endpoint with counters and no CQ)
 *   rdm              fi_send/fi_recv ping-pong, 1 B .. 1 MiB, both directions checked
 *   tagged_pingpong  fi_tsend/fi_trecv ping-pong over SIZES: half round trip in us
 *   tagged_bw        WINDOW tagged sends in flight over SIZES: MB/s, every message checked
 *                    (-q: the first and last window only)
 *   rma_write, rma_read, rma_writedata
 *                    WINDOW RMA operations in flight over SIZES: MB/s; the target's region
 *                    (write), the reader's buffers (read) or the remote CQ data and the
 *                    region (writedata) checked
 *   atomic           every (operation, datatype) fi_atomicvalid accepts, fetching: the
 *                    original value and the new one (ATOMIC_READ) checked
 *   multi_recv       FI_MULTI_RECV buffers take 200 messages back to back; FI_MULTI_RECV
 *                    flags the release; every message's place and bytes checked
 *   unexpected_msg   64 tagged messages sent before any receive; FI_PEEK sees them;
 *                    received in the reverse order of their tags, each checked
 *   recv_cancel      a posted receive cancelled (FI_ECANCELED, buffer untouched); the
 *                    message goes to the next receive
 *   multi_client     the server answers CLIENTS clients (-c, default 4) that ping-pong at
 *                    once, each told apart by its tag, every reply checked
 *   cntr             counters (fi_cntr), one per kind on each side: the client's sends,
 *                    writes and base atomics, reads and fetching atomics, and the server's
 *                    receives, remote writes and remote reads, counted exactly whether
 *                    they make a CQ entry or not; a failed write counted as an error and
 *                    ending fi_cntr_wait (-FI_EAVAIL)
 *   zcopy            (mroc only) 1 MiB tagged messages: registered to registered (receive
 *                    posted first, and unexpected), registered to a malloc'd receive, and
 *                    from a malloc'd buffer; every byte checked, then the provider's
 *                    traffic counters (fi_mroc.h) say how each moved: by rendezvous READ
 *                    with no staging copy, through a bounce, or staged; a child after
 *                    fork() cannot touch the registered buffer (MADV_DONTFORK) and has
 *                    its own copy once it is closed.  FI_MROC_RNDV=0: all staged
 *   cm_data          MSG endpoints: fi_connect, fi_accept and fi_reject with CM private
 *                    data of 0, 1, 100 and FI_OPT_CM_DATA_SIZE bytes, each checked where
 *                    it arrives (FI_CONNREQ, FI_CONNECTED, the reject's err_data); one
 *                    byte more refused; a message each way on every accepted connection;
 *                    the server waits for each event in poll() on FI_GETWAIT's fd
 *   misuse           (no peer) calls made wrongly get their error code, never a crash:
 *                    closing an AV, CQ or EQ still bound (-FI_EBUSY), NULL buffers with a
 *                    length, an iov whose lengths wrap, NULL addresses and lengths to the
 *                    AV and fi_getname, CQ and EQ reads into NULL, fi_addrs not in the AV
 *                    or removed, fi_cq_read of 0 entries, an atomic at an unaligned
 *                    target address, a claim given up (fi_cancel) or
 *                    discarded, sends to a port nothing has on our own mrocd (an
 *                    error, FI_ETIMEDOUT where mrocd does not reach itself), two threads running progress and a third
 *                    fi_rx/tx_size_left at once (FI_THREAD_SAFE)
 *   misuse_msg       MSG endpoints: sends before fi_connect and after either side's
 *                    fi_shutdown refused (never queued for ever); connect, accept twice;
 *                    a FI_CONNREQ accepted after its passive endpoint closed
 *   misuse_threads   FI_THREAD_SAFE: 20000 messages (-q: 2000) checked while another thread
 *                    reads the endpoint's EQ (its progress) at once, on both sides
 *   misuse_mr        1 MiB sent from a registration closed before the receive is posted:
 *                    both sides complete (no hang), the endpoints work on
 *   refused          sends to an mrocd in another security mode (REFUSED_IP): FI_EACCES at
 *                    its refusal, not a retry until the connect timeout
 *
 * -H FILE (the bandwidth tests): after the first size's warm-up window, before any
 * timing, create FILE.held.server or FILE.held.client and wait until FILE exists.
 * scripts/bench-mpi.sh puts its loss on the plane the warm-up took meanwhile, so
 * every timed window runs under the loss and nothing polls the fabric beside it.
 *
 * Prints "ok: ..." lines and figures; exit 0 when all held, 1 on the first
 * failure (with why), 77 when the provider lacks what the test needs.
 */
#include <getopt.h>

#include "suite.h"

const char *prov = "mroc", *test, *server;
int port = 47630, iters = 10, window = 16, clients = 4;
size_t sizes[MAX_SIZES] = { 64, 4096, 65536, 1048576 };
int nsizes = 4;
bool quick;
const char *hold_path;		/* -H */
bool srv;			/* no SERVER given: we are the server */
time_t deadline;

int main(int argc, char **argv)
{
	int o;

	if (getenv("FI_PROVIDER"))
		prov = getenv("FI_PROVIDER");
	while ((o = getopt(argc, argv, "p:P:n:S:w:c:qH:")) != -1) {
		switch (o) {
		case 'p': prov = optarg; break;
		case 'P': port = atoi(optarg); break;
		case 'n': iters = atoi(optarg); break;
		case 'w': window = atoi(optarg); break;
		case 'c': clients = atoi(optarg); break;
		case 'q': quick = true; break;
		case 'H': hold_path = optarg; break;
		case 'S': {
			char *s = strdup(optarg), *t, *save;

			nsizes = 0;
			for (t = strtok_r(s, ",", &save); t && nsizes < MAX_SIZES;
			     t = strtok_r(NULL, ",", &save))
				sizes[nsizes++] = strtoull(t, NULL, 0);
			free(s);
			break;
		}
		default:
			goto usage;
		}
	}
	if (optind >= argc || window < 1 || window > 256 || clients < 1 || clients > 64)
		goto usage;
	test = argv[optind];
	server = optind + 1 < argc ? argv[optind + 1] : NULL;
	srv = !server;
	deadline = time(NULL) + TIMEOUT_S;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(test, "unit"))
		t_unit();
	else if (!strcmp(test, "rdm"))
		pingpong(false, (size_t[]){ 1, 64, 4096, 65536, 1048576 }, 5, iters);
	else if (!strcmp(test, "tagged_pingpong"))
		pingpong(true, sizes, nsizes, iters);
	else if (!strcmp(test, "tagged_bw"))
		t_tagged_bw();
	else if (!strcmp(test, "rma_write"))
		t_rma_bw(RMA_WRITE);
	else if (!strcmp(test, "rma_read"))
		t_rma_bw(RMA_READ);
	else if (!strcmp(test, "rma_writedata"))
		t_rma_bw(RMA_WRITEDATA);
	else if (!strcmp(test, "atomic"))
		t_atomic();
	else if (!strcmp(test, "multi_recv"))
		t_multi_recv();
	else if (!strcmp(test, "unexpected_msg"))
		t_unexpected();
	else if (!strcmp(test, "recv_cancel"))
		t_recv_cancel();
	else if (!strcmp(test, "multi_client"))
		t_multi_client();
	else if (!strcmp(test, "cntr"))
		t_cntr();
	else if (!strcmp(test, "zcopy"))
		t_zcopy();
	else if (!strcmp(test, "cm_data"))
		t_cm_data();
	else if (!strcmp(test, "misuse"))
		t_misuse();
	else if (!strcmp(test, "misuse_msg"))
		t_misuse_msg();
	else if (!strcmp(test, "misuse_threads"))
		t_misuse_threads();
	else if (!strcmp(test, "misuse_mr"))
		t_misuse_mr();
	else if (!strcmp(test, "refused"))
		t_refused();
	else
		goto usage;
	return 0;
usage:
	fprintf(stderr, "usage: fi_suite [-p PROV] [-P PORT] [-n ITERS] [-S SIZES] [-w WINDOW] "
			"[-c CLIENTS] [-q] [-H FILE] TEST [SERVER]\n");
	return 2;
}
