// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * The --pair rendezvous files of the user-space test programs
 * (chpp_pairfile.h).
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "chpp_pairfile.h"

/* Wait up to 120 s for @path to exist. */
static int wait_file(const char *path)
{
	struct timespec d = { 0, 100 * 1000 * 1000 };
	int i;

	for (i = 0; i < 1200; i++) {
		if (!access(path, R_OK))
			return 0;
		nanosleep(&d, NULL);
	}
	return -1;
}

int chpp_pair_exchange(const char *mine, const char *peer,
		       const struct chpp_pair_info *me,
		       struct chpp_pair_info *them, char *err, size_t errlen)
{
	char tmp[256];
	FILE *f;
	int n;

	snprintf(tmp, sizeof(tmp), "%s.tmp", mine);
	f = fopen(tmp, "w");
	if (!f) {
		snprintf(err, errlen, "create %s", tmp);
		return -1;
	}
	fprintf(f, "%u %u %u %llu\n", me->lid, me->qp_num, me->rkey,
		me->addr);
	if (fclose(f) || rename(tmp, mine)) {
		snprintf(err, errlen, "write %s", mine);
		return -1;
	}
	if (wait_file(peer)) {
		snprintf(err, errlen, "no %s after 120 s", peer);
		return -1;
	}
	f = fopen(peer, "r");
	n = f ? fscanf(f, "%u %u %u %llu", &them->lid, &them->qp_num,
		       &them->rkey, &them->addr) : 0;
	if (f)
		fclose(f);
	if (n != 4) {
		snprintf(err, errlen, "no peer info in %s", peer);
		return -1;
	}
	return 0;
}

int chpp_pair_done(const char *mine, const char *peer, char *err,
		   size_t errlen)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s.done", mine);
	f = fopen(path, "w");
	if (!f || fclose(f)) {
		snprintf(err, errlen, "create %s", path);
		return -1;
	}
	snprintf(path, sizeof(path), "%s.done", peer);
	if (wait_file(path)) {
		snprintf(err, errlen, "no %s after 120 s", path);
		return -1;
	}
	return 0;
}
