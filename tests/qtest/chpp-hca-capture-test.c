/*
 * chpp-hca capture tests (docs/capture.md): two QEMUs on a chardev link,
 * each writing its link's records to a pcap file (property capture), known
 * traffic between them, and tshark with the project's dissector
 * (scripts/wireshark/) reading the files back: every decoded field must be
 * what was sent.  A hand-written file of malformed records must give the
 * dissector's expert infos, never a Lua error.  Needs tshark
 * (scripts/setup.sh installs it).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "qemu/bswap.h"
#include "chpp-hca-qtest.h"
#include "hw/chpp/chpp-wire.h"

#define QPN_A   1
#define QPN_B   5           /* DST-QP needs its 3 bits */
#define PUT_LEN (CHPP_LINK_CREDITS / 4 * CHPP_WIRE_MAX_PAYLOAD)
#define PUT_FRAMES (PUT_LEN / CHPP_WIRE_MAX_PAYLOAD)  /* at most 64 */
#define GET_LEN CHPP_WIRE_MAX_PAYLOAD
#define SEND_LEN 100
#define IMM     0xabcu
#define PSN0    0x500           /* chpp_node_connect's first PSN */
#define MAC_BCAST "ff:ff:ff:ff:ff:ff"

static char *tmpdir;
static char *plugin;            /* the dissector, built by the test */

/* tshark -T fields, in this order. */
static const char *const fields[] = {
    "frame.number", "eth.src", "eth.dst", "chpp.rec.type", "chpp.rec.vc",
    "chpp.hello.node_id", "chpp.hello.credits", "chpp.credit.count",
    "chpp.ext.op", "chpp.ext.psn", "chpp.ext.src_qpn", "chpp.ext.dst_qpn",
    "chpp.ext.src_node", "chpp.ext.dst_node", "chpp.ext.payload_len",
    "chpp.ext.rkey", "chpp.ext.imm", "chpp.ext.msg_len", "chpp.ext.offset",
    "chpp.ext.flags", "chpp.hdr.pkt_type", "chpp.hdr.tc", "chpp.hdr.src_cpu",
    "chpp.hdr.dst_qp", "chpp.ext.syndrome", "chpp.refuse.reason",
    "chpp.refuse.text", "chpp.hello.extra", "chpp.expert.nak",
    "chpp.expert.refused", "chpp.expert.bad_magic", "chpp.expert.truncated",
    "chpp.expert.hdr_mismatch", "chpp.expert.short", "chpp.expert.unknown",
    "_ws.expert.message",
};
enum {
    F_NUM, F_SRC, F_DST, F_TYPE, F_VC, F_HELLO_NODE, F_CREDITS, F_CREDIT,
    F_OP, F_PSN, F_SQPN, F_DQPN, F_SNODE, F_DNODE, F_PLEN, F_RKEY, F_IMM,
    F_MSG_LEN, F_OFFSET, F_FLAGS, F_H_TYPE, F_H_TC, F_H_SRC_CPU, F_H_DST_QP,
    F_SYNDROME, F_REASON, F_TEXT, F_HELLO_EXTRA, F_X_NAK, F_X_REFUSED,
    F_X_MAGIC, F_X_TRUNC, F_X_HDR, F_X_SHORT,
    F_X_UNKNOWN, F_EXPERT, F_NUM_FIELDS
};
QEMU_BUILD_BUG_ON(ARRAY_SIZE(fields) != F_NUM_FIELDS);

/* The decoded records of a capture: one row of F_NUM_FIELDS strings each. */
static GPtrArray *tshark(const char *pcap)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *out = NULL, *err = NULL;
    g_auto(GStrv) lines = NULL;
    GPtrArray *rows;
    int status, i;

    g_ptr_array_add(argv, g_strdup("tshark"));
    g_ptr_array_add(argv, g_strdup_printf("-Xlua_script:%s", plugin));
    g_ptr_array_add(argv, g_strdup("-r"));
    g_ptr_array_add(argv, g_strdup(pcap));
    g_ptr_array_add(argv, g_strdup("-Tfields"));
    g_ptr_array_add(argv, g_strdup("-Eseparator=/t"));
    for (i = 0; i < F_NUM_FIELDS; i++) {
        g_ptr_array_add(argv, g_strdup("-e"));
        g_ptr_array_add(argv, g_strdup(fields[i]));
    }
    g_ptr_array_add(argv, NULL);
    g_assert(g_spawn_sync(tmpdir, (char **)argv->pdata, NULL,
                          G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                          &status, NULL));
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        g_printerr("tshark failed:\n%s", err);
        g_assert_not_reached();
    }
    /* A plugin that does not load, or fails, says so here or per packet. */
    g_assert(!strstr(err, "Lua") && !strstr(err, "rror"));
    g_assert(!strstr(out, "Lua Error"));
    lines = g_strsplit(out, "\n", -1);
    rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
    for (i = 0; lines[i] && *lines[i]; i++) {
        char **row = g_strsplit(lines[i], "\t", -1);

        g_assert_cmpuint(g_strv_length(row), ==, F_NUM_FIELDS);
        g_ptr_array_add(rows, row);
    }
    return rows;
}

