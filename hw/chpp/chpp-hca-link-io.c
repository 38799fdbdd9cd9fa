/*
 * chpp-hca: the link's socket I/O outside QEMU's chardev read path
 * (docs/link.md, "Threads and I/O").
 *
 * QEMU's socket chardev reads at most 4 KiB per main-loop iteration, each
 * with a poll and event-notifier wake-ups: about two iterations per 4 KiB
 * frame capped the link at a few hundred MB/s.  For a plain socket chardev
 * (no TLS, websocket or telnet) the device instead takes a duplicate of the
 * connected socket: a reader thread moves the bytes into a ring with large
 * reads, and the main loop parses every record the ring holds in one bottom
 * half.  Writes stay in the main loop and go straight to the socket.
 *
 * The thread touches only the ring, its indexes and its own descriptors:
 * never device state, never the BQL.  The ring has one consumer (the BQL
 * holder reads at head) and three producers: the thread, a vCPU that
 * polls the device (chpp_link_io_pull()), which reads the socket itself
 * rather than wait for the thread to be scheduled, and the main loop on a
 * quiet link (below).  Each producer's read
 * and its move of tail happen under rx_lock, so the bytes stay in socket
 * order; bytes between head and tail are never written, so the consumer
 * parses them in place.  While a vCPU busy-polls, the thread stays off the
 * socket altogether (chpp_link_io_away()).  On a quiet link (small reads,
 * nobody polls) the main loop reads the socket itself, so that a message
 * wakes one thread here, not the reader and then the main loop
 * (chpp_link_io_loop_read()); a large read or a poll gives it back.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/main-loop.h"
#include "qemu/thread.h"
#include "qemu/event_notifier.h"
#include "qemu/sockets.h"
#include "qapi/error.h"
#include "chardev/char-socket.h"
#include "chpp-hca-link-io.h"
#include "chpp-hca-link-shm.h"
#include "trace.h"

struct ChppLinkIo {
    int fd;                     /* our duplicate of the connected socket */
    EventNotifier wake;         /* main loop -> thread: stop, or room */
    QemuThread thread;
    QEMUBH *bh;                 /* thread -> main loop: bytes or EOF */
    QEMUBH *settle_bh;          /* thread -> main loop: who reads changed */
    IOHandler *write_cb;        /* the writer's, for a full socket */
    void *write_opaque;
    QemuMutex rx_lock;          /* one producer at a time: recv + tail */
    uint8_t *ring;
    uint32_t size;              /* of the ring: a power of two */
    uint32_t head;              /* free-running; written by the main loop */
    uint32_t tail;              /* free-running; written by the thread */
    bool stop;                  /* main loop asks the thread to end */
    bool wait_room;             /* the thread waits for the ring to drain */
    bool eof;                   /* the thread ended: peer closed, or error */
    uint32_t ring_waits;        /* times the thread found the ring full */
    uint32_t pulls;             /* reads by a polling vCPU that got bytes */
    uint32_t reads;             /* reads by the thread that got bytes */
    /* Busy polling (chpp_link_io_polled()): written by the BQL holder. */
    int64_t last_pull;          /* realtime ns of the last poll */
    uint32_t streak;            /* polls, each within the idle time */
    int64_t hold_deadline;      /* held ACKs go by then; 0: none held */
    int64_t idle_ns;            /* polls further apart end busy polling */
    int64_t away_ns;            /* the thread's: how long after a poll */
    bool was_away;              /* the thread's: its next read follows */
    uint32_t stalls;            /* bytes waited when the polls stopped */
    uint32_t early;             /* the thread came back to polls going on */
    bool asleep;                /* the thread waits without a timeout */
    bool away;                  /* the thread left the socket to a vCPU */
    bool loop;                  /* the main loop reads the socket */
    bool loop_watch;            /* its read handler is set (main loop) */
    uint32_t loop_reads;        /* reads by the main loop that got bytes */
    bool joined;                /* the thread ended: chpp_link_io_drain() */
    /* Shared memory (chpp-hca-link-shm.c): set once, freed on stop. */
    bool unix_sock;             /* descriptors can be passed */
    ChppLinkShm *shm_rx;        /* the peer's bytes come from memory */
    ChppLinkShm *shm_tx;        /* this side's ring, offered */
    bool tx_shm;                /* writes go to shm_tx: the offer went */
    bool peer_closed;           /* the socket ended (shm_rx: nothing else) */
    bool broken;                /* the peer broke a ring: cut the link */
    QEMUBH *room_bh;            /* the ring had room as the writer asked */
    int stash[CHPP_LINK_SHM_FDS]; /* descriptors received (rx_lock) */
    bool stashed;
    uint32_t stray_fds;         /* descriptors received and closed */
    /* Spinning before sleep (chpp_link_io_spin()). */
    int64_t spin_ns;            /* property link-spin-us; 0: never */
    int64_t spin_guest_ns;      /* no spin this soon after guest activity */
    uint32_t doorbells;         /* UAR writes (BQL holders) */
    uint32_t doorbells_seen;    /* the thread's: as it last looked */
    int64_t doorbell_seen_ns;   /* the thread's: when that count moved */
    uint32_t spin_hits;         /* bytes came while spinning */
    uint32_t spin_misses;       /* the spin ended without bytes */
};

