// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-mpi-test: MPI between the paired guests (scripts/guest/mpi-init.sh) or
 * the guests on the fabric (-c, scripts/guest/fabric-init.sh), one rank per
 * guest, over whatever the PML gives (pml ucx on rc_verbs of chpp-hca or of
 * soft-RoCE). Every transfer is checked:
 *
 *   latency    ping-pong of 1 B .. 1 MiB, half the round trip in usec; each
 *              message carries a pattern of (size, iteration, rank) that the
 *              receiver checks byte for byte
 *   bandwidth  rank 0 streams windows of MPI_Isend of 4 KiB .. 1 MiB to
 *              rank 1 (which checks the last message of every window), then
 *              one ack; MB/s (10^6 bytes) of payload
 *   allreduce  MPI_Allreduce of 1 .. 1 Mi elements: MPI_SUM of int64 and of
 *              double (integers, so exact), MPI_MAX and MPI_MIN of int32, and
 *              MPI_BXOR; every rank compares every element with its own
 *              computation of the result
 *   alltoall   (-c) MPI_Alltoall of 1 B .. 256 KiB per pair: the block from
 *              rank s to rank r carries a pattern of (size, iteration, s, r)
 *              that r checks byte for byte
 *
 * Prints "chpp-mpi: ..." lines (rank 0) and "chpp-mpi: PASS <n> checks";
 * exits non-zero on any wrong byte or value, on any rank.
 *
 *   chpp-mpi-test [-n ITERS] [-q]   (-q: fewer sizes, for a quick run)
 *   chpp-mpi-test -c [-q]           any number of ranks: the collectives
 *                                   only (allreduce, alltoall)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int rank, nranks;
static long checks;
static int bad;

#define FAILF(...) do { \
		fprintf(stderr, "chpp-mpi: rank %d: FAIL ", rank); \
		fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); \
		bad = 1; \
	} while (0)

static unsigned char pat(size_t i, unsigned int it, int from, size_t sz)
{
	return (unsigned char)(i * 131 + it * 7 + (unsigned int)from * 29 + sz * 3 + (i >> 8));
}

static void fill(unsigned char *b, size_t sz, unsigned int it, int from)
{
	for (size_t i = 0; i < sz; i++)
		b[i] = pat(i, it, from, sz);
}

static int check(const unsigned char *b, size_t sz, unsigned int it, int from, const char *what)
{
	checks++;
	for (size_t i = 0; i < sz; i++) {
		if (b[i] != pat(i, it, from, sz)) {
			FAILF("%s %zu B iteration %u: byte %zu is 0x%02x, want 0x%02x",
				  what, sz, it, i, b[i], pat(i, it, from, sz));
			return -1;
		}
	}
	return 0;
}

static int iters_for(size_t sz, int base)
{
	int n = base;

	if (sz >= 65536)
		n = base / 10;
	if (sz >= 1048576)
		n = base / 50;
	return n < 4 ? 4 : n;
}

