/*
 * chpp-hca: the link's socket I/O outside QEMU's chardev read path
 * (docs/link.md, "Threads and I/O").
 *
 * QEMU's socket chardev reads at most 4 KiB per main-loop iteration, each
 * with a poll and event-notifier wake-ups: about two iterations per 4 KiB
 * frame capped the link at a few hundred MB/s.  For a plain socket chardev
 * (no TLS, websocket or telnet) the device instead takes a duplicate of the
 * connected socket: a reader thread moves the bytes into a ring with large
 * reads, then takes the BQL and hands them to the device's callback, which
 * parses and runs them there.  The main loop, if it is awake anyway (it
 * holds the BQL most of the time on a busy QEMU, and a mutex is not fair),
 * sees the news at its next iteration (chpp_link_io_take_news()) and takes
 * them instead.  Writes go straight to the socket from whichever thread
 * holds the BQL.
 *
 * The ring is single producer (the thread writes at tail) and single
 * consumer (whoever holds the BQL reads at head); bytes between head and
 * tail are never written, so they are parsed in place.  The thread touches
 * device state only in the callback, with the BQL held and only while the
 * device has not stopped it: stopping (with the BQL) never waits for the
 * thread, which may itself be waiting for the BQL or be the caller.  The
 * thread and the device each hold a reference to the ChppLinkIo; the last
 * one to let go frees it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/main-loop.h"
#include "qemu/thread.h"
#include "qemu/rcu.h"
#include "qemu/event_notifier.h"
#include "qemu/sockets.h"
#include "qemu/timer.h"
#include "chardev/char-socket.h"
#include "hw/chpp/chpp-qemu-compat.h"
#include "chpp-hca-link-io.h"

struct ChppLinkIo {
    int fd;                     /* our duplicate of the connected socket */
    EventNotifier wake;         /* device -> thread: stop, or room */
    QemuThread thread;
    ChppLinkIoReady *ready;     /* thread -> device, BQL held; or NULL */
    void *opaque;
    bool news;                  /* bytes or EOF the device has not seen */
    int64_t polled_ns;          /* get_clock() of a vCPU's last poll */
    uint8_t *ring;
    uint32_t size;              /* of the ring: a power of two */
    uint32_t head;              /* free-running; written by the consumer */
    uint32_t tail;              /* free-running; written by the thread */
    uint32_t refs;              /* the thread's and the device's */
    bool stop;                  /* set with the BQL: no more callbacks */
    bool wait_room;             /* the thread waits for the ring to drain */
    bool eof;                   /* the thread ended: peer closed, or error */
    uint32_t ring_waits;        /* times the thread found the ring full */
};

static void chpp_link_io_unref(ChppLinkIo *io)
{
    if (qatomic_fetch_dec(&io->refs) != 1) {
        return;
    }
    event_notifier_cleanup(&io->wake);
    close(io->fd);
    g_free(io->ring);
    g_free(io);
}

/*
 * A vCPU that polls its completion queue parses the ring itself on every
 * empty poll (an MMIO read, with the BQL), microseconds apart.  Waiting for
 * the BQL against it is a convoy: the vCPU takes it back after each read,
 * we get it at a scheduler tick, and meanwhile read nothing more from the
 * socket.  So while a vCPU polls (it did within CHPP_LINK_IO_POLLING_NS,
 * a few of its empty polls) the thread leaves the bytes to it and keeps
 * reading; news the vCPU has not taken after CHPP_LINK_IO_LEAVE_NS without
 * more bytes (it stopped polling) the thread then takes itself.
 */
#define CHPP_LINK_IO_POLLING_NS (20 * SCALE_US)
#define CHPP_LINK_IO_LEAVE_NS   (100 * SCALE_US)

/*
 * With the BQL, unless the device stopped us (@stop is set with the BQL
 * held, so the flag read here is final): call the device, unless someone
 * took the news meanwhile.  False: stop.
 */
static bool chpp_link_io_deliver(ChppLinkIo *io)
{
    bool go;

    chpp_bql_lock();
    go = !qatomic_read(&io->stop);
    if (go && qatomic_xchg(&io->news, false)) {
        io->ready(io->opaque);
    }
    chpp_bql_unlock();
    return go;
}

/*
 * Tell the device: the main loop sees @news at its next iteration (woken
 * if it sleeps, without a callback); with a callback the thread delivers
 * them itself, unless a vCPU polls.  False: stop.
 */
