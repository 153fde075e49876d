// SPDX-License-Identifier: MIT
/*
 * mpi_bench: MPI ping-pong, MPI_Allreduce and MPI_Alltoall by message size,
 * written with MPI only, every result checked by the program itself.  Used by
 * tests/e2e/test_mpi.sh (a 2-rank allreduce over mroc) and scripts/bench-mpi.sh
 * (mroc vs Open MPI's TCP path).
 *
 *   mpirun -np 2 ... mpi_bench [pingpong|allreduce|alltoall|all] [-s MIN] [-S MAX]
 *                              [-n ITERS] [-r RUNS]
 *
 * Sizes go from MIN to MAX bytes (powers of two; defaults 8 and 1 MiB).  Each
 * size runs RUNS times (default 5) ITERS operations (default 100, fewer for
 * large sizes); rank 0 prints one line per size with the time per operation
 * (ping-pong: half the round trip) over the runs, min/median/max in
 * microseconds, and the bandwidth at the median.  Exit status 0 only if every
 * check passed on every rank.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, nranks;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void report(const char *op, size_t bytes, int iters, double *t, int runs, double bw_bytes)
{
	qsort(t, runs, sizeof(*t), cmp_double);
	if (rank == 0)
		printf("%-9s %9zu %6d %10.2f %10.2f %10.2f %10.2f\n", op, bytes, iters, t[0] * 1e6,
		       t[runs / 2] * 1e6, t[runs - 1] * 1e6, bw_bytes / t[runs / 2] / 1e6);
}

static int iters_for(size_t bytes, int iters)
{
	if (bytes >= 1 << 20)
		return iters / 10 ? iters / 10 : 1;
	if (bytes >= 1 << 16)
		return iters / 4 ? iters / 4 : 1;
	return iters;
}

/* Rank 0 and 1 bounce a message; the other ranks sit it out. */
static int pingpong(size_t bytes, int iters, int runs)
{
	uint8_t *buf = malloc(bytes ? bytes : 1);
	double t[64];
	int bad = 0;

	for (int r = 0; r < runs; r++) {
		double t0;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; i < iters && rank < 2; i++) {
			uint8_t v = (uint8_t)(i * 7 + r);

			if (rank == 0) {
				memset(buf, v, bytes);
				MPI_Send(buf, (int)bytes, MPI_BYTE, 1, i, MPI_COMM_WORLD);
				MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, i, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				/* The echo comes back incremented: proof it crossed twice. */
				for (size_t k = 0; k < bytes; k++)
					bad |= buf[k] != (uint8_t)(v + 1);
			} else {
				MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, i, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				for (size_t k = 0; k < bytes; k++)
					bad |= buf[k] != v, buf[k]++;
				MPI_Send(buf, (int)bytes, MPI_BYTE, 0, i, MPI_COMM_WORLD);
			}
		}
		t[r] = (MPI_Wtime() - t0) / iters / 2;
	}
	report("pingpong", bytes, iters, t, runs, (double)bytes);
	free(buf);
	return bad;
}

static int allreduce(size_t bytes, int iters, int runs)
{
	size_t n = bytes / sizeof(int64_t) ? bytes / sizeof(int64_t) : 1;
	int64_t *in = malloc(n * sizeof(*in)), *out = malloc(n * sizeof(*out));
	int64_t tri = (int64_t)nranks * (nranks + 1) / 2;
	double t[64];
	int bad = 0;

	for (size_t k = 0; k < n; k++)
		in[k] = (int64_t)(rank + 1) * (int64_t)(k % 1000 + 1);
	for (int r = 0; r < runs; r++) {
		double t0;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++) {
			memset(out, 0xff, n * sizeof(*out));
			MPI_Allreduce(in, out, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
			for (size_t k = 0; k < n; k++)
				bad |= out[k] != tri * (int64_t)(k % 1000 + 1);
		}
		t[r] = (MPI_Wtime() - t0) / iters;
	}
	report("allreduce", n * sizeof(int64_t), iters, t, runs, (double)(n * sizeof(int64_t)));
	free(in);
	free(out);
	return bad;
}

/* bytes is what each rank sends to each other rank. */
static int alltoall(size_t bytes, int iters, int runs)
{
	size_t n = bytes / sizeof(uint32_t) ? bytes / sizeof(uint32_t) : 1;
	uint32_t *in = malloc(n * nranks * sizeof(*in)), *out = malloc(n * nranks * sizeof(*out));
	double t[64];
	int bad = 0;

	for (int d = 0; d < nranks; d++)
		for (size_t k = 0; k < n; k++)
			in[d * n + k] = (uint32_t)(rank * 100000 + d * 1000) + (uint32_t)(k % 997);
	for (int r = 0; r < runs; r++) {
		double t0;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++) {
			memset(out, 0xff, n * nranks * sizeof(*out));
			MPI_Alltoall(in, (int)n, MPI_UINT32_T, out, (int)n, MPI_UINT32_T,
				     MPI_COMM_WORLD);
			for (int s = 0; s < nranks; s++)
				for (size_t k = 0; k < n; k++)
					bad |= out[s * n + k] != (uint32_t)(s * 100000 + rank * 1000) +
								 (uint32_t)(k % 997);
		}
		t[r] = (MPI_Wtime() - t0) / iters;
	}
	report("alltoall", n * sizeof(uint32_t), iters, t, runs,
	       (double)(n * sizeof(uint32_t) * (nranks - 1)));
	free(in);
	free(out);
	return bad;
}

int main(int argc, char **argv)
{
	const char *which = "all";
	size_t smin = 8, smax = 1 << 20;
	int iters = 100, runs = 5, opt, bad = 0, allbad = 0;
	char host[64];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	while ((opt = getopt(argc, argv, "s:S:n:r:")) != -1) {
		switch (opt) {
		case 's': smin = strtoull(optarg, NULL, 0); break;
		case 'S': smax = strtoull(optarg, NULL, 0); break;
		case 'n': iters = atoi(optarg); break;
		case 'r': runs = atoi(optarg); break;
		default:
			if (rank == 0)
				fprintf(stderr, "usage: mpi_bench [pingpong|allreduce|alltoall|all] "
					"[-s MIN] [-S MAX] [-n ITERS] [-r RUNS]\n");
			MPI_Finalize();
			return 2;
		}
	}
	if (optind < argc)
		which = argv[optind];
	if (runs < 1 || runs > 64 || iters < 1 || nranks < 2 || !smin || smin > smax) {
		if (rank == 0)
			fprintf(stderr, "mpi_bench: needs 2+ ranks, 1..64 runs, sizes MIN <= MAX\n");
		MPI_Finalize();
		return 2;
	}
	gethostname(host, sizeof(host));
	if (rank == 0)
		printf("# %d ranks; op bytes iters t_min_us t_median_us t_max_us MB/s_at_median\n",
		       nranks);
	for (size_t s = smin; s <= smax; s *= 2) {
		int it = iters_for(s, iters);

		if (!strcmp(which, "pingpong") || !strcmp(which, "all"))
			bad |= pingpong(s, it, runs);
		if (!strcmp(which, "allreduce") || !strcmp(which, "all"))
			bad |= allreduce(s, it, runs);
		if (!strcmp(which, "alltoall") || !strcmp(which, "all"))
			bad |= alltoall(s, it, runs);
	}
	MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s\n", allbad ? "# FAILED: wrong results" : "# results verified");
	MPI_Finalize();
	return allbad ? 1 : 0;
}