/*
 * Descriptors came with the bytes (rx_lock held): the first set of
 * CHPP_LINK_SHM_FDS is kept for the CHPP_LINK_SHM record that should be
 * among them; any other is closed at once (a peer cannot fill the table).
 */
static void chpp_link_io_keep_fds(ChppLinkIo *io, struct msghdr *msg)
{
    struct cmsghdr *c;

    for (c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
        int *fds = (int *)CMSG_DATA(c);
        int i, n;

        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        if (n == CHPP_LINK_SHM_FDS && !io->stashed &&
            !(msg->msg_flags & MSG_CTRUNC)) {
            memcpy(io->stash, fds, sizeof(io->stash));
            io->stashed = true;
            continue;
        }
        for (i = 0; i < n; i++) {
            close(fds[i]);
        }
        qatomic_set(&io->stray_fds, io->stray_fds + n);
    }
}

/*
 * Room for more descriptors than a set, so that a wrong set is seen whole
 * (the kernel closes what does not fit: MSG_CTRUNC).
 */
#define CHPP_LINK_IO_FDS_SEEN   8

static ssize_t chpp_link_io_sock_recv(ChppLinkIo *io, uint8_t *buf,
                                      uint32_t len)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * CHPP_LINK_IO_FDS_SEEN)];
    } control;
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    struct msghdr msg = {
        .msg_iov = &iov,
        .msg_iovlen = 1,
        .msg_control = &control,
        .msg_controllen = sizeof(control),
    };
    ssize_t n = recvmsg(io->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

    if (n >= 0 && msg.msg_controllen) {
        chpp_link_io_keep_fds(io, &msg);
    }
    return n;
}

/*
 * From the peer's ring, as recv() would: 0 at the end of the stream (the
 * socket ended and the ring is empty), -1 with EAGAIN if empty, EPROTO if
 * the peer broke it.
 */
static ssize_t chpp_link_io_shm_recv(ChppLinkIo *io, uint8_t *buf,
                                     uint32_t len)
{
    ssize_t n;

    /*
     * Broken by either side, the socket's check and a flood of signals
     * included: no more bytes.
     */
    if (qatomic_read(&io->broken) ||
        chpp_link_shm_error(io->shm_rx) == EPROTO) {
        qatomic_set(&io->broken, true);
        errno = EPROTO;
        return -1;
    }
    n = chpp_link_shm_read(io->shm_rx, buf, len);
    if (n < 0) {
        qatomic_set(&io->broken, true);
    } else if (!n && !qatomic_read(&io->peer_closed) &&
               !chpp_link_shm_error(io->shm_rx)) {
        errno = EAGAIN;         /* the peer's end of the signals is open */
        n = -1;
    }
    return n;
}

/*
 * The socket of a peer whose bytes come from memory is readable: it ended,
 * or the peer broke the protocol (nothing may follow its CHPP_LINK_SHM).
 */
static void chpp_link_io_sock_check(ChppLinkIo *io)
{
    uint8_t b[64];
    ssize_t n = recv(io->fd, b, sizeof(b), MSG_DONTWAIT);

    if (n > 0) {
        qatomic_set(&io->broken, true);
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK &&
                          errno != EINTR)) {
        qatomic_set(&io->peer_closed, true);
    }
}

/*
 * One non-blocking read into the ring's free space (rx_lock held):
 * recv()'s result (0: end of stream), or -1 with ENOBUFS if the ring is
 * full.
 */
static ssize_t chpp_link_io_recv(ChppLinkIo *io)
{
    uint32_t head = qatomic_load_acquire(&io->head);
    uint32_t room = io->size - (io->tail - head);
    uint32_t at = io->tail & (io->size - 1);
    ssize_t n;

    if (!room) {
        errno = ENOBUFS;
        return -1;
    }
    if (io->shm_rx) {
        n = chpp_link_io_shm_recv(io, io->ring + at, MIN(room, io->size - at));
    } else {
        n = chpp_link_io_sock_recv(io, io->ring + at,
                                   MIN(room, io->size - at));
    }
    if (n > 0) {
        qatomic_store_release(&io->tail, io->tail + n);
    }
    return n;
}

bool chpp_link_io_polled(ChppLinkIo *io, int64_t now)
{
    return qatomic_read(&io->streak) >= CHPP_LINK_POLL_STREAK &&
           now - qatomic_read(&io->last_pull) < io->idle_ns;
}