static uint64_t num(char **row, int f)
{
    g_assert(*row[f]);
    return g_ascii_strtoull(row[f], NULL, 0);
}

static char *mac(uint16_t node, uint8_t fn)
{
    uint8_t m[6];

    chpp_eth_mac(m, node, fn);
    return g_strdup_printf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
                           m[3], m[4], m[5]);
}

/* ---- two nodes, capturing ------------------------------------------------ */

static void node_start(ChppNode *n, uint16_t id, const char *chardev,
                       const char *pcap)
{
    g_autofree char *props = g_strdup_printf("node-id=%u,num-qps=8,"
                                             "chardev=lnk,capture=%s", id,
                                             pcap);
    g_autofree char *extra = g_strdup_printf("-chardev socket,id=lnk,%s",
                                             chardev);

    chpp_node_setup(n, chpp_start(props, extra), id, 0);
}

static void pair_start(ChppNode *a, ChppNode *b, const char *pa,
                       const char *pb)
{
    g_autofree char *path = g_strdup_printf("%s/sock", tmpdir);
    g_autofree char *srv = g_strdup_printf("path=%s,server=on,wait=off",
                                           path);
    g_autofree char *cli = g_strdup_printf("path=%s,reconnect=1", path);

    node_start(a, 1, srv, pa);
    node_start(b, 2, cli, pb);
    chpp_node_wait_link(a, b, true);
}

/* Wait for a CQE on @n, stepping both clocks and letting the socket run. */
static void expect2(ChppNode *n, ChppNode *other, uint32_t cqn,
                    uint64_t wr_id, uint8_t opcode, uint32_t len,
                    struct chpp_cqe *cqe)
{
    int64_t end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;

    while (!chpp_cqe_valid(n->d, &n->cq[cqn], cqe)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(n->d->qts, 200000);
        qtest_clock_step(other->d->qts, 200000);
        g_usleep(200);
    }
    n->cq[cqn].ci++;
    chpp_cq_db(n->d, CHPP_NODE_UAR, cqn, CHPP_CQ_DB_SET_CI, n->cq[cqn].ci);
    g_assert_cmpuint(cqe->status, ==, 0);
    g_assert_cmphex(le64_to_cpu(cqe->wr_id), ==, wr_id);
    g_assert_cmpuint(cqe->opcode, ==, opcode);
    g_assert_cmpuint(le32_to_cpu(cqe->byte_len), ==, len);
}

static uint64_t node_buf(ChppNode *n, size_t len, uint32_t *key)
{
    uint64_t addr = guest_alloc(&n->d->qs->alloc, len);

    qtest_memset(n->d->qts, addr, 0, len);
    *key = chpp_create_mr(n->d, n->next_mr++, CHPP_NODE_PD, addr, len,
                          CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ |
                          CHPP_MPT_REMOTE_WRITE);
    return addr;
}

/*
 * Node 1 PUTs PUT_LEN bytes (a CREDIT's worth of frames) to node 2, GETs
 * GET_LEN back and SENDs SEND_LEN bytes with immediate IMM.  Returns node
 * 2's rkey.
 */
