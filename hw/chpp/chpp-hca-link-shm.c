/*
 * chpp-hca: one direction of the link in shared memory (docs/link.md,
 * "Shared memory").
 *
 * Between two QEMUs on one host, every small message on the socket costs
 * a system call to write it and, for a vCPU that busy-polls the adapter,
 * a system call per empty poll to look for the answer.  A ring in a memfd
 * makes a poll a memory read and a write a copy; a byte on a socket pair
 * carries a wake-up only when the other side sleeps.
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
#include <sys/socket.h>
#include "chpp-hca-link-io.h"
#include "chpp-hca-link-shm.h"

/*
 * Signal bytes found waiting at once beyond this: the peer floods its end
 * (a genuine one sends one per flag it cleared, so a few wait at most).
 */
#define CHPP_LINK_SHM_SIGNALS_MAX   4096

struct ChppLinkShm {
    struct chpp_link_shm_hdr *hdr;
    uint8_t *data;
    size_t map_len;
    uint32_t size;              /* of the ring: a power of two */
    uint32_t idx;               /* sender: its tail; receiver: its head */
    int sig;                    /* this side's end of the signal socket */
    int mem;                    /* sender, until offered: the memfd */
    int peer_sig;               /* sender, until offered: the peer's end */
    int err;                    /* the signals ended: EPIPE or EPROTO */
};

/*
 * One byte to the other end.  MSG_DONTWAIT holds for this call whatever
 * the peer did to the socket's flags; a full socket is signalled already.
 */
static void chpp_link_shm_signal(ChppLinkShm *shm)
{
    ssize_t n;

    do {
        n = send(shm->sig, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
}

int chpp_link_shm_clear(ChppLinkShm *shm)
{
    uint8_t buf[512];
    size_t total = 0;
    int err = qatomic_read(&shm->err);
    ssize_t n;

    while (!err) {
        n = recv(shm->sig, buf, sizeof(buf), MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n > 0) {
            total += n;
            if (total > CHPP_LINK_SHM_SIGNALS_MAX) {
                err = EPROTO;
            } else if (n == sizeof(buf)) {
                continue;
            }
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            err = EPIPE;        /* the peer closed its end */
        }
        break;
    }
    if (!err) {
        return 0;
    }
    qatomic_cmpxchg(&shm->err, 0, err);
    errno = qatomic_read(&shm->err);
    return -1;
}

int chpp_link_shm_error(ChppLinkShm *shm)
{
    return qatomic_read(&shm->err);
}

int chpp_link_shm_wait_fd(ChppLinkShm *shm)
{
    return shm->sig;
}

static ChppLinkShm *chpp_link_shm_map(uint32_t ring_size, int mem,
                                      Error **errp)
{
    ChppLinkShm *shm = g_new0(ChppLinkShm, 1);
    void *p;

    shm->sig = shm->mem = shm->peer_sig = -1;
    shm->size = ring_size;
    shm->map_len = CHPP_LINK_SHM_DATA_OFF + (size_t)ring_size;
    p = mmap(NULL, shm->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, mem, 0);
    if (p == MAP_FAILED) {
        error_setg_errno(errp, errno, "cannot map the link's ring");
        g_free(shm);
        return NULL;
    }
    shm->hdr = p;
    shm->data = (uint8_t *)p + CHPP_LINK_SHM_DATA_OFF;
    return shm;
}

ChppLinkShm *chpp_link_shm_create(uint32_t ring_size, Error **errp)
{
    /* Signals are single bytes and few wait: pin little for a lazy peer. */
    int sndbuf = 4096;
    ChppLinkShm *shm;
    int mem, sv[2];

    mem = qemu_memfd_create("chpp-link", CHPP_LINK_SHM_DATA_OFF + ring_size,
                            false, 0, F_SEAL_SHRINK | F_SEAL_GROW |
                            F_SEAL_SEAL, errp);
    if (mem < 0) {
        return NULL;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        error_setg_errno(errp, errno, "cannot create the signal socket");
        close(mem);
        return NULL;
    }
    shm = chpp_link_shm_map(ring_size, mem, errp);
    if (!shm) {
        close(mem);
        close(sv[0]);
        close(sv[1]);
        return NULL;
    }
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    shm->mem = mem;
    shm->sig = sv[0];
    shm->peer_sig = sv[1];
    return shm;
}

void chpp_link_shm_fds(ChppLinkShm *shm, int fds[CHPP_LINK_SHM_FDS])
{
    fds[0] = shm->mem;
    fds[1] = shm->peer_sig;
}

void chpp_link_shm_offered(ChppLinkShm *shm)
{
    if (shm->mem >= 0) {
        close(shm->mem);
        close(shm->peer_sig);
        shm->mem = shm->peer_sig = -1;
    }
}

/*
 * A connected unix stream socket: anything else (a pipe, an eventfd, a
 * listening or unconnected socket) would never signal, or could block.
 */
static bool chpp_link_shm_socket_ok(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(int);
    struct stat st;
    int v;

    if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
        return false;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) < 0 ||
        v != AF_UNIX) {
        return false;
    }
    len = sizeof(v);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) < 0 ||
        v != SOCK_STREAM) {
        return false;
    }
    len = sizeof(ss);
    return getpeername(fd, (struct sockaddr *)&ss, &len) == 0;
}