/* Did this guest poll (since @pull) or ring a doorbell since last seen? */
static bool chpp_link_io_guest_moved(ChppLinkIo *io, int64_t pull)
{
    return qatomic_read(&io->last_pull) != pull ||
           qatomic_read(&io->doorbells) != io->doorbells_seen;
}

/*
 * Before it sleeps, the thread watches the peer's ring for a while
 * (property link-spin-us), giving the CPU away between looks.  A sleeping
 * thread costs each message a wake-up: the peer's signal, and this host's
 * scheduler waking a CPU that went idle, 20-30 us on a 2-core host where a
 * message otherwise takes 10 (docs/build.md, tenth pass).  A reader that
 * is still watching needs no signal either (the writer sees it awake), so
 * the peer's sends are cheaper too.  Only while this guest leaves the
 * adapter alone (no poll, and no doorbell seen by this thread, for
 * x-link-spin-guest-us; a doorbell or poll ends a spin at once): a
 * guest that works has a vCPU to run, which the spin would take CPU from,
 * and a polling vCPU reads the ring itself.  True if bytes came.
 */
static bool chpp_link_io_spin(ChppLinkIo *io, ChppLinkShm *rx, int64_t now)
{
    int64_t end = now + io->spin_ns;
    int64_t pull = qatomic_read(&io->last_pull);

    /* Doorbells are counted, not timed: no clock read in the MMIO path. */
    if (qatomic_read(&io->doorbells) != io->doorbells_seen) {
        io->doorbells_seen = qatomic_read(&io->doorbells);
        io->doorbell_seen_ns = now;
    }
    if (!io->spin_ns ||
        now - MAX(pull, io->doorbell_seen_ns) < io->spin_guest_ns) {
        return false;
    }
    do {
        if (chpp_link_shm_pending(rx)) {
            /*
             * Bytes sent after the guest woke up are not the spin's find
             * (the check below ends a spin first, unless this thread was
             * preempted between the two): a miss, read all the same.
             */
            smp_rmb();
            if (chpp_link_io_guest_moved(io, pull)) {
                qatomic_set(&io->spin_misses, io->spin_misses + 1);
            } else {
                qatomic_set(&io->spin_hits, io->spin_hits + 1);
            }
            return true;
        }
        if (qatomic_read(&io->stop)) {
            return true;        /* the loop sees it */
        }
        /* The guest woke up: its vCPU needs the CPU more. */
        if (chpp_link_io_guest_moved(io, pull)) {
            break;
        }
        sched_yield();
    } while (get_clock() < end);
    qatomic_set(&io->spin_misses, io->spin_misses + 1);
    return false;
}

/*
 * Wait for bytes.  While a vCPU busy-polls, ACKs may be held back for it
 * (chpp_link_io_hold()): then look every idle time whether they are due,
 * or the polls stopped, and have the bottom half send them.
 */
static void chpp_link_io_wait(ChppLinkIo *io, GPollFD *pfd)
{
    ChppLinkShm *rx = qatomic_read(&io->shm_rx);
    int64_t now = get_clock();
    int64_t held = qatomic_read(&io->hold_deadline);
    bool timed = held || chpp_link_io_polled(io, now);

    if (rx && !held && chpp_link_io_spin(io, rx, now)) {
        return;
    }
    if (held && (now >= held || !chpp_link_io_polled(io, now))) {
        qemu_bh_schedule(io->bh);
    }
    if (!timed) {
        qatomic_set(&io->asleep, true);
        /* Pairs with the barrier in chpp_link_io_hold(). */
        smp_mb();
        timed = qatomic_read(&io->hold_deadline);
    }
    if (rx && !chpp_link_shm_sleep(rx)) {
        qatomic_set(&io->asleep, false);
        return;                 /* bytes came meanwhile */
    }
    /* From memory: the peer's signal, and the socket for its end. */
    pfd[1].fd = rx ? chpp_link_shm_wait_fd(rx) : io->fd;
    pfd[2].revents = 0;
    qemu_poll_ns(pfd, rx ? 3 : 2, timed ? io->idle_ns : -1);
    qatomic_set(&io->asleep, false);
    if (rx) {
        chpp_link_shm_awake(rx);
        if (pfd[2].revents) {
            chpp_link_io_sock_check(io);
        }
    }
    event_notifier_test_and_clear(&io->wake);
}