static uint32_t traffic(ChppNode *a, ChppNode *b)
{
    uint32_t ak, bk;
    uint64_t ab = node_buf(a, PUT_LEN + GET_LEN, &ak);
    uint64_t bb = node_buf(b, PUT_LEN, &bk);
    ChppTSge rs = { bb, SEND_LEN, bk };
    struct chpp_cqe cqe;
    ChppWqeBuf *w;

    chpp_node_qp(a, QPN_A, 0x11, 6, 9);
    chpp_node_qp(b, QPN_B, 0x23, 6, 9);
    chpp_node_connect(a, b, 14, 3);
    chpp_node_connect(b, a, 14, 3);

    chpp_fill(a->d, ab, PUT_LEN, 7);
    w = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED, 1, 0);
    chpp_wqe_raddr(w, bb, bk);
    chpp_wqe_sge(w, ab, PUT_LEN, ak);
    chpp_post_send(a->d, &a->qp, w, true);
    expect2(a, b, 0, 1, CHPP_CQE_OP_RDMA_WRITE, PUT_LEN, &cqe);
    chpp_check(b->d, bb, PUT_LEN, 7);

    w = chpp_wqe_new(CHPP_WQE_GET, CHPP_WQE_SIGNALED, 2, 0);
    chpp_wqe_raddr(w, bb, bk);
    chpp_wqe_sge(w, ab + PUT_LEN, GET_LEN, ak);
    chpp_post_send(a->d, &a->qp, w, true);
    expect2(a, b, 0, 2, CHPP_CQE_OP_RDMA_READ, GET_LEN, &cqe);
    chpp_check(a->d, ab + PUT_LEN, GET_LEN, 7);

    chpp_post_recv_sges(b->d, &b->qp, 3, &rs, 1);
    w = chpp_wqe_new(CHPP_WQE_SEND_IMM, CHPP_WQE_SIGNALED, 4, IMM);
    chpp_wqe_sge(w, ab, SEND_LEN, ak);
    chpp_post_send(a->d, &a->qp, w, true);
    expect2(a, b, 0, 4, CHPP_CQE_OP_SEND, SEND_LEN, &cqe);
    expect2(b, a, 1, 3, CHPP_CQE_OP_RECV, SEND_LEN, &cqe);
    g_assert_cmphex(le32_to_cpu(cqe.imm), ==, IMM);
    return bk;
}

