/*
 * chpp-hca: one direction of the link in shared memory (docs/link.md,
 * "Shared memory").
 *
 * Between two QEMUs on one host, every small message on the socket costs
 * a system call to write it and, for a vCPU that busy-polls the adapter,
 * a system call per empty poll to look for the answer.  A ring in a memfd
 * makes a poll a memory read and a write a copy; eventfds carry a wake-up
 * only when the other side sleeps.
 *
 * The ring is created by its sender (this side's memory: the receiver
 * cannot grow what the sender must keep), sealed against shrinking, so
 * the receiver's mapping never faults.  Each side keeps its own index in
 * private memory and only publishes it: the index read from the peer is
 * checked against it before any byte moves, and bytes are copied out
 * before anything parses them (the peer may change them meanwhile).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/memfd.h"
#include "qapi/error.h"
#include <sys/eventfd.h>
#include "chpp-hca-link-io.h"
#include "chpp-hca-link-shm.h"

struct ChppLinkShm {
    struct chpp_link_shm_hdr *hdr;
    uint8_t *data;
    size_t map_len;
    uint32_t size;              /* of the ring: a power of two */
    uint32_t idx;               /* sender: its tail; receiver: its head */
    int fds[CHPP_LINK_SHM_FDS]; /* memfd, data eventfd, room eventfd */
};

enum { SHM_MEM, SHM_DATA, SHM_ROOM };

static void chpp_link_shm_signal(int fd)
{
    uint64_t one = 1;

    /* A full counter (never in practice) still reads as signalled. */
    if (write(fd, &one, sizeof(one)) < 0) {
        return;
    }
}

void chpp_link_shm_clear(ChppLinkShm *shm, bool sender)
{
    uint64_t v;

    if (read(shm->fds[sender ? SHM_ROOM : SHM_DATA], &v, sizeof(v)) < 0) {
        return;                 /* not signalled */
    }
}

int chpp_link_shm_wait_fd(ChppLinkShm *shm, bool sender)
{
    return shm->fds[sender ? SHM_ROOM : SHM_DATA];
}

static ChppLinkShm *chpp_link_shm_map(uint32_t ring_size,
                                      int fds[CHPP_LINK_SHM_FDS],
                                      Error **errp)
{
    ChppLinkShm *shm = g_new0(ChppLinkShm, 1);
    void *p;

    memcpy(shm->fds, fds, sizeof(shm->fds));
    shm->size = ring_size;
    shm->map_len = CHPP_LINK_SHM_DATA_OFF + (size_t)ring_size;
    p = mmap(NULL, shm->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
             fds[SHM_MEM], 0);
    if (p == MAP_FAILED) {
        error_setg_errno(errp, errno, "cannot map the link's ring");
        shm->hdr = NULL;
        chpp_link_shm_free(shm);
        return NULL;
    }
    shm->hdr = p;
    shm->data = (uint8_t *)p + CHPP_LINK_SHM_DATA_OFF;
    return shm;
}