/*
 * A vCPU busy-polls and reads the socket in each poll: stay off the socket
 * until the polls may have stopped, so that the peer's writes wake no
 * thread here (on a busy host each such wake-up costs the writer about
 * 10 us, and this thread's switches take CPU from the peer's QEMU).
 * Arming a CQ ends the polls at once (chpp_link_io_poll_end()).  Held ACKs
 * meanwhile go at the polls.
 *
 * How long after the last poll adapts, between x-link-poll-idle-us and a
 * 32nd of it: bytes found waiting when the thread comes back mean software
 * stopped polling the device while it waited for them (it polls memory for
 * an RDMA write, as perftest's ib_write_lat does): halve it.  Coming back
 * to polls still going on cost a wake-up for nothing: a quarter longer.
 * Software that alternates (CQ polls while its request is out, memory
 * polls for the answer) gives one of each per round trip, and sometimes
 * more returns to polls than stalls: growth must stay well below the
 * halving, or the two balance at the top (doubling did: ib_write_lat
 * waited the whole idle time per message, 548 us, in 1 run of 14).
 */
static bool chpp_link_io_away(ChppLinkIo *io, GPollFD *pfd)
{
    int64_t now = get_clock();
    int64_t last = qatomic_read(&io->last_pull);

    if (!chpp_link_io_polled(io, now) || now - last >= io->away_ns) {
        return false;
    }
    qatomic_set(&io->away, true);
    /* Pairs with the barrier in chpp_link_io_poll_end(). */
    smp_mb();
    if (chpp_link_io_polled(io, now)) {
        qemu_poll_ns(pfd, 1, MAX(last + io->away_ns - now, SCALE_US));
    }
    qatomic_set(&io->away, false);
    event_notifier_test_and_clear(&io->wake);
    /* Polls still going on as it came back: it woke for nothing. */
    if (get_clock() - qatomic_read(&io->last_pull) < io->away_ns / 4) {
        qatomic_set(&io->away_ns,
                    MIN(io->away_ns + io->away_ns / 4, io->idle_ns));
        qatomic_set(&io->early, io->early + 1);
    }
    /* A CQ armed (streak 0): software said it stops polling, in time. */
    io->was_away = qatomic_read(&io->streak) != 0;
    return true;
}

/* The thread's first read since it was away got @n (> 0: bytes waited). */
static void chpp_link_io_back(ChppLinkIo *io, ssize_t n)
{
    if (io->was_away && n > 0) {
        qatomic_set(&io->away_ns, MAX(io->away_ns / 2, io->idle_ns / 32));
        qatomic_set(&io->stalls, io->stalls + 1);
    }
    io->was_away = false;
}

/*
 * A read of @n bytes says the link is quiet: what came in one wake-up is
 * small, nobody polls and nothing is held.  Then the main loop reads, as
 * the parse and the engine run there anyway.
 */
static bool chpp_link_io_quiet(ChppLinkIo *io, ssize_t n)
{
    /* From a shared ring with spinning on, the thread keeps reading. */
    if (io->spin_ns && qatomic_read(&io->shm_rx)) {
        return false;
    }
    return n < MIN(CHPP_LINK_IO_QUIET_BYTES, io->size / 4) &&
           !qatomic_read(&io->hold_deadline) &&
           !chpp_link_io_polled(io, get_clock());
}

/* Who reads the socket changes; the main loop sets its handler to match. */
static void chpp_link_io_loop_set(ChppLinkIo *io, bool loop)
{
    if (qatomic_read(&io->loop) != loop) {
        qatomic_set(&io->loop, loop);
        qemu_bh_schedule(io->settle_bh);
    }
}

/*
 * The main loop reads the socket: wait on the notifier only, until it
 * gives the socket back, or ACKs are held or a vCPU polls (the thread
 * then takes it back: the polls and the held ACKs' deadline are its
 * business).
 */
static bool chpp_link_io_loop_wait(ChppLinkIo *io, GPollFD *pfd)
{
    ChppLinkShm *rx;

    if (!qatomic_read(&io->loop)) {
        return false;
    }
    qatomic_set(&io->asleep, true);
    /* Pairs with the barrier in chpp_link_io_hold(). */
    smp_mb();
    /*
     * peer_closed: the peer's end of this side's signals closed (set
     * before the wake-up, perhaps before this thread gave the socket to the
     * main loop): the stream ends once the peer's ring is read.
     */
    if (qatomic_read(&io->hold_deadline) ||
        chpp_link_io_polled(io, get_clock()) ||
        qatomic_read(&io->peer_closed)) {
        qatomic_set(&io->asleep, false);
        chpp_link_io_loop_set(io, false);
        return false;
    }
    /*
     * From memory: the main loop waits for the peer's signal, which the
     * peer sends only once asked; the socket only ends, and then the
     * thread goes on.
     */
    rx = qatomic_read(&io->shm_rx);
    if (rx && !chpp_link_shm_sleep(rx)) {
        qatomic_set(&io->asleep, false);
        chpp_link_io_loop_set(io, false);
        return false;
    }
    pfd[2].revents = 0;
    if (rx) {
        pfd[1] = pfd[2];
    }
    g_poll(pfd, rx ? 2 : 1, -1);
    qatomic_set(&io->asleep, false);
    event_notifier_test_and_clear(&io->wake);
    if (rx && pfd[1].revents) {
        chpp_link_io_sock_check(io);
        chpp_link_io_loop_set(io, false);
        return false;
    }
    return true;
}