static gint cmp_str(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "op psn src dst len" of every FRAME row, sorted. */
static char *frames_of(GPtrArray *rows)
{
    g_autoptr(GPtrArray) s = g_ptr_array_new_with_free_func(g_free);
    GString *all = g_string_new("");
    guint i;

    for (i = 0; i < rows->len; i++) {
        char **r = g_ptr_array_index(rows, i);

        if (num(r, F_TYPE) == CHPP_LINK_FRAME) {
            g_ptr_array_add(s, g_strdup_printf("%s %s %s %s %s\n", r[F_OP],
                                               r[F_PSN], r[F_SNODE],
                                               r[F_DNODE], r[F_PLEN]));
        }
    }
    g_ptr_array_sort(s, cmp_str);
    for (i = 0; i < s->len; i++) {
        g_string_append(all, g_ptr_array_index(s, i));
    }
    return g_string_free(all, false);
}

static void test_capture_decoded(void)
{
    g_autofree char *pa = g_strdup_printf("%s/a.pcap", tmpdir);
    g_autofree char *pb = g_strdup_printf("%s/b.pcap", tmpdir);
    g_autofree char *mac1 = mac(1, 0), *mac2 = mac(2, 0);
    g_autofree char *fa = NULL, *fb = NULL;
    g_autoptr(GPtrArray) ra = NULL, rb = NULL;
    ChppNode a, b;
    uint32_t bk, psn, next_put = 0, hellos = 0, credits = 0, shms = 0;
    bool get_req = false, get_resp = false, send = false, send_acked = false;
    guint i;

    pair_start(&a, &b, pa, pb);
    bk = traffic(&a, &b);
    chpp_stop(a.d);
    chpp_stop(b.d);

    ra = tshark(pa);
    rb = tshark(pb);
    for (i = 0; i < ra->len; i++) {
        char **r = g_ptr_array_index(ra, i);
        bool from_a = !strcmp(r[F_SRC], mac1);

        /* Nothing in traffic this correct is flagged. */
        g_assert_cmpstr(r[F_EXPERT], ==, "");
        g_assert(from_a || !strcmp(r[F_SRC], mac2));
        switch (num(r, F_TYPE)) {
        case CHPP_LINK_HELLO:
            g_assert_cmpstr(r[F_DST], ==, MAC_BCAST);
            g_assert_cmpuint(num(r, F_HELLO_NODE), ==, from_a ? 1 : 2);
            g_assert_cmpstr(r[F_CREDITS], ==,
                            stringify(CHPP_LINK_CREDITS) ","
                            stringify(CHPP_LINK_CREDITS));
            hellos++;
            continue;
        case CHPP_LINK_SHM:
            /* Each side moves its half to a shared ring (docs/link.md). */
            g_assert_cmpstr(r[F_DST], ==, from_a ? mac2 : mac1);
            shms++;
            continue;
        case CHPP_LINK_CREDIT:
            /* Node 2 returns the credits of the PUT's frames. */
            g_assert(!from_a);
            g_assert_cmpstr(r[F_DST], ==, mac1);
            g_assert_cmpuint(num(r, F_VC), ==, CHPP_VC_DATA);
            g_assert_cmpuint(num(r, F_CREDIT), >=, CHPP_LINK_CREDITS / 4);
            credits++;
            continue;
        case CHPP_LINK_FRAME:
            break;
        default:
            g_assert_not_reached();
        }
        g_assert_cmpstr(r[F_DST], ==, from_a ? mac2 : mac1);
        g_assert_cmpuint(num(r, F_SNODE), ==, from_a ? 1 : 2);
        g_assert_cmpuint(num(r, F_DNODE), ==, from_a ? 2 : 1);
        g_assert_cmpuint(num(r, F_SQPN), ==, from_a ? QPN_A : QPN_B);
        g_assert_cmpuint(num(r, F_DQPN), ==, from_a ? QPN_B : QPN_A);
        /* Figure 6: the narrow copies, the channel, the packet type. */
        g_assert_cmpuint(num(r, F_H_SRC_CPU), ==, from_a ? 1 : 2);
        g_assert_cmpuint(num(r, F_H_DST_QP), ==, (from_a ? QPN_B : QPN_A) & 7);
        g_assert_cmpuint(num(r, F_H_TC), ==, num(r, F_VC));
        g_assert_cmpuint(num(r, F_H_TYPE), ==,
                         num(r, F_OP) == CHPP_OP_WRITE ||
                         num(r, F_OP) == CHPP_OP_READ_RESP ? CHPP_PKT_PUT :
                         num(r, F_OP) == CHPP_OP_READ_REQ ? CHPP_PKT_GET :
                         num(r, F_OP) == CHPP_OP_ACK ? CHPP_PKT_ACK :
                         CHPP_PKT_NAP);
        switch (num(r, F_OP)) {
        case CHPP_OP_WRITE:
            /*
             * First sent in order, PSN after PSN; a loaded host may let
             * the retransmission timer run out, so earlier ones may
             * follow again.
             */
            g_assert(from_a);
            psn = num(r, F_PSN) - PSN0;
            g_assert_cmpuint(psn, <=, next_put);
            g_assert_cmpuint(psn, <, PUT_LEN / CHPP_WIRE_MAX_PAYLOAD);
            g_assert_cmpuint(num(r, F_OFFSET), ==,
                             psn * CHPP_WIRE_MAX_PAYLOAD);
            g_assert_cmpuint(num(r, F_PLEN), ==, CHPP_WIRE_MAX_PAYLOAD);
            g_assert_cmpuint(num(r, F_MSG_LEN), ==, PUT_LEN);
            g_assert_cmphex(num(r, F_RKEY), ==, bk);
            g_assert_cmpuint(num(r, F_VC), ==, CHPP_VC_DATA);
            next_put += psn == next_put;
            break;
        case CHPP_OP_READ_REQ:
            g_assert(from_a);
            g_assert_cmpuint(num(r, F_PSN), ==, PSN0 + PUT_LEN /
                             CHPP_WIRE_MAX_PAYLOAD);
            g_assert_cmpuint(num(r, F_MSG_LEN), ==, GET_LEN);
            g_assert_cmpuint(num(r, F_PLEN), ==, 0);
            g_assert_cmphex(num(r, F_RKEY), ==, bk);
            g_assert_cmpuint(num(r, F_VC), ==, CHPP_VC_GET);
            get_req = true;
            break;
        case CHPP_OP_READ_RESP:
            g_assert(!from_a);
            g_assert_cmpuint(num(r, F_PSN), ==, PSN0 + PUT_LEN /
                             CHPP_WIRE_MAX_PAYLOAD);
            g_assert_cmpuint(num(r, F_PLEN), ==, GET_LEN);
            g_assert_cmpuint(num(r, F_VC), ==, CHPP_VC_DATA);
            get_resp = true;
            break;
        case CHPP_OP_SEND_IMM:
            g_assert(from_a);
            g_assert_cmpuint(num(r, F_PSN), ==, PSN0 + PUT_LEN /
                             CHPP_WIRE_MAX_PAYLOAD + 1);
            g_assert_cmpuint(num(r, F_PLEN), ==, SEND_LEN);
            g_assert_cmphex(num(r, F_IMM), ==, IMM);
            g_assert(num(r, F_FLAGS) & CHPP_WIRE_F_IMM);
            send = true;
            break;
        case CHPP_OP_ACK:
            g_assert(!from_a);
            g_assert_cmpuint(num(r, F_PLEN), ==, 0);
            if (num(r, F_PSN) == PSN0 + PUT_LEN / CHPP_WIRE_MAX_PAYLOAD + 1) {
                send_acked = true;
            }
            break;
        default:
            g_assert_not_reached();
        }
    }
    g_assert_cmpuint(hellos, ==, 2);
    g_assert_cmpuint(shms, ==, 2);
    g_assert_cmpuint(credits, >=, 1);
    g_assert_cmpuint(next_put, ==, PUT_LEN / CHPP_WIRE_MAX_PAYLOAD);
    g_assert(get_req && get_resp && send);
    g_assert(send_acked);
    /* Node 2's capture has the same frames, from the other side. */
    fa = frames_of(ra);
    fb = frames_of(rb);
    g_assert_cmpstr(fa, ==, fb);
    unlink(pa);
    unlink(pb);
}

/* ---- a netdev link, captured by QEMU's filter-dump ---------------------- */

/*
 * Two nodes on a multicast segment; node 1's backend dumps every frame it
 * passes.  The segment loops a node's frames back to it, and HELLOs repeat,
 * so records are checked as a set, not a sequence.
 */
static void test_capture_netdev(void)
{
    g_autofree char *pa = g_strdup_printf("%s/netdev-a.pcap", tmpdir);
    g_autofree char *mcast = g_strdup_printf(
        "239.255.%u.%u:%u", (unsigned)(getpid() >> 8) & 0xff,
        (unsigned)getpid() & 0xff, 20000 + g_random_int_range(0, 40000));
    g_autofree char *net = g_strdup_printf(
        "-netdev socket,id=fab,mcast=%s,localaddr=127.0.0.1", mcast);
    g_autofree char *dump = g_strdup_printf(
        "%s -object filter-dump,id=cap,netdev=fab,file=%s", net, pa);
    g_autoptr(GPtrArray) rows = NULL;
    uint64_t puts = 0;
    bool hello[3] = {}, get_req = false, send = false;
    ChppNode a, b;
    uint32_t bk;
    guint i;

    chpp_node_setup(&a, chpp_start("node-id=1,num-qps=8,netdev=fab,"
                                   "link-hello-ms=100", dump), 1, 0);
    chpp_node_setup(&b, chpp_start("node-id=2,num-qps=8,netdev=fab,"
                                   "link-hello-ms=100", net), 2, 0);
    chpp_node_wait_link(&a, &b, true);
    bk = traffic(&a, &b);
    chpp_stop(a.d);
    chpp_stop(b.d);

    rows = tshark(pa);
    for (i = 0; i < rows->len; i++) {
        char **r = g_ptr_array_index(rows, i);

        g_assert_cmpstr(r[F_EXPERT], ==, "");
        if (num(r, F_TYPE) == CHPP_LINK_HELLO) {
            g_assert_cmpuint(num(r, F_HELLO_NODE), <=, 2);
            hello[num(r, F_HELLO_NODE)] = true;
        }
        if (num(r, F_TYPE) != CHPP_LINK_FRAME) {
            continue;
        }
        g_assert_cmpuint(num(r, F_H_TC), ==, num(r, F_VC));
        if (num(r, F_OP) == CHPP_OP_WRITE) {
            g_assert_cmpuint(num(r, F_PSN), >=, PSN0);
            g_assert_cmpuint(num(r, F_PSN), <, PSN0 + PUT_FRAMES);
            g_assert_cmphex(num(r, F_RKEY), ==, bk);
            g_assert_cmpuint(num(r, F_DQPN), ==, QPN_B);
            puts |= 1ull << (num(r, F_PSN) - PSN0);
        } else if (num(r, F_OP) == CHPP_OP_READ_REQ) {
            g_assert_cmpuint(num(r, F_VC), ==, CHPP_VC_GET);
            get_req = true;
        } else if (num(r, F_OP) == CHPP_OP_SEND_IMM) {
            g_assert_cmphex(num(r, F_IMM), ==, IMM);
            send = true;
        }
    }
    g_assert(hello[1] && hello[2]);
    g_assert_cmphex(puts, ==, MAKE_64BIT_MASK(0, PUT_FRAMES));
    g_assert(get_req && send);
    unlink(pa);
}

/* ---- errors on the link ------------------------------------------------- */

static void set_prop(ChppNode *n, const char *prop, unsigned value)
{
    QDict *rsp = qtest_qmp(n->d->qts, "{'execute': 'qom-set', 'arguments': "
                           "{'path': '/machine/peripheral-anon/device[0]', "
                           "'property': %s, 'value': %u}}", prop, value);

    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
}

/* Two nodes with the same id: both refuse, both captures say why. */
static void test_capture_refusal(void)
{
    g_autofree char *pa = g_strdup_printf("%s/same-a.pcap", tmpdir);
    g_autofree char *pb = g_strdup_printf("%s/same-b.pcap", tmpdir);
    g_autofree char *path = g_strdup_printf("%s/same", tmpdir);
    g_autofree char *srv = g_strdup_printf("path=%s,server=on,wait=off",
                                           path);
    g_autofree char *cli = g_strdup_printf("path=%s", path);
    g_autofree char *why = g_strdup_printf("same node id %u", 4);
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    const char *pcaps[] = { pa, pb };
    ChppNode a, b;
    unsigned i, j;

    node_start(&a, 4, srv, pa);
    node_start(&b, 4, cli, pb);
    while (chpp_counter(a.d, CHPP_CNT_LINK_REFUSED) == 0 ||
           chpp_counter(b.d, CHPP_CNT_LINK_REFUSED) == 0) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(2000);
    }
    chpp_stop(a.d);
    chpp_stop(b.d);
    for (i = 0; i < ARRAY_SIZE(pcaps); i++) {
        g_autoptr(GPtrArray) rows = tshark(pcaps[i]);
        unsigned refusals = 0;

        for (j = 0; j < rows->len; j++) {
            char **r = g_ptr_array_index(rows, j);

            if (num(r, F_TYPE) != CHPP_LINK_REFUSE) {
                g_assert_cmpuint(num(r, F_TYPE), ==, CHPP_LINK_HELLO);
                continue;
            }
            g_assert_cmpuint(num(r, F_REASON), ==, CHPP_LINK_REFUSE_SAME_NODE);
            g_assert(strstr(r[F_TEXT], why));
            g_assert_cmpstr(r[F_X_REFUSED], ==, "1");
            refusals++;
        }
        /* Its own REFUSE, and maybe the peer's before the cut. */
        g_assert_cmpuint(refusals, >=, 1);
        unlink(pcaps[i]);
    }
}

