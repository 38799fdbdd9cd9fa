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

/* The sender's side: a sealed memfd of @ring_size bytes and two eventfds. */
ChppLinkShm *chpp_link_shm_create(uint32_t ring_size, Error **errp);
/* The descriptors to pass, in CHPP_LINK_SHM record order (still owned). */
void chpp_link_shm_fds(ChppLinkShm *shm, int fds[CHPP_LINK_SHM_FDS]);
/*
 * The receiver's side: map the peer's ring described by @offer, after
 * checking that nothing the peer can do to the descriptors afterwards
 * (shrink the memfd, pass something else than eventfds) hurts this side.
 * Takes the descriptors, also on failure.
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
 * came meanwhile (do not sleep).  chpp_link_shm_awake() after the sleep.
 */
bool chpp_link_shm_sleep(ChppLinkShm *shm);
void chpp_link_shm_awake(ChppLinkShm *shm);
/* Receiver: readable when the sender signals bytes.  Sender: room. */
int chpp_link_shm_wait_fd(ChppLinkShm *shm, bool sender);

/*
 * Sender: bytes taken from @iov (0: the ring is full), -1 with EPROTO if
 * the peer's index is impossible.  Wakes a sleeping receiver.
 */
ssize_t chpp_link_shm_writev(ChppLinkShm *shm, const struct iovec *iov,
                             int iovcnt);
/*
 * Sender, the ring full: ask to be signalled on chpp_link_shm_wait_fd()
 * once the receiver takes bytes (at once if it already did).
 */
void chpp_link_shm_want_room(ChppLinkShm *shm);
/* Clear a wait descriptor's signal. */
void chpp_link_shm_clear(ChppLinkShm *shm, bool sender);

#endif