static void *chpp_link_io_thread(void *opaque)
{
    ChppLinkIo *io = opaque;
    GPollFD pfd[3] = {
        { .fd = event_notifier_get_fd(&io->wake), .events = G_IO_IN },
        { .fd = io->fd, .events = G_IO_IN },
        { .fd = io->fd, .events = G_IO_IN },
    };

    while (!qatomic_read(&io->stop) && !qatomic_read(&io->broken)) {
        uint32_t head = qatomic_load_acquire(&io->head);
        ssize_t n;

        if (qatomic_read(&io->tail) - head == io->size) {
            qatomic_set(&io->ring_waits, io->ring_waits + 1);
            qatomic_set(&io->wait_room, true);
            /* Pairs with the barrier in chpp_link_io_consume(). */
            smp_mb();
            if (qatomic_read(&io->head) == head) {
                g_poll(pfd, 1, -1);
                event_notifier_test_and_clear(&io->wake);
            }
            qatomic_set(&io->wait_room, false);
            continue;
        }
        if (chpp_link_io_away(io, pfd) || chpp_link_io_loop_wait(io, pfd)) {
            continue;
        }
        qemu_mutex_lock(&io->rx_lock);
        n = chpp_link_io_recv(io);
        qemu_mutex_unlock(&io->rx_lock);
        chpp_link_io_back(io, n);
        if (n > 0) {
            trace_chpp_hca_link_io_read(n, false);
            qatomic_set(&io->reads, io->reads + 1);
            qemu_bh_schedule(io->bh);
            if (chpp_link_io_quiet(io, n)) {
                chpp_link_io_loop_set(io, true);
            }
            continue;
        }
        if (n == 0) {
            break;              /* the peer closed the connection */
        }
        if (errno == EINTR || errno == ENOBUFS) {
            continue;           /* ENOBUFS: a vCPU filled the ring */
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            break;
        }
        chpp_link_io_wait(io, pfd);
    }
    qatomic_store_release(&io->eof, true);
    qemu_bh_schedule(io->bh);
    return NULL;
}

static void chpp_link_io_loop_read(void *opaque);

/* The writer's handler, for a full socket. */
static void chpp_link_io_writable(void *opaque)
{
    ChppLinkIo *io = opaque;

    io->write_cb(io->write_opaque);
}

static void chpp_link_io_handlers(ChppLinkIo *io);
static void chpp_link_io_loop_end(ChppLinkIo *io);

/*
 * The writer's handler, for a full ring: room was signalled, or the
 * peer's end of the signals closed (the end of the connection, as its
 * socket's: the thread ends the stream once the peer's ring is read) or
 * flooded (a broken protocol).
 */
static void chpp_link_io_room(void *opaque)
{
    ChppLinkIo *io = opaque;

    if (chpp_link_shm_clear(io->shm_tx) < 0) {
        bool flooded = errno == EPROTO;

        trace_chpp_hca_link_shm("the peer's signals for this side's ring",
                                flooded ? "flooded" : "ended");
        if (flooded) {
            qatomic_set(&io->broken, true);
        } else {
            qatomic_set(&io->peer_closed, true);
        }
        chpp_link_io_handlers(io);
        chpp_link_io_loop_end(io);  /* the thread reads what is left */
        return;
    }
    io->write_cb(io->write_opaque);
}

/* The ring had room as the writer asked for it: no signal comes. */
static void chpp_link_io_room_bh(void *opaque)
{
    ChppLinkIo *io = opaque;

    if (io->write_cb) {
        io->write_cb(io->write_opaque);
    }
}

/*
 * The descriptors' handlers as the reader and the writer want them: the
 * socket's, or the signal sockets' of the rings in use (not once they
 * ended: they would stay readable).
 */
static void chpp_link_io_handlers(ChppLinkIo *io)
{
    IOHandler *rd = io->loop_watch ? chpp_link_io_loop_read : NULL;

    qemu_set_fd_handler(io->fd, io->shm_rx ? NULL : rd,
                        io->write_cb && !io->tx_shm ?
                        chpp_link_io_writable : NULL, io);
    if (io->shm_rx) {
        qemu_set_fd_handler(chpp_link_shm_wait_fd(io->shm_rx), rd, NULL, io);
    }
    if (io->tx_shm) {
        qemu_set_fd_handler(chpp_link_shm_wait_fd(io->shm_tx),
                            io->write_cb && !chpp_link_shm_error(io->shm_tx) ?
                            chpp_link_io_room : NULL, NULL, io);
    }
}