/* A frame damaged on the way: the NAK and the retransmission, decoded. */
static void test_capture_nak(void)
{
    g_autofree char *pa = g_strdup_printf("%s/nak-a.pcap", tmpdir);
    g_autofree char *pb = g_strdup_printf("%s/nak-b.pcap", tmpdir);
    g_autoptr(GPtrArray) rows = NULL;
    ChppNode a, b;
    uint32_t ak, bk, len = 3 * CHPP_WIRE_MAX_PAYLOAD;
    uint64_t ab, bb;
    struct chpp_cqe cqe;
    ChppWqeBuf *w;
    unsigned naks = 0, damaged = 0, first = 0;
    guint i;

    pair_start(&a, &b, pa, pb);
    ab = node_buf(&a, len, &ak);
    bb = node_buf(&b, len, &bk);
    chpp_node_qp(&a, QPN_A, 0x11, 6, 9);
    chpp_node_qp(&b, QPN_B, 0x23, 6, 9);
    chpp_node_connect(&a, &b, 12, 7);
    chpp_node_connect(&b, &a, 12, 7);
    set_prop(&a, "fault-corrupt-next", 1);
    chpp_fill(a.d, ab, len, 3);
    w = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED, 1, 0);
    chpp_wqe_raddr(w, bb, bk);
    chpp_wqe_sge(w, ab, len, ak);
    chpp_post_send(a.d, &a.qp, w, true);
    expect2(&a, &b, 0, 1, CHPP_CQE_OP_RDMA_WRITE, len, &cqe);
    chpp_check(b.d, bb, len, 3);
    chpp_stop(a.d);
    chpp_stop(b.d);

    rows = tshark(pa);
    for (i = 0; i < rows->len; i++) {
        char **r = g_ptr_array_index(rows, i);

        if (num(r, F_TYPE) != CHPP_LINK_FRAME) {
            continue;
        }
        if (num(r, F_OP) == CHPP_OP_NAK) {
            g_assert_cmpuint(num(r, F_SYNDROME), ==, CHPP_NAK_PSN_SEQ);
            g_assert_cmpuint(num(r, F_PSN), ==, PSN0);
            g_assert_cmpstr(r[F_X_NAK], ==, "1");
            naks++;
        } else if (num(r, F_OP) == CHPP_OP_WRITE) {
            /* The fault changed the first frame's PSN on the way out. */
            if (num(r, F_PSN) == PSN0) {
                first++;
            } else if (num(r, F_PSN) >= PSN0 + 3) {
                damaged++;
            }
        }
    }
    g_assert_cmpuint(damaged, ==, 1);
    g_assert_cmpuint(naks, >=, 1);
    g_assert_cmpuint(first, >=, 1);         /* sent again, whole */
    unlink(pa);
    unlink(pb);
}

