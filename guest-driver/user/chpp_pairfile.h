/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause */
/*
 * The --pair rendezvous of the user-space test programs (chpp-uverbs-test,
 * chpp-verbs-test): each writes "lid qp_num rkey addr" to its file MINE,
 * the caller copies the peer's file to PEER, and MINE.done / PEER.done
 * tell that each side is finished with the other's memory.
 */
#ifndef CHPP_PAIRFILE_H
#define CHPP_PAIRFILE_H

#include <stddef.h>

struct chpp_pair_info {
	unsigned int lid;
	unsigned int qp_num;
	unsigned int rkey;
	unsigned long long addr;
};

/*
 * Publish @me in @mine (written whole, then renamed, so a reader never sees
 * half of it), wait up to 120 s for @peer and read it into @them. Returns
 * 0, or -1 with the reason in @err.
 */
int chpp_pair_exchange(const char *mine, const char *peer,
		       const struct chpp_pair_info *me,
		       struct chpp_pair_info *them, char *err, size_t errlen);

/* Create MINE.done, then wait up to 120 s for PEER.done; 0 or -1 (@err). */
int chpp_pair_done(const char *mine, const char *peer, char *err,
		   size_t errlen);

#endif /* CHPP_PAIRFILE_H */