static void chpp_link_io_settle(void *opaque)
{
    ChppLinkIo *io = opaque;
    bool loop = qatomic_read(&io->loop) && !io->joined;

    if (loop != io->loop_watch) {
        io->loop_watch = loop;
        chpp_link_io_handlers(io);
    }
}

/* The main loop gives the socket back to the thread. */
static void chpp_link_io_loop_end(ChppLinkIo *io)
{
    qatomic_set(&io->loop, false);
    chpp_link_io_settle(io);
    event_notifier_set(&io->wake);
}

/*
 * The socket is readable and the link quiet: read here and parse in the
 * next main-loop iteration (the bottom half; no thread wakes).  A large
 * read (a bulk transfer: the thread reads while the main loop parses), a
 * full ring, a poll, the end of the stream or an error give the socket
 * back to the thread, which handles them as before.
 */
static void chpp_link_io_loop_read(void *opaque)
{
    ChppLinkIo *io = opaque;
    ssize_t n;

    for (;;) {
        qemu_mutex_lock(&io->rx_lock);
        n = chpp_link_io_recv(io);
        qemu_mutex_unlock(&io->rx_lock);
        if (n > 0) {
            trace_chpp_hca_link_io_loop_read(n);
            qatomic_set(&io->loop_reads, io->loop_reads + 1);
            qemu_bh_schedule(io->bh);
            if (!chpp_link_io_quiet(io, n)) {
                break;
            }
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK &&
                              errno != EINTR)) {
            break;
        }
        /* From memory: read until the ring is empty and the peer signals. */
        if (!io->shm_rx || chpp_link_shm_sleep(io->shm_rx)) {
            return;
        }
    }
    chpp_link_io_loop_end(io);
}

ChppLinkIo *chpp_link_io_start(Chardev *chr, QEMUBH *bh,
                               const ChppLinkIoParams *p)
{
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof(ss);
    SocketChardev *sc;
    ChppLinkIo *io;
    int fd;

    if (!chr || !object_dynamic_cast(OBJECT(chr), TYPE_CHARDEV_SOCKET)) {
        return NULL;
    }
    sc = SOCKET_CHARDEV(chr);
    /* TLS, websocket and telnet transform the bytes: chardev path. */
    if (!sc->sioc || sc->ioc != QIO_CHANNEL(sc->sioc) || sc->do_telnetopt) {
        return NULL;
    }
    fd = qemu_dup(sc->sioc->fd);
    if (fd < 0) {
        return NULL;
    }
    io = g_new0(ChppLinkIo, 1);
    io->fd = fd;
    io->unix_sock = getsockname(fd, (struct sockaddr *)&ss, &sslen) == 0 &&
                    ss.ss_family == AF_UNIX;
    io->bh = bh;
    io->settle_bh = qemu_bh_new(chpp_link_io_settle, io);
    io->room_bh = qemu_bh_new(chpp_link_io_room_bh, io);
    io->idle_ns = (int64_t)p->idle_us * SCALE_US;
    io->away_ns = io->idle_ns;
    io->spin_ns = (int64_t)p->spin_us * SCALE_US;
    io->spin_guest_ns = (int64_t)p->spin_guest_us * SCALE_US;
    assert(is_power_of_2(p->ring_size));
    io->size = p->ring_size;
    io->ring = g_malloc(p->ring_size);
    qemu_mutex_init(&io->rx_lock);
    if (event_notifier_init(&io->wake, false) < 0) {
        qemu_bh_delete(io->settle_bh);
        qemu_bh_delete(io->room_bh);
        qemu_mutex_destroy(&io->rx_lock);
        close(fd);
        g_free(io->ring);
        g_free(io);
        return NULL;
    }
    qemu_thread_create(&io->thread, "chpp-link-rx", chpp_link_io_thread, io,
                       QEMU_THREAD_JOINABLE);
    return io;
}

static void chpp_link_io_join(ChppLinkIo *io)
{
    if (!io->joined) {
        qatomic_set(&io->stop, true);
        event_notifier_set(&io->wake);
        qemu_thread_join(&io->thread);
        io->joined = true;
    }
}

/*
 * The connection closed: end the thread, then read into the ring what the
 * socket still holds, the peer's last records (a HELLO, a REFUSE), which
 * the thread may not have read before the chardev saw the hang-up.
 */
void chpp_link_io_drain(ChppLinkIo *io)
{
    chpp_link_io_join(io);
    chpp_link_io_settle(io);
    while (chpp_link_io_recv(io) > 0) {
        /* up to the ring's room; the rest is lost with the connection */
    }
}