ChppLinkShm *chpp_link_shm_create(uint32_t ring_size, Error **errp)
{
    int fds[CHPP_LINK_SHM_FDS] = { -1, -1, -1 };
    int i;

    fds[SHM_MEM] = qemu_memfd_create("chpp-link",
                                     CHPP_LINK_SHM_DATA_OFF + ring_size,
                                     false, 0, F_SEAL_SHRINK | F_SEAL_GROW |
                                     F_SEAL_SEAL, errp);
    if (fds[SHM_MEM] < 0) {
        return NULL;
    }
    for (i = SHM_DATA; i <= SHM_ROOM; i++) {
        fds[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (fds[i] < 0) {
            error_setg_errno(errp, errno, "cannot create an eventfd");
            for (i = 0; i < CHPP_LINK_SHM_FDS; i++) {
                if (fds[i] >= 0) {
                    close(fds[i]);
                }
            }
            return NULL;
        }
    }
    return chpp_link_shm_map(ring_size, fds, errp);
}

void chpp_link_shm_fds(ChppLinkShm *shm, int fds[CHPP_LINK_SHM_FDS])
{
    memcpy(fds, shm->fds, sizeof(shm->fds));
}

/* An eventfd, made non-blocking (a pipe would block or poll readable). */
static bool chpp_link_shm_eventfd_ok(int fd)
{
    g_autofree char *path = g_strdup_printf("/proc/self/fd/%d", fd);
    char link[32] = "";
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    int fl;

    if (n < 0 || strcmp(link, "anon_inode:[eventfd]")) {
        return false;
    }
    fl = fcntl(fd, F_GETFL);
    return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

ChppLinkShm *chpp_link_shm_attach(const struct chpp_link_shm *offer,
                                  int fds[CHPP_LINK_SHM_FDS], Error **errp)
{
    uint32_t size = le32_to_cpu(offer->ring_size);
    struct stat st;
    int seals, i;

    if (!is_power_of_2(size) || size < CHPP_LINK_RING_MIN ||
        size > CHPP_LINK_RING_MAX ||
        le32_to_cpu(offer->data_off) != CHPP_LINK_SHM_DATA_OFF) {
        error_setg(errp, "ring of %u bytes at %u", size,
                   le32_to_cpu(offer->data_off));
        goto fail;
    }
    seals = fcntl(fds[SHM_MEM], F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
        /* Shrunk under our mapping, it would fault this process. */
        error_setg(errp, "the ring is not a memfd sealed against shrinking");
        goto fail;
    }
    if (fstat(fds[SHM_MEM], &st) < 0 ||
        st.st_size < CHPP_LINK_SHM_DATA_OFF + (off_t)size) {
        error_setg(errp, "the memfd is smaller than its ring");
        goto fail;
    }
    for (i = SHM_DATA; i <= SHM_ROOM; i++) {
        if (!chpp_link_shm_eventfd_ok(fds[i])) {
            error_setg(errp, "descriptor %d is not an eventfd", i);
            goto fail;
        }
    }
    return chpp_link_shm_map(size, fds, errp);

fail:
    for (i = 0; i < CHPP_LINK_SHM_FDS; i++) {
        close(fds[i]);
    }
    return NULL;
}

void chpp_link_shm_free(ChppLinkShm *shm)
{
    int i;

    if (!shm) {
        return;
    }
    if (shm->hdr) {
        munmap(shm->hdr, shm->map_len);
    }
    for (i = 0; i < CHPP_LINK_SHM_FDS; i++) {
        close(shm->fds[i]);
    }
    g_free(shm);
}

ssize_t chpp_link_shm_read(ChppLinkShm *shm, uint8_t *buf, uint32_t len)
{
    struct chpp_link_shm_hdr *h = shm->hdr;
    uint32_t avail = qatomic_load_acquire(&h->tail) - shm->idx;
    uint32_t at = shm->idx & (shm->size - 1);
    uint32_t n, first;

    if (avail > shm->size) {
        errno = EPROTO;
        return -1;
    }
    n = MIN(avail, len);
    if (!n) {
        return 0;
    }
    first = MIN(n, shm->size - at);
    memcpy(buf, shm->data + at, first);
    memcpy(buf + first, shm->data, n - first);
    /* A thread about to sleep compares it with the tail: atomic. */
    qatomic_set(&shm->idx, shm->idx + n);
    qatomic_store_release(&h->head, shm->idx);
    /* Pairs with the barrier in chpp_link_shm_want_room(). */
    smp_mb();
    if (qatomic_read(&h->writer_waiting) &&
        qatomic_xchg(&h->writer_waiting, 0)) {
        chpp_link_shm_signal(shm->fds[SHM_ROOM]);
    }
    return n;
}

bool chpp_link_shm_sleep(ChppLinkShm *shm)
{
    struct chpp_link_shm_hdr *h = shm->hdr;

    chpp_link_shm_clear(shm, false);
    qatomic_set(&h->reader_sleeping, 1);
    /* Pairs with the barrier in chpp_link_shm_writev(). */
    smp_mb();
    if (qatomic_read(&h->tail) != qatomic_read(&shm->idx)) {
        qatomic_set(&h->reader_sleeping, 0);
        return false;
    }
    return true;
}

void chpp_link_shm_awake(ChppLinkShm *shm)
{
    qatomic_set(&shm->hdr->reader_sleeping, 0);
}

ssize_t chpp_link_shm_writev(ChppLinkShm *shm, const struct iovec *iov,
                             int iovcnt)
{
    struct chpp_link_shm_hdr *h = shm->hdr;
    uint32_t used = shm->idx - qatomic_load_acquire(&h->head);
    uint32_t room, n = 0;
    int i;

    if (used > shm->size) {
        errno = EPROTO;
        return -1;
    }
    room = shm->size - used;
    for (i = 0; i < iovcnt && n < room; i++) {
        uint32_t len = MIN(iov[i].iov_len, room - n);
        uint32_t at = (shm->idx + n) & (shm->size - 1);
        uint32_t first = MIN(len, shm->size - at);

        memcpy(shm->data + at, iov[i].iov_base, first);
        memcpy(shm->data, (uint8_t *)iov[i].iov_base + first, len - first);
        n += len;
    }
    if (!n) {
        return 0;
    }
    shm->idx += n;
    qatomic_store_release(&h->tail, shm->idx);
    /* Pairs with the barrier in chpp_link_shm_sleep(). */
    smp_mb();
    if (qatomic_read(&h->reader_sleeping) &&
        qatomic_xchg(&h->reader_sleeping, 0)) {
        chpp_link_shm_signal(shm->fds[SHM_DATA]);
    }
    return n;
}

void chpp_link_shm_want_room(ChppLinkShm *shm)
{
    struct chpp_link_shm_hdr *h = shm->hdr;

    qatomic_set(&h->writer_waiting, 1);
    /* Pairs with the barrier in chpp_link_shm_read(). */
    smp_mb();
    if (shm->idx - qatomic_read(&h->head) != shm->size &&
        qatomic_xchg(&h->writer_waiting, 0)) {
        /* Room already (or an impossible index): try again at once. */
        chpp_link_shm_signal(shm->fds[SHM_ROOM]);
    }
}