ChppLinkShm *chpp_link_shm_attach(const struct chpp_link_shm *offer,
                                  int fds[CHPP_LINK_SHM_FDS], Error **errp)
{
    uint32_t size = le32_to_cpu(offer->ring_size);
    ChppLinkShm *shm = NULL;
    struct stat st;
    int seals;

    if (!is_power_of_2(size) || size < CHPP_LINK_RING_MIN ||
        size > CHPP_LINK_RING_MAX ||
        le32_to_cpu(offer->data_off) != CHPP_LINK_SHM_DATA_OFF) {
        error_setg(errp, "ring of %u bytes at %u", size,
                   le32_to_cpu(offer->data_off));
        goto out;
    }
    seals = fcntl(fds[0], F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
        /* Shrunk under our mapping, it would fault this process. */
        error_setg(errp, "the ring is not a memfd sealed against shrinking");
        goto out;
    }
    if (fstat(fds[0], &st) < 0 ||
        st.st_size < CHPP_LINK_SHM_DATA_OFF + (off_t)size) {
        error_setg(errp, "the memfd is smaller than its ring");
        goto out;
    }
    if (!chpp_link_shm_socket_ok(fds[1])) {
        error_setg(errp, "the signal descriptor is not a connected unix "
                   "stream socket");
        goto out;
    }
    shm = chpp_link_shm_map(size, fds[0], errp);
    if (shm) {
        shm->sig = fds[1];
        fds[1] = -1;
    }
out:
    close(fds[0]);              /* the mapping keeps the memory */
    if (fds[1] >= 0) {
        close(fds[1]);
    }
    return shm;
}

void chpp_link_shm_free(ChppLinkShm *shm)
{
    if (!shm) {
        return;
    }
    munmap(shm->hdr, shm->map_len);
    chpp_link_shm_offered(shm);
    close(shm->sig);
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
        chpp_link_shm_signal(shm);
    }
    return n;
}

bool chpp_link_shm_sleep(ChppLinkShm *shm)
{
    struct chpp_link_shm_hdr *h = shm->hdr;

    if (chpp_link_shm_clear(shm) < 0) {
        return false;           /* its end would stay readable */
    }
    qatomic_set(&h->reader_sleeping, 1);
    /* Pairs with the barrier in chpp_link_shm_writev(). */
    smp_mb();
    if (qatomic_read(&h->tail) != qatomic_read(&shm->idx)) {
        qatomic_set(&h->reader_sleeping, 0);
        return false;
    }
    return true;
}

bool chpp_link_shm_pending(ChppLinkShm *shm)
{
    /* Any change counts: chpp_link_shm_read() checks what the peer wrote. */
    return qatomic_read(&shm->hdr->tail) != qatomic_read(&shm->idx);
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
        chpp_link_shm_signal(shm);
    }
    return n;
}

bool chpp_link_shm_want_room(ChppLinkShm *shm)
{
    struct chpp_link_shm_hdr *h = shm->hdr;

    qatomic_set(&h->writer_waiting, 1);
    /* Pairs with the barrier in chpp_link_shm_read(). */
    smp_mb();
    /* Room already (or an impossible index): the flag taken back. */
    return shm->idx - qatomic_read(&h->head) == shm->size ||
           !qatomic_xchg(&h->writer_waiting, 0);
}