void chpp_link_io_stop(ChppLinkIo *io)
{
    int i;

    if (!io) {
        return;
    }
    qemu_set_fd_handler(io->fd, NULL, NULL, NULL);
    if (io->shm_rx) {
        qemu_set_fd_handler(chpp_link_shm_wait_fd(io->shm_rx), NULL, NULL,
                            NULL);
    }
    if (io->tx_shm) {
        qemu_set_fd_handler(chpp_link_shm_wait_fd(io->shm_tx), NULL, NULL,
                            NULL);
    }
    chpp_link_io_join(io);
    chpp_link_shm_free(io->shm_rx);
    chpp_link_shm_free(io->shm_tx);
    for (i = 0; io->stashed && i < CHPP_LINK_SHM_FDS; i++) {
        close(io->stash[i]);
    }
    qemu_bh_delete(io->settle_bh);
    qemu_bh_delete(io->room_bh);
    event_notifier_cleanup(&io->wake);
    qemu_mutex_destroy(&io->rx_lock);
    close(io->fd);
    g_free(io->ring);
    g_free(io);
}

uint32_t chpp_link_io_avail(ChppLinkIo *io)
{
    return qatomic_load_acquire(&io->tail) - io->head;
}

void chpp_link_io_stats(ChppLinkIo *io, ChppLinkIoStats *st)
{
    *st = (ChppLinkIoStats) {
        .ring_waits = qatomic_read(&io->ring_waits),
        .pulls = io->pulls,
        .reads = qatomic_read(&io->reads),
        .loop_reads = io->loop_reads,
        .stalls = qatomic_read(&io->stalls),
        .early = qatomic_read(&io->early),
        .away_us = qatomic_read(&io->away_ns) / SCALE_US,
        .shm_rx = io->shm_rx != NULL,
        .shm_tx = io->tx_shm,
        .stray_fds = qatomic_read(&io->stray_fds),
        .spin_hits = qatomic_read(&io->spin_hits),
        .spin_misses = qatomic_read(&io->spin_misses),
    };
}

/*
 * A vCPU polls the device: read what the socket holds now, unless the
 * thread is reading (it delivers those bytes itself).  The end of the
 * stream and errors are left to the thread, which sees them too.
 */
uint32_t chpp_link_io_pull(ChppLinkIo *io)
{
    int64_t now = get_clock();
    ssize_t n;

    /* Polls close together make a streak: software busy-polls. */
    if (now - io->last_pull < io->idle_ns) {
        qatomic_set(&io->streak, MIN(io->streak + 1, CHPP_LINK_POLL_STREAK));
    } else {
        qatomic_set(&io->streak, 1);
    }
    qatomic_set(&io->last_pull, now);
    /* Busy polling began: the main loop must not wake for the peer's bytes. */
    if (io->loop_watch && chpp_link_io_polled(io, now)) {
        chpp_link_io_loop_end(io);
    }
    if (qemu_mutex_trylock(&io->rx_lock)) {
        return 0;
    }
    n = chpp_link_io_recv(io);
    qemu_mutex_unlock(&io->rx_lock);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                   errno != EINTR && errno != ENOBUFS)) {
        /* End of stream or an error: the thread must see it, now. */
        chpp_link_io_poll_end(io);
        event_notifier_set(&io->wake);
    }
    if (n <= 0) {
        return 0;
    }
    trace_chpp_hca_link_io_read(n, true);
    io->pulls++;
    return n;
}

void chpp_link_io_doorbell(ChppLinkIo *io)
{
    qatomic_set(&io->doorbells, io->doorbells + 1);
}

void chpp_link_io_poll_end(ChppLinkIo *io)
{
    qatomic_set(&io->streak, 0);
    /* Pairs with the barrier in chpp_link_io_away(): back to the socket. */
    smp_mb();
    if (qatomic_read(&io->away)) {
        event_notifier_set(&io->wake);
    }
}

/*
 * ACKs are held until @deadline (0: none).  A thread asleep without a
 * timeout (it went to sleep before the polls began) must wake to watch it.
 */
void chpp_link_io_hold(ChppLinkIo *io, int64_t deadline)
{
    qatomic_set(&io->hold_deadline, deadline);
    if (deadline) {
        /* Pairs with the barrier in chpp_link_io_wait(). */
        smp_mb();
        if (qatomic_read(&io->asleep)) {
            event_notifier_set(&io->wake);
        }
    }
}

int64_t chpp_link_io_held(ChppLinkIo *io)
{
    return io->hold_deadline;
}

bool chpp_link_io_eof(ChppLinkIo *io)
{
    return qatomic_load_acquire(&io->eof);
}

const uint8_t *chpp_link_io_peek(ChppLinkIo *io, uint32_t off, uint32_t len,
                                 uint8_t *bounce)
{
    uint32_t at = (io->head + off) & (io->size - 1);
    uint32_t first = io->size - at;

    assert(off + len <= chpp_link_io_avail(io));
    if (len <= first) {
        return io->ring + at;
    }
    /* The bytes wrap around the end of the ring. */
    memcpy(bounce, io->ring + at, first);
    memcpy(bounce + first, io->ring, len - first);
    return bounce;
}