/* ---- malformed records ------------------------------------------------- */

static void pcap_write(FILE *f, const struct chpp_link_rec *rec,
                       const void *body, size_t len)
{
    uint8_t frame[128] = {};
    size_t n = MAX(CHPP_ETH_HDR_SIZE + sizeof(*rec) + len, 60);
    uint32_t h[4] = { 1, 0, n, n };

    g_assert(n <= sizeof(frame));
    chpp_eth_mac(frame, 2, 0);
    chpp_eth_mac(frame + 6, 1, 0);
    stw_be_p(frame + 12, CHPP_ETH_TYPE);
    memcpy(frame + CHPP_ETH_HDR_SIZE, rec, sizeof(*rec));
    memcpy(frame + CHPP_ETH_HDR_SIZE + sizeof(*rec), body, len);
    g_assert_cmpuint(fwrite(h, sizeof(h), 1, f), ==, 1);
    g_assert_cmpuint(fwrite(frame, n, 1, f), ==, 1);
}

static void test_malformed_records(void)
{
    g_autofree char *path = g_strdup_printf("%s/bad.pcap", tmpdir);
    static const uint32_t pcap_hdr[6] = { 0xa1b2c3d4, 2 | 4 << 16, 0, 0,
                                          65535, 1 };
    static const int expert[] = { F_X_MAGIC, F_X_TRUNC, F_X_HDR, F_X_SHORT,
                                  F_X_UNKNOWN };
    uint8_t frame[CHPP_WIRE_HDR_SIZE + sizeof(struct chpp_wire_ext)] = {};
    struct chpp_wire_ext e = {
        .version = CHPP_WIRE_EXT_VERSION,
        .op = CHPP_OP_WRITE,
        .src_node = cpu_to_le16(1),
        .dst_node = cpu_to_le16(2),
    };
    struct chpp_link_credit c = { .count = cpu_to_le32(1) };
    struct chpp_link_rec rec = {
        .magic = cpu_to_le32(CHPP_LINK_MAGIC ^ 1),
        .type = CHPP_LINK_CREDIT,
        .len = cpu_to_le32(sizeof(c)),
    };
    uint8_t hello[sizeof(struct chpp_link_hello) + 8] = {};
    struct chpp_link_hello h = {
        .version_major = cpu_to_le16(CHPP_LINK_VERSION_MAJOR),
        .version_minor = cpu_to_le16(CHPP_LINK_VERSION_MINOR + 1),
        .node_id = cpu_to_le16(7),
    };
    g_autoptr(GPtrArray) rows = NULL;
    FILE *f = fopen(path, "wb");
    char **r;
    guint i, j;

    memcpy(hello, &h, sizeof(h));
    memset(hello + sizeof(h), 0xee, sizeof(hello) - sizeof(h));
    g_assert(f);
    g_assert_cmpuint(fwrite(pcap_hdr, sizeof(pcap_hdr), 1, f), ==, 1);
    /* 1: bad magic */
    pcap_write(f, &rec, &c, sizeof(c));
    /* 2: len beyond the packet (and the Ethernet padding) */
    rec.magic = cpu_to_le32(CHPP_LINK_MAGIC);
    rec.len = cpu_to_le32(5000);
    pcap_write(f, &rec, &c, sizeof(c));
    /* 3: a figure 6 header of zeros before a valid extension */
    memcpy(frame + CHPP_WIRE_HDR_SIZE, &e, sizeof(e));
    rec.type = CHPP_LINK_FRAME;
    rec.len = cpu_to_le32(sizeof(frame));
    pcap_write(f, &rec, frame, sizeof(frame));
    /* 4: a frame shorter than its headers */
    rec.len = cpu_to_le32(20);
    pcap_write(f, &rec, frame, 20);
    /* 5: an unknown record type */
    rec.type = 0x7f;
    rec.len = cpu_to_le32(sizeof(c));
    pcap_write(f, &rec, &c, sizeof(c));
    /* 6: no error: a HELLO of a later version, with fields appended */
    rec.type = CHPP_LINK_HELLO;
    rec.len = cpu_to_le32(sizeof(hello));
    pcap_write(f, &rec, hello, sizeof(hello));
    fclose(f);

    rows = tshark(path);
    g_assert_cmpuint(rows->len, ==, ARRAY_SIZE(expert) + 1);
    for (i = 0; i < ARRAY_SIZE(expert); i++) {
        r = g_ptr_array_index(rows, i);
        for (j = 0; j < ARRAY_SIZE(expert); j++) {
            g_assert_cmpstr(r[expert[j]], ==, i == j ? "1" : "");
        }
    }
    r = g_ptr_array_index(rows, ARRAY_SIZE(expert));
    for (j = 0; j < ARRAY_SIZE(expert); j++) {
        g_assert_cmpstr(r[expert[j]], ==, "");
    }
    /* The known 32 bytes decoded, the rest shown as data. */
    g_assert_cmpstr(r[F_EXPERT], ==, "");
    g_assert_cmpuint(num(r, F_HELLO_NODE), ==, 7);
    g_assert_cmpstr(r[F_HELLO_EXTRA], ==, "eeeeeeeeeeeeeeee");
    unlink(path);
}