static bool chpp_link_io_notify(ChppLinkIo *io)
{
    /* After the tail (or EOF): whoever takes the news sees the bytes. */
    qatomic_store_release(&io->news, true);
    if (!io->ready || qatomic_read(&io->eof)) {
        qemu_notify_event();
        return !qatomic_read(&io->stop);
    }
    if (get_clock() - qatomic_read(&io->polled_ns) <
        CHPP_LINK_IO_POLLING_NS) {
        return !qatomic_read(&io->stop);
    }
    return chpp_link_io_deliver(io);
}

/*
 * Wait for @n of @pfd; with news left to a vCPU, at most
 * CHPP_LINK_IO_LEAVE_NS, then deliver them.  False: stop.
 */
static bool chpp_link_io_wait(ChppLinkIo *io, GPollFD *pfd, int n)
{
    bool left = io->ready && qatomic_read(&io->news);

    if (!qemu_poll_ns(pfd, n, left ? CHPP_LINK_IO_LEAVE_NS : -1) && left &&
        qatomic_read(&io->news)) {
        return chpp_link_io_deliver(io);
    }
    event_notifier_test_and_clear(&io->wake);
    return true;
}

static void *chpp_link_io_thread(void *opaque)
{
    ChppLinkIo *io = opaque;
    bool unseen = false;        /* bytes the device was not told of */
    GPollFD pfd[2] = {
        { .fd = event_notifier_get_fd(&io->wake), .events = G_IO_IN },
        { .fd = io->fd, .events = G_IO_IN },
    };

    /* The callback does DMA, which reads RCU-protected memory maps. */
    rcu_register_thread();
    while (!qatomic_read(&io->stop)) {
        uint32_t head = qatomic_load_acquire(&io->head);
        uint32_t room = io->size - (io->tail - head);
        uint32_t at = io->tail & (io->size - 1);
        ssize_t n;

        if (!room) {
            qatomic_set(&io->ring_waits, io->ring_waits + 1);
            qatomic_set(&io->wait_room, true);
            /* Pairs with the barrier in chpp_link_io_consume(). */
            smp_mb();
            if (qatomic_read(&io->head) == head &&
                !chpp_link_io_wait(io, pfd, 1)) {
                break;
            }
            qatomic_set(&io->wait_room, false);
            continue;
        }
        n = recv(io->fd, io->ring + at,
                 MIN(room, io->size - at), MSG_DONTWAIT);
        if (n > 0) {
            qatomic_store_release(&io->tail, io->tail + n);
            unseen = true;
            if (n == io->size - at && room > n) {
                continue;       /* at the ring's end: read its start too */
            }
        } else if (n == 0) {
            break;              /* the peer closed the connection */
        } else if (errno == EINTR) {
            continue;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
            break;
        } else if (!unseen) {
            if (!chpp_link_io_wait(io, pfd, 2)) {
                break;
            }
            continue;
        }
        if (!chpp_link_io_notify(io)) {
            break;
        }
        unseen = false;
    }
    qatomic_store_release(&io->eof, true);
    if (!qatomic_read(&io->stop)) {
        chpp_link_io_notify(io);
    }
    rcu_unregister_thread();
    chpp_link_io_unref(io);
    return NULL;
}

ChppLinkIo *chpp_link_io_start(Chardev *chr, ChppLinkIoReady *ready,
                               void *opaque, uint32_t ring_size)
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
    io->ready = ready;
    io->opaque = opaque;
    io->refs = 2;
    assert(is_power_of_2(ring_size));
    io->size = ring_size;
    io->ring = g_malloc(ring_size);
    if (event_notifier_init(&io->wake, false) < 0) {
        close(fd);
        g_free(io->ring);
        g_free(io);
        return NULL;
    }
    qemu_thread_create(&io->thread, "chpp-link-rx", chpp_link_io_thread, io,
                       QEMU_THREAD_DETACHED);
    return io;
}

void chpp_link_io_stop(ChppLinkIo *io)
{
    if (!io) {
        return;
    }
    assert(chpp_bql_locked());
    qemu_set_fd_handler(io->fd, NULL, NULL, NULL);
    qatomic_set(&io->stop, true);
    event_notifier_set(&io->wake);
    chpp_link_io_unref(io);
}

uint32_t chpp_link_io_avail(ChppLinkIo *io)
{
    return qatomic_load_acquire(&io->tail) - io->head;
}

uint32_t chpp_link_io_ring_waits(ChppLinkIo *io)
{
    return qatomic_read(&io->ring_waits);
}

void chpp_link_io_polled(ChppLinkIo *io)
{
    qatomic_set(&io->polled_ns, get_clock());
    /* A full barrier: the parse that follows sees the bytes of the news. */
    qatomic_xchg(&io->news, false);
}

bool chpp_link_io_take_news(ChppLinkIo *io)
{
    return qatomic_xchg(&io->news, false);
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
    qemu_set_fd_handler(io->fd, NULL, cb, opaque);
}
