/*
 * chpp-hca: a pcap capture of the link's records (property "capture",
 * docs/capture.md).
 *
 * Each record sent or received on a chardev link becomes one Ethernet
 * frame, framed as the link over Ethernet frames it (chpp-wire.h): so one
 * Wireshark dissector reads captures of either link.  Records are written
 * unbuffered, one writev() each: the file is whole at any moment, even if
 * QEMU is killed.  A full disk or a file grown to its bound stops the
 * capture, once logged; the link never notices.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/error-report.h"
#include "qemu/iov.h"
#include "qapi/error.h"
#include "chpp-hca-capture.h"

#define PCAP_MAGIC_USEC     0xa1b2c3d4u
#define PCAP_LINKTYPE_ETH   1
#define ETH_MIN_PAYLOAD     46          /* 60-byte frames, FCS not kept */
#define CAPTURE_SNAPLEN     65535

struct ChppCapture {
    int fd;
    char *path;
    uint64_t written;
    uint64_t max_bytes;
};

typedef struct PcapFileHdr {
    uint32_t magic;
    uint16_t version_major;
    uint16_t version_minor;
    int32_t thiszone;
    uint32_t sigfigs;
    uint32_t snaplen;
    uint32_t linktype;
} PcapFileHdr;

typedef struct PcapRecHdr {
    uint32_t ts_sec;
    uint32_t ts_usec;
    uint32_t incl_len;
    uint32_t orig_len;
} PcapRecHdr;

QEMU_BUILD_BUG_ON(sizeof(struct chpp_link_rec) + CHPP_WIRE_FRAME_MAX +
                  CHPP_ETH_HDR_SIZE > CAPTURE_SNAPLEN);

static void chpp_capture_stop(ChppCapture *cap, const char *why)
{
    warn_report("chpp-hca: capture to %s stopped: %s", cap->path, why);
    close(cap->fd);
    cap->fd = -1;
}

/* Write all of @iov or stop the capture. */
static bool chpp_capture_write(ChppCapture *cap, struct iovec *iov, int n)
{
    size_t want = iov_size(iov, n);
    ssize_t done;

    if (cap->fd < 0) {
        return false;
    }
    if (cap->written + want > cap->max_bytes) {
        chpp_capture_stop(cap, "the file reached capture-max");
        return false;
    }
    do {
        done = writev(cap->fd, iov, n);
    } while (done < 0 && errno == EINTR);
    if (done < 0) {
        chpp_capture_stop(cap, strerror(errno));
        return false;
    }
    if ((size_t)done != want) {
        chpp_capture_stop(cap, "short write");
        return false;
    }
    cap->written += want;
    return true;
}

ChppCapture *chpp_capture_open(const char *path, uint64_t max_bytes,
                               Error **errp)
{
    PcapFileHdr h = {
        .magic = PCAP_MAGIC_USEC,
        .version_major = 2,
        .version_minor = 4,
        .snaplen = CAPTURE_SNAPLEN,
        .linktype = PCAP_LINKTYPE_ETH,
    };
    struct iovec iov = { &h, sizeof(h) };
    ChppCapture *cap;
    int fd;

    if (max_bytes < sizeof(h)) {
        error_setg(errp, "capture-max %" PRIu64 " is less than a pcap "
                   "file header", max_bytes);
        return NULL;
    }
    fd = qemu_create(path, O_WRONLY | O_TRUNC | O_BINARY, 0666, errp);
    if (fd < 0) {
        return NULL;
    }
    cap = g_new0(ChppCapture, 1);
    cap->fd = fd;
    cap->path = g_strdup(path);
    cap->max_bytes = max_bytes;
    if (!chpp_capture_write(cap, &iov, 1)) {
        error_setg(errp, "cannot write the pcap header to %s", path);
        chpp_capture_close(cap);
        return NULL;
    }
    return cap;
}

void chpp_capture_close(ChppCapture *cap)
{
    if (!cap) {
        return;
    }
    if (cap->fd >= 0) {
        close(cap->fd);
    }
    g_free(cap->path);
    g_free(cap);
}

/*
 * The MACs of chpp-wire.h: FRAME from the sending to the receiving
 * function of the frame, other records between functions 0, HELLO to
 * broadcast (its node id, not the link's idea of the peer, as source).
 */
static void chpp_capture_macs(const struct chpp_link_rec *rec,
                              const uint8_t *body, uint32_t len,
                              uint16_t from, uint16_t to, uint8_t *eth)
{
    const size_t ext = CHPP_WIRE_HDR_SIZE;
    uint8_t src_fn = 0, dst_fn = 0;

    if (rec->type == CHPP_LINK_FRAME &&
        len >= ext + sizeof(struct chpp_wire_ext)) {
        src_fn = body[ext + offsetof(struct chpp_wire_ext, src_vf)];
        dst_fn = body[ext + offsetof(struct chpp_wire_ext, dst_vf)];
    }
    if (rec->type == CHPP_LINK_HELLO &&
        len >= sizeof(struct chpp_link_hello)) {
        from = lduw_le_p(body + offsetof(struct chpp_link_hello, node_id));
    }
    chpp_eth_mac(eth, to, dst_fn);
    if (rec->type == CHPP_LINK_HELLO) {
        memset(eth, 0xff, 6);
    }
    chpp_eth_mac(eth + 6, from, src_fn);
    stw_be_p(eth + 12, CHPP_ETH_TYPE);
}

void chpp_capture_record(ChppCapture *cap, const struct chpp_link_rec *rec,
                         const uint8_t *body, uint32_t len, uint16_t from,
                         uint16_t to)
{
    static const uint8_t pad[ETH_MIN_PAYLOAD];
    uint8_t eth[CHPP_ETH_HDR_SIZE];
    uint32_t payload = sizeof(*rec) + len;
    uint32_t padding = payload < ETH_MIN_PAYLOAD ? ETH_MIN_PAYLOAD - payload
                                                 : 0;
    PcapRecHdr h;
    struct iovec iov[] = {
        { &h, sizeof(h) },
        { eth, sizeof(eth) },
        { (void *)rec, sizeof(*rec) },
        { (void *)body, len },
        { (void *)pad, padding },
    };
    int64_t now;

    /* The link's every record passes here: nothing more without capture. */
    if (!cap || cap->fd < 0) {
        return;
    }
    now = g_get_real_time();
    h = (PcapRecHdr) {
        .ts_sec = now / G_USEC_PER_SEC,
        .ts_usec = now % G_USEC_PER_SEC,
        .incl_len = sizeof(eth) + payload + padding,
        .orig_len = sizeof(eth) + payload + padding,
    };
    chpp_capture_macs(rec, body, len, from, to, eth);
    chpp_capture_write(cap, iov, ARRAY_SIZE(iov));
}