/* ---- the property -------------------------------------------------------- */

static void run_qemu(const char *args, int *status, char **err)
{
    g_autofree char *cmd = g_strdup_printf("%s %s",
                                           getenv("QTEST_QEMU_BINARY"), args);
    g_auto(GStrv) argv = NULL;

    g_assert(g_shell_parse_argv(cmd, NULL, &argv, NULL));
    g_assert(g_spawn_sync(NULL, argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
                          NULL, NULL, err, status, NULL));
}

/*
 * A file that cannot be created or written, no link to capture, a bound
 * below the file header: refused at start-up, with a message.
 */
static void test_capture_refused(void)
{
    static const char *const bad[] = {
        "-netdev socket,id=n,mcast=239.255.0.1:5000 "
        "-device chpp-hca,netdev=n,capture=%s/netdev.pcap",
        "-chardev null,id=c -device chpp-hca,chardev=c,"
        "capture=/nonexistent/dir/x.pcap",
        "-device chpp-hca,capture=%s/nolink.pcap",
        "-chardev null,id=c -device chpp-hca,chardev=c,capture-max=10,"
        "capture=%s/small.pcap",
        /* Created, but its first write fails (ENOSPC). */
        "-chardev null,id=c -device chpp-hca,chardev=c,capture=/dev/full",
    };
    g_autofree char *nolink = g_strdup_printf("%s/nolink.pcap", tmpdir);
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        g_autofree char *dev = g_strdup_printf(bad[i], tmpdir);
        g_autofree char *args = g_strdup_printf(
            "-machine q35 -nodefaults -display none -S %s", dev);
        g_autofree char *err = NULL;
        int status;

        run_qemu(args, &status, &err);
        g_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0);
        g_assert(strstr(err, "capture"));
    }
    /* Refused before the file was made. */
    g_assert(!g_file_test(nolink, G_FILE_TEST_EXISTS));
}