static void run_latency(int base, int quick)
{
	static const size_t qsizes[] = { 1, 4096, 65536, 1048576 };
	static const size_t sizes[] = { 1, 8, 64, 512, 4096, 16384, 65536, 262144, 1048576 };
	const size_t *sz = quick ? qsizes : sizes;
	int nsz = quick ? 4 : (int)ARRAY_SIZE(sizes);
	unsigned char *sb = malloc(1048576), *rb = malloc(1048576);
	int peer = 1 - rank;

	for (int s = 0; s < nsz; s++) {
		int n = iters_for(sz[s], base);
		double t0 = 0, us;

		for (int it = -2; it < n; it++) {       /* 2 warm-up round trips */
			unsigned int u = (unsigned int)(it + 2);

			if (it == 0)
				t0 = MPI_Wtime();
			if (rank == 0) {
				fill(sb, sz[s], u, 0);
				MPI_Send(sb, (int)sz[s], MPI_BYTE, peer, 1, MPI_COMM_WORLD);
				memset(rb, 0, sz[s]);
				MPI_Recv(rb, (int)sz[s], MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				check(rb, sz[s], u, 1, "ping-pong reply");
			} else {
				memset(rb, 0, sz[s]);
				MPI_Recv(rb, (int)sz[s], MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				check(rb, sz[s], u, 0, "ping-pong");
				fill(sb, sz[s], u, 1);
				MPI_Send(sb, (int)sz[s], MPI_BYTE, peer, 2, MPI_COMM_WORLD);
			}
		}
		us = (MPI_Wtime() - t0) * 1e6 / n / 2;
		if (rank == 0)
			printf("chpp-mpi: latency %zu B x%d: %.1f usec (half round trip)\n", sz[s], n, us);
	}
	free(sb);
	free(rb);
}

#define WINDOW 16

static void run_bandwidth(int base, int quick)
{
	static const size_t qsizes[] = { 65536, 1048576 };
	static const size_t sizes[] = { 4096, 65536, 1048576 };
	const size_t *sz = quick ? qsizes : sizes;
	int nsz = quick ? 2 : 3;
	unsigned char *b = malloc((size_t)WINDOW * 1048576);
	MPI_Request req[WINDOW];
	int peer = 1 - rank;

	for (int s = 0; s < nsz; s++) {
		int windows = iters_for(sz[s], base) / WINDOW, ack = 0;
		double t0 = 0, secs;

		if (windows < 2)
			windows = 2;
		for (int w = -1; w < windows; w++) {    /* 1 warm-up window */
			unsigned int u = (unsigned int)(w + 1);

			if (w == 0)
				t0 = MPI_Wtime();
			for (int i = 0; i < WINDOW; i++) {
				unsigned char *p = b + (size_t)i * sz[s];

				if (rank == 0) {
					if (i == WINDOW - 1)
						fill(p, sz[s], u, 0);
					MPI_Isend(p, (int)sz[s], MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[i]);
				} else {
					if (i == WINDOW - 1)
						memset(p, 0, sz[s]);
					MPI_Irecv(p, (int)sz[s], MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[i]);
				}
			}
			MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
			if (rank == 1)
				check(b + (size_t)(WINDOW - 1) * sz[s], sz[s], u, 0, "bandwidth stream");
		}
		if (rank == 0)
			MPI_Recv(&ack, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		else
			MPI_Send(&ack, 1, MPI_INT, peer, 4, MPI_COMM_WORLD);
		secs = MPI_Wtime() - t0;
		if (rank == 0)
			printf("chpp-mpi: bandwidth %zu B x%d (window %d): %.1f MB/s\n", sz[s],
				   windows * WINDOW, WINDOW, (double)sz[s] * windows * WINDOW / secs / 1e6);
	}
	free(b);
}

static void run_allreduce(int quick)
{
	static const int counts[] = { 1, 7, 1024, 65536, 1048576 };
	int ncnt = quick ? 4 : 5;

	for (int c = 0; c < ncnt; c++) {
		int n = counts[c];
		int64_t *a = malloc(n * sizeof(*a)), *ar = malloc(n * sizeof(*ar));
		double *d = malloc(n * sizeof(*d)), *dr = malloc(n * sizeof(*dr));
		int32_t *m = malloc(n * sizeof(*m)), *mx = malloc(n * sizeof(*mx)), *mn = malloc(n * sizeof(*mn));
		uint32_t *x = malloc(n * sizeof(*x)), *xr = malloc(n * sizeof(*xr));
		double t0 = MPI_Wtime(), us;
		int wrong = 0;

		for (int i = 0; i < n; i++) {
			a[i] = (int64_t)i * 1000003 + (int64_t)(rank + 1) * (1LL << 40);
			d[i] = (double)i * (rank + 1) + 0.5 * rank;
			m[i] = (int32_t)((i * 7 + rank * 13) % 101) - 50;
			x[i] = (uint32_t)i * 2654435761u ^ (uint32_t)(rank + 1) * 40503u;
		}
		MPI_Allreduce(a, ar, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
		MPI_Allreduce(d, dr, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		MPI_Allreduce(m, mx, n, MPI_INT32_T, MPI_MAX, MPI_COMM_WORLD);
		MPI_Allreduce(m, mn, n, MPI_INT32_T, MPI_MIN, MPI_COMM_WORLD);
		MPI_Allreduce(x, xr, n, MPI_UINT32_T, MPI_BXOR, MPI_COMM_WORLD);
		us = (MPI_Wtime() - t0) * 1e6 / 5;

		for (int i = 0; i < n && wrong < 3; i++) {
			int64_t ea = 0;
			double ed = 0;
			int32_t emx = INT32_MIN, emn = INT32_MAX;
			uint32_t ex = 0;

			for (int r = 0; r < nranks; r++) {
				int32_t v = (int32_t)((i * 7 + r * 13) % 101) - 50;

				ea += (int64_t)i * 1000003 + (int64_t)(r + 1) * (1LL << 40);
				ed += (double)i * (r + 1) + 0.5 * r;
				emx = v > emx ? v : emx;
				emn = v < emn ? v : emn;
				ex ^= (uint32_t)i * 2654435761u ^ (uint32_t)(r + 1) * 40503u;
			}
			if (ar[i] != ea || dr[i] != ed || mx[i] != emx || mn[i] != emn || xr[i] != ex) {
				FAILF("MPI_Allreduce of %d: element %d: sum %lld/%lld, dsum %.1f/%.1f, max %d/%d, min %d/%d, bxor %u/%u (got/want)",
					  n, i, (long long)ar[i], (long long)ea, dr[i], ed,
					  mx[i], emx, mn[i], emn, xr[i], ex);
				wrong++;
			}
		}
		checks += 5;
		if (rank == 0)
			printf("chpp-mpi: allreduce %d elements (sum int64, sum double, max, min, bxor): %.1f usec each, all checked\n",
			       n, us);
		free(a);
		free(ar);
		free(d);
		free(dr);
		free(m);
		free(mx);
		free(mn);
		free(x);
		free(xr);
	}
}

static void run_alltoall(int quick)
{
	static const size_t sizes[] = { 1, 64, 4096, 65536, 262144 };
	int nsz = quick ? 4 : 5, reps = 3;

	for (int s = 0; s < nsz; s++) {
		size_t sz = sizes[s], all = sz * (size_t)nranks;
		unsigned char *sb = malloc(all), *rb = malloc(all);
		double t0 = 0, us;

		for (int it = -1; it < reps; it++) {    /* 1 warm-up */
			unsigned int u = (unsigned int)(it + 1);

			if (it == 0)
				t0 = MPI_Wtime();
			for (int r = 0; r < nranks; r++)
				fill(sb + r * sz, sz, u, rank * 64 + r);
			memset(rb, 0, all);
			MPI_Alltoall(sb, (int)sz, MPI_BYTE, rb, (int)sz, MPI_BYTE, MPI_COMM_WORLD);
			for (int r = 0; r < nranks; r++)
				check(rb + r * sz, sz, u, r * 64 + rank, "alltoall block");
		}
		us = (MPI_Wtime() - t0) * 1e6 / reps;
		if (rank == 0)
			printf("chpp-mpi: alltoall %zu B per pair x%d ranks: %.1f usec each, all blocks checked\n",
			       sz, nranks, us);
		free(sb);
		free(rb);
	}
}

int main(int argc, char **argv)
{
	int base = 1000, quick = 0, coll = 0, o, len, any_bad = 0;
	long all_checks = 0;
	char ver[MPI_MAX_LIBRARY_VERSION_STRING];

	while ((o = getopt(argc, argv, "n:qc")) != -1) {
		if (o == 'n')
			base = atoi(optarg);
		else if (o == 'c')
			coll = 1;
		else if (o == 'q')
			quick = 1;
		else
			return 2;
	}
	/* Line by line: a job that fails or is killed keeps what it printed. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (coll ? nranks < 2 || nranks > 64 : nranks != 2) {
		if (rank == 0)
			fprintf(stderr, "chpp-mpi: needs %s ranks, has %d\n",
				coll ? "2 to 64" : "2", nranks);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Get_library_version(ver, &len);
	if (rank == 0)
		printf("chpp-mpi: %d ranks; %.*s\n", nranks, (int)strcspn(ver, "\n,"), ver);

	if (coll) {
		run_allreduce(quick);
		run_alltoall(quick);
	} else {
		run_latency(base, quick);
		run_bandwidth(base, quick);
		run_allreduce(quick);
	}

	MPI_Reduce(&checks, &all_checks, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0) {
		if (any_bad)
			printf("chpp-mpi: FAIL (a rank saw wrong data)\n");
		else
			printf("chpp-mpi: PASS %ld checks\n", all_checks);
	}
	fflush(stdout);
	MPI_Finalize();
	return any_bad ? 1 : 0;
}
