/*
 * chpp-hca: one direction of the link in shared memory
 * (chpp-hca-link-shm.c, docs/link.md "Shared memory").  A ring is created
 * by its sender and attached by its receiver; neither trusts what the
 * other writes into it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_CHPP_HCA_LINK_SHM_H
#define HW_CHPP_HCA_LINK_SHM_H

#include "hw/chpp/chpp-wire.h"

typedef struct ChppLinkShm ChppLinkShm;

/*
 * The sender's side: a sealed memfd of @ring_size bytes and a socket pair,
 * one end kept for the signals, the other for the peer.
 */
ChppLinkShm *chpp_link_shm_create(uint32_t ring_size, Error **errp);
/* The descriptors to pass, in CHPP_LINK_SHM record order (still owned). */
void chpp_link_shm_fds(ChppLinkShm *shm, int fds[CHPP_LINK_SHM_FDS]);
/* They went: close this side's copies (the peer may not use ours). */
void chpp_link_shm_offered(ChppLinkShm *shm);
/*
 * The receiver's side: map the peer's ring described by @offer, after
 * checking that nothing the peer can do to the descriptors afterwards
 * (shrink the memfd, pass something else than a connected stream socket)
 * hurts this side.  Takes the descriptors, also on failure.
 */
ChppLinkShm *chpp_link_shm_attach(const struct chpp_link_shm *offer,
                                  int fds[CHPP_LINK_SHM_FDS], Error **errp);
void chpp_link_shm_free(ChppLinkShm *shm);

/*
 * Receiver: copy up to @len waiting bytes to @buf; 0 if none, -1 with
 * EPROTO if the peer's index is impossible.  Wakes a writer waiting for
 * room.
 */
ssize_t chpp_link_shm_read(ChppLinkShm *shm, uint8_t *buf, uint32_t len);
/*
 * Receiver, before it sleeps on chpp_link_shm_wait_fd(): false if bytes
 * came meanwhile or the signals ended (do not sleep).
 * chpp_link_shm_awake() after the sleep.
 */
bool chpp_link_shm_sleep(ChppLinkShm *shm);
void chpp_link_shm_awake(ChppLinkShm *shm);
/* The peer moved its tail: bytes (or garbage) to read.  No system call. */
bool chpp_link_shm_pending(ChppLinkShm *shm);
/*
 * The signal socket: readable when the sender signals bytes (receiver) or
 * the receiver room (sender), or when the peer closed its end.
 */
int chpp_link_shm_wait_fd(ChppLinkShm *shm);

/*
 * Sender: bytes taken from @iov (0: the ring is full), -1 with EPROTO if
 * the peer's index is impossible.  Wakes a sleeping receiver.
 */
ssize_t chpp_link_shm_writev(ChppLinkShm *shm, const struct iovec *iov,
                             int iovcnt);
/*
 * Sender, the ring full: ask to be signalled on chpp_link_shm_wait_fd()
 * once the receiver takes bytes.  False if it already did (no signal
 * comes: try again at once).
 */
bool chpp_link_shm_want_room(ChppLinkShm *shm);
/*
 * Take the signals waiting on chpp_link_shm_wait_fd(): 0, or (from then
 * on, see chpp_link_shm_error()) -1 with EPIPE if the peer closed its end,
 * EPROTO if it sent far more signals than it may.
 */
int chpp_link_shm_clear(ChppLinkShm *shm);
/* 0 while the signals work, else the errno chpp_link_shm_clear() gave. */
int chpp_link_shm_error(ChppLinkShm *shm);

#endif