/* capture-max bounds the file; the link works on without the capture. */
static void test_capture_bounded(void)
{
    g_autofree char *pa = g_strdup_printf("%s/max-a.pcap", tmpdir);
    g_autofree char *pb = g_strdup_printf("%s/max-b.pcap", tmpdir);
    g_autofree char *sa = g_strdup_printf("%s,capture-max=4096", pa);
    g_autoptr(GPtrArray) rows = NULL;
    struct stat st;
    ChppNode a, b;

    pair_start(&a, &b, sa, pb);
    traffic(&a, &b);
    chpp_stop(a.d);
    chpp_stop(b.d);
    g_assert_cmpint(stat(pa, &st), ==, 0);
    g_assert_cmpint(st.st_size, <=, 4096);
    rows = tshark(pa);
    g_assert_cmpuint(rows->len, >=, 2);         /* the HELLOs at least */
    unlink(pa);
    unlink(pb);
}

int main(int argc, char **argv)
{
    const char *root = getenv("CHPP_SOURCE_ROOT");
    g_autofree char *gen = NULL;
    g_autofree char *out = NULL;       /* not TAP: kept off stdout */
    g_autofree char *err = NULL;
    int ret, status;

    g_test_init(&argc, &argv, NULL);
    tmpdir = g_dir_make_tmp("chpp-capture-XXXXXX", NULL);
    g_assert(tmpdir);
    /* The dissector is built from chpp-wire.h, as a user builds it. */
    g_assert(root);
    plugin = g_strdup_printf("%s/chpp.lua", tmpdir);
    gen = g_strdup_printf("python3 %s/scripts/wireshark/chpp-lua.py --out %s",
                          root, plugin);
    g_assert(g_spawn_command_line_sync(gen, &out, &err, &status, NULL));
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        g_printerr("%s", err);
        g_assert_not_reached();
    }

    qtest_add_func("/chpp-hca/capture/decoded", test_capture_decoded);
    qtest_add_func("/chpp-hca/capture/netdev", test_capture_netdev);
    qtest_add_func("/chpp-hca/capture/refusal", test_capture_refusal);
    qtest_add_func("/chpp-hca/capture/nak", test_capture_nak);
    qtest_add_func("/chpp-hca/capture/malformed", test_malformed_records);
    qtest_add_func("/chpp-hca/capture/refused", test_capture_refused);
    qtest_add_func("/chpp-hca/capture/bounded", test_capture_bounded);
    ret = g_test_run();
    unlink(plugin);
    g_free(plugin);
    rmdir(tmpdir);
    g_free(tmpdir);
    return ret;
}
