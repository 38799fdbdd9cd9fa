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
#include "chardev/char-socket.h"
#include "chpp-hca-link-io.h"
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
};

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
    n = recv(io->fd, io->ring + at, MIN(room, io->size - at), MSG_DONTWAIT);
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

/*
 * Wait for bytes.  While a vCPU busy-polls, ACKs may be held back for it
 * (chpp_link_io_hold()): then look every idle time whether they are due,
 * or the polls stopped, and have the bottom half send them.
 */
static void chpp_link_io_wait(ChppLinkIo *io, GPollFD *pfd)
{
    int64_t now = get_clock();
    int64_t held = qatomic_read(&io->hold_deadline);
    bool timed = held || chpp_link_io_polled(io, now);

    if (held && (now >= held || !chpp_link_io_polled(io, now))) {
        qemu_bh_schedule(io->bh);
    }
    if (!timed) {
        qatomic_set(&io->asleep, true);
        /* Pairs with the barrier in chpp_link_io_hold(). */
        smp_mb();
        timed = qatomic_read(&io->hold_deadline);
    }
    qemu_poll_ns(pfd, 2, timed ? io->idle_ns : -1);
    qatomic_set(&io->asleep, false);
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
    if (!qatomic_read(&io->loop)) {
        return false;
    }
    qatomic_set(&io->asleep, true);
    /* Pairs with the barrier in chpp_link_io_hold(). */
    smp_mb();
    if (qatomic_read(&io->hold_deadline) ||
        chpp_link_io_polled(io, get_clock())) {
        qatomic_set(&io->asleep, false);
        chpp_link_io_loop_set(io, false);
        return false;
    }
    g_poll(pfd, 1, -1);
    qatomic_set(&io->asleep, false);
    event_notifier_test_and_clear(&io->wake);
    return true;
}

static void *chpp_link_io_thread(void *opaque)
{
    ChppLinkIo *io = opaque;
    GPollFD pfd[2] = {
        { .fd = event_notifier_get_fd(&io->wake), .events = G_IO_IN },
        { .fd = io->fd, .events = G_IO_IN },
    };

    while (!qatomic_read(&io->stop)) {
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

/* The descriptor's handlers as the reader and the writer want them. */
static void chpp_link_io_handlers(ChppLinkIo *io)
{
    qemu_set_fd_handler(io->fd, io->loop_watch ? chpp_link_io_loop_read : NULL,
                        io->write_cb ? chpp_link_io_writable : NULL, io);
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

    qemu_mutex_lock(&io->rx_lock);
    n = chpp_link_io_recv(io);
    qemu_mutex_unlock(&io->rx_lock);
    if (n > 0) {
        trace_chpp_hca_link_io_loop_read(n);
        qatomic_set(&io->loop_reads, io->loop_reads + 1);
        qemu_bh_schedule(io->bh);
        if (chpp_link_io_quiet(io, n)) {
            return;
        }
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
                         errno == EINTR)) {
        return;
    }
    chpp_link_io_loop_end(io);
}

ChppLinkIo *chpp_link_io_start(Chardev *chr, QEMUBH *bh, uint32_t ring_size,
                               uint32_t idle_us)
{
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
    io->bh = bh;
    io->settle_bh = qemu_bh_new(chpp_link_io_settle, io);
    io->idle_ns = idle_us * SCALE_US;
    io->away_ns = io->idle_ns;
    assert(is_power_of_2(ring_size));
    io->size = ring_size;
    io->ring = g_malloc(ring_size);
    qemu_mutex_init(&io->rx_lock);
    if (event_notifier_init(&io->wake, false) < 0) {
        qemu_bh_delete(io->settle_bh);
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
    if (!io) {
        return;
    }
    qemu_set_fd_handler(io->fd, NULL, NULL, NULL);
    chpp_link_io_join(io);
    qemu_bh_delete(io->settle_bh);
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

ssize_t chpp_link_io_writev(ChppLinkIo *io, const struct iovec *iov,
                            int iovcnt)
{
    struct msghdr msg = {
        .msg_iov = (struct iovec *)iov,
        .msg_iovlen = iovcnt,
    };
    ssize_t n;

    do {
        n = sendmsg(io->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return 0;
    }
    return n;
}

void chpp_link_io_want_write(ChppLinkIo *io, IOHandler *cb, void *opaque)
{
    io->write_cb = cb;
    io->write_opaque = opaque;
    chpp_link_io_handlers(io);
}