void chpp_link_io_consume(ChppLinkIo *io, uint32_t n)
{
    assert(n <= chpp_link_io_avail(io));
    qatomic_store_release(&io->head, io->head + n);
    /* Pairs with the barrier in the thread before it sleeps. */
    smp_mb();
    if (n && qatomic_read(&io->wait_room)) {
        event_notifier_set(&io->wake);
    }
}

/* Non-blocking: bytes written, 0 if the socket is full, -1 on error. */
static ssize_t chpp_link_io_sendmsg(ChppLinkIo *io, struct msghdr *msg)
{
    ssize_t n;

    do {
        n = sendmsg(io->fd, msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return 0;
    }
    return n;
}

ssize_t chpp_link_io_writev(ChppLinkIo *io, const struct iovec *iov,
                            int iovcnt)
{
    struct msghdr msg = {
        .msg_iov = (struct iovec *)iov,
        .msg_iovlen = iovcnt,
    };
    ssize_t n;

    if (io->tx_shm) {
        n = chpp_link_shm_writev(io->shm_tx, iov, iovcnt);
        if (n < 0) {
            /* The peer broke this side's ring: the thread cuts the link. */
            qatomic_set(&io->broken, true);
            event_notifier_set(&io->wake);
        }
        return n;
    }
    return chpp_link_io_sendmsg(io, &msg);
}

void chpp_link_io_want_write(ChppLinkIo *io, IOHandler *cb, void *opaque)
{
    io->write_cb = cb;
    io->write_opaque = opaque;
    chpp_link_io_handlers(io);
    if (cb && io->tx_shm && !chpp_link_shm_want_room(io->shm_tx)) {
        qemu_bh_schedule(io->room_bh);
    }
}

/* ---- shared memory (docs/link.md, "Shared memory") ------------------ */

uint32_t chpp_link_io_shm_offer(ChppLinkIo *io)
{
    Error *err = NULL;

    if (!io->unix_sock || io->shm_tx) {
        return 0;
    }
    io->shm_tx = chpp_link_shm_create(io->size, &err);
    if (!io->shm_tx) {
        trace_chpp_hca_link_shm("no ring", error_get_pretty(err));
        error_free(err);
        return 0;
    }
    return io->size;
}

ssize_t chpp_link_io_write_offer(ChppLinkIo *io, const struct iovec *iov,
                                 int iovcnt)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * CHPP_LINK_SHM_FDS)];
    } control = {};
    struct msghdr msg = {
        .msg_iov = (struct iovec *)iov,
        .msg_iovlen = iovcnt,
        .msg_control = &control,
        .msg_controllen = sizeof(control),
    };
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    int fds[CHPP_LINK_SHM_FDS];

    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(fds));
    chpp_link_shm_fds(io->shm_tx, fds);
    memcpy(CMSG_DATA(c), fds, sizeof(fds));
    return chpp_link_io_sendmsg(io, &msg);
}

void chpp_link_io_shm_tx_start(ChppLinkIo *io)
{
    io->tx_shm = true;
    chpp_link_shm_offered(io->shm_tx);
    trace_chpp_hca_link_shm("sending through memory", "");
    chpp_link_io_handlers(io);
    if (io->write_cb && !chpp_link_shm_want_room(io->shm_tx)) {
        qemu_bh_schedule(io->room_bh);
    }
}

bool chpp_link_io_shm_attach(ChppLinkIo *io, const struct chpp_link_shm *offer,
                             Error **errp)
{
    ChppLinkShm *shm;

    qemu_mutex_lock(&io->rx_lock);
    if (io->shm_rx || !io->stashed) {
        qemu_mutex_unlock(&io->rx_lock);
        error_setg(errp, io->shm_rx ? "a second shared ring" :
                   "no descriptors came with the shared ring");
        return false;
    }
    io->stashed = false;
    shm = chpp_link_shm_attach(offer, io->stash, errp);
    if (shm) {
        qatomic_set(&io->shm_rx, shm);
    }
    qemu_mutex_unlock(&io->rx_lock);
    if (!shm) {
        return false;
    }
    trace_chpp_hca_link_shm("receiving through memory", "");
    if (io->joined) {
        /*
         * The peer hung up (chpp_link_io_drain()): its last records are
         * in the ring, and the parse of this record goes on to them.
         */
        while (chpp_link_io_recv(io) > 0) {
            /* up to the reader ring's room, as for the socket */
        }
        return true;
    }
    chpp_link_io_handlers(io);
    /* The thread waits on the ring's signals now; bytes may wait already. */
    event_notifier_set(&io->wake);
    qemu_bh_schedule(io->bh);
    return true;
}

bool chpp_link_io_broken(ChppLinkIo *io)
{
    return qatomic_read(&io->broken);
}
