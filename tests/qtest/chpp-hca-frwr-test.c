/*
 * chpp-hca fast registration (ABI 1.6, docs/memory-regions.md): regions
 * SW2HW_MPT leaves free, REG_MR WQEs that give them pages, rights and a
 * key, LOCAL_INV, and SEND_INV that frees the responder's region, between
 * two nodes over a link (what NVMe over RDMA does).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "chpp-hca-qtest.h"

#define PD          CHPP_NODE_PD
#define MR_ALL      (CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ | \
                     CHPP_MPT_REMOTE_WRITE)
#define FR_IDX      40          /* the fast-registration MPT */
#define FR_MTT      12000       /* its reserved MTT entries */
#define IOVA        0x7000100ull

typedef ChppNode Node;

static char *tmpdir;

static void pair_start(Node *a, Node *b, const char *name)
{
    g_autofree char *path = g_strdup_printf("%s/%s", tmpdir, name);
    g_autofree char *srv = g_strdup_printf("path=%s,server=on,wait=off",
                                           path);
    g_autofree char *cli = g_strdup_printf("path=%s,reconnect=1", path);

    chpp_node_start(a, 1, srv);
    chpp_node_start(b, 2, cli);
    chpp_node_wait_link(a, b, true);
}

static void poll2(Node *n, Node *o, uint32_t cqn, struct chpp_cqe *cqe)
{
    int64_t end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;

    while (!chpp_cqe_valid(n->d, &n->cq[cqn], cqe)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(n->d->qts, 100000);
        qtest_clock_step(o->d->qts, 100000);
        g_usleep(200);
    }
    n->cq[cqn].ci++;
    chpp_cq_db(n->d, n->cq[cqn].uar, n->cq[cqn].cqn, CHPP_CQ_DB_SET_CI,
               n->cq[cqn].ci);
}

static void expect(Node *n, Node *o, uint32_t cqn, uint64_t wr_id,
                   uint8_t opcode, uint8_t status)
{
    struct chpp_cqe cqe;

    poll2(n, o, cqn, &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
    if (!status) {
        g_assert_cmpuint(cqe.opcode, ==, opcode);
    }
}

static uint64_t node_buf(Node *n, size_t len, uint32_t *key)
{
    uint64_t addr = guest_alloc(&n->d->qs->alloc, len);

    qtest_memset(n->d->qts, addr, 0, len);
    *key = chpp_create_mr(n->d, n->next_mr++, PD, addr, len, MR_ALL);
    return addr;
}

static uint8_t fr_create(ChppDev *d, uint32_t idx, uint32_t pd,
                         uint32_t max_pages)
{
    struct chpp_mpt_context c = {
        .flags = cpu_to_le32(CHPP_MPT_FAST_REG),
        .key = cpu_to_le32(idx << CHPP_KEY_INDEX_SHIFT),
        .pd = cpu_to_le32(pd),
        .mtt_base = cpu_to_le32(FR_MTT),
        .max_pages = cpu_to_le32(max_pages),
    };

    return chpp_sw2hw_mpt(d, idx, &c);
}

static uint8_t fr_state(ChppDev *d, uint32_t idx)
{
    struct chpp_mpt_context c;

    g_assert_cmphex(chpp_query_mpt(d, idx, &c), ==, CHPP_STAT_OK);
    return c.state;
}

/* A REG_MR WQE on @n's QP: @npages pages at @pages (a page list). */
static void reg_mr(Node *n, uint64_t wr_id, uint32_t key, uint64_t iova,
                   uint64_t len, uint64_t page_list, uint16_t npages,
                   uint8_t access)
{
    ChppWqeBuf *w = chpp_wqe_new(CHPP_WQE_REG_MR, CHPP_WQE_SIGNALED, wr_id,
                                 0);
    struct chpp_wqe_reg r = {
        .iova = cpu_to_le64(iova), .length = cpu_to_le64(len),
        .page_list = cpu_to_le64(page_list), .key = cpu_to_le32(key),
        .npages = cpu_to_le16(npages), .log_page_size = 12,
        .access = access,
    };

    memcpy(w->buf + w->pos, &r, sizeof(r));
    w->pos += sizeof(r);
    chpp_post_send(n->d, &n->qp, w, true);
}

static void post_op(Node *n, uint8_t op, uint64_t wr_id, uint32_t imm,
                    uint64_t laddr, uint32_t len, uint32_t lkey)
{
    ChppWqeBuf *w = chpp_wqe_new(op, CHPP_WQE_SIGNALED, wr_id, imm);

    if (len) {
        chpp_wqe_sge(w, laddr, len, lkey);
    }
    chpp_post_send(n->d, &n->qp, w, true);
}

/* After an error: both QPs back to RESET and connected again. */
static void reconnect(Node *a, Node *b, uint8_t magic)
{
    struct chpp_qp_context zero = {};

    g_assert_cmphex(chpp_modify_qp(a->d, CHPP_CMD_2RST_QP, 2, 0, &zero), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_modify_qp(b->d, CHPP_CMD_2RST_QP, 2, 0, &zero), ==,
                    CHPP_STAT_OK);
    chpp_node_qp(a, 2, magic, 5, 8);
    chpp_node_qp(b, 2, magic + 0x10, 5, 8);
    chpp_node_connect(a, b, 14, 7);
    chpp_node_connect(b, a, 14, 7);
}

static void test_frwr_link(void)
{
    Node a, b;
    uint32_t ka, kb, key = FR_IDX << CHPP_KEY_INDEX_SHIFT | 5;
    uint64_t pages, ba, bb, list;
    struct chpp_cqe cqe;
    ChppTSge sge;

    pair_start(&a, &b, "frwr");
    /* Creation: max_pages range, not PHYS, max_pages only with FAST_REG. */
    g_assert_cmphex(fr_create(a.d, FR_IDX, PD, 0), ==, CHPP_STAT_BAD_PARAM);
    g_assert_cmphex(fr_create(a.d, FR_IDX, PD, CHPP_MAX_FR_PAGES + 1), ==,
                    CHPP_STAT_BAD_PARAM);
    g_assert_cmphex(fr_create(a.d, FR_IDX, PD, 4), ==, CHPP_STAT_OK);
    g_assert_cmpuint(fr_state(a.d, FR_IDX), ==, CHPP_RES_FREE);

    chpp_node_qp(&a, 2, 0x12, 5, 8);
    chpp_node_qp(&b, 2, 0x22, 5, 8);
    chpp_node_connect(&a, &b, 14, 7);
    chpp_node_connect(&b, &a, 14, 7);
    /* Two pages (the region starts 0x100 into the first), their list. */
    pages = guest_alloc(&a.d->qs->alloc, 3 * 4096);
    pages = ROUND_UP(pages, 4096);
    qtest_memset(a.d->qts, pages, 0, 8192);
    ba = node_buf(&a, 8192, &ka);
    list = ba;
    qtest_writeq(a.d->qts, list, cpu_to_le64(pages));
    qtest_writeq(a.d->qts, list + 8, cpu_to_le64(pages + 4096));
    bb = node_buf(&b, 16384, &kb);

    /* Free: the peer's PUT to the key fails. */
    chpp_node_post(&b, CHPP_WQE_PUT, 1, bb, 16, kb, IOVA, key, true);
    expect(&b, &a, 0, 1, 0, CHPP_WC_REM_ACCESS_ERR);
    reconnect(&a, &b, 0x40);

    /* REG_MR: 5000 bytes at IOVA, remote read and write. */
    reg_mr(&a, 10, key, IOVA, 5000, list, 2, MR_ALL);
    expect(&a, &b, 0, 10, CHPP_CQE_OP_REG_MR, CHPP_WC_SUCCESS);
    g_assert_cmpuint(fr_state(a.d, FR_IDX), ==, CHPP_RES_HW);
    /* The peer writes 5000 bytes through it, then reads them back. */
    chpp_fill(b.d, bb, 5000, 7);
    chpp_node_post(&b, CHPP_WQE_PUT, 2, bb, 5000, kb, IOVA, key, true);
    expect(&b, &a, 0, 2, CHPP_CQE_OP_RDMA_WRITE, CHPP_WC_SUCCESS);
    chpp_check(a.d, pages + 0x100, 5000, 7);
    chpp_node_post(&b, CHPP_WQE_GET, 3, bb + 8192, 5000, kb, IOVA, key,
                   true);
    expect(&b, &a, 0, 3, CHPP_CQE_OP_RDMA_READ, CHPP_WC_SUCCESS);
    chpp_check(b.d, bb + 8192, 5000, 7);
    /* Beyond the registered length: refused. */
    chpp_node_post(&b, CHPP_WQE_PUT, 4, bb, 16, kb, IOVA + 4990, key, true);
    expect(&b, &a, 0, 4, 0, CHPP_WC_REM_ACCESS_ERR);
    reconnect(&a, &b, 0x50);

    /* SEND_INV: the message lands and the region is free. */
    sge = (ChppTSge) { ba + 4096, 4096, ka };
    chpp_post_recvs(a.d, &a.qp, 20, &sge, 1, 1);
    post_op(&b, CHPP_WQE_SEND_INV, 5, key, bb, 100, kb);
    expect(&b, &a, 0, 5, CHPP_CQE_OP_SEND, CHPP_WC_SUCCESS);
    poll2(&a, &b, 1, &cqe);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    g_assert_cmphex(cqe.flags & CHPP_CQE_FLAG_INV, ==, CHPP_CQE_FLAG_INV);
    g_assert_cmphex(le32_to_cpu(cqe.imm), ==, key);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, 100);
    g_assert_cmpuint(fr_state(a.d, FR_IDX), ==, CHPP_RES_FREE);

    /* Again with a new tag, then LOCAL_INV by the owner. */
    key = (key & ~CHPP_KEY_TAG_MASK) | 6;
    reg_mr(&a, 11, key, IOVA, 4096 - 0x100, list, 1, CHPP_MPT_LOCAL_WRITE);
    expect(&a, &b, 0, 11, CHPP_CQE_OP_REG_MR, CHPP_WC_SUCCESS);
    /* The new key works as an lkey; the old one does not. */
    post_op(&a, CHPP_WQE_LOCAL_INV, 12, key, 0, 0, 0);
    expect(&a, &b, 0, 12, CHPP_CQE_OP_LOCAL_INV, CHPP_WC_SUCCESS);
    g_assert_cmpuint(fr_state(a.d, FR_IDX), ==, CHPP_RES_FREE);
    /* A free region may be invalidated again. */
    post_op(&a, CHPP_WQE_LOCAL_INV, 13, key, 0, 0, 0);
    expect(&a, &b, 0, 13, CHPP_CQE_OP_LOCAL_INV, CHPP_WC_SUCCESS);

    /* Errors: more pages than reserved, then a region still registered. */
    reg_mr(&a, 14, key, IOVA, 4096, list, 5, MR_ALL);
    expect(&a, &b, 0, 14, 0, CHPP_WC_LOC_PROT_ERR);
    g_assert_cmpuint(fr_state(a.d, FR_IDX), ==, CHPP_RES_FREE);

    /*
     * A SEND_INV for a key that is no fast-registration region (a plain
     * MR of node 1): the receive completes in error, the sender gets a
     * NAK, nothing is invalidated.
     */
    reconnect(&a, &b, 0x60);
    chpp_post_recvs(a.d, &a.qp, 21, &sge, 1, 1);
    post_op(&b, CHPP_WQE_SEND_INV, 6, ka, bb, 100, kb);
    expect(&b, &a, 0, 6, 0, CHPP_WC_REM_OP_ERR);
    expect(&a, &b, 1, 21, 0, CHPP_WC_REM_INV_REQ_ERR);
    g_assert_cmphex(chpp_query_mpt(a.d, 0, &(struct chpp_mpt_context){}), ==,
                    CHPP_STAT_OK);
    chpp_stop(a.d);
    chpp_stop(b.d);
}

/* REG_MR errors, each on a fresh QP (an error ends it): one node. */
static void test_frwr_errors(void)
{
    Node a;
    uint32_t k, key = FR_IDX << CHPP_KEY_INDEX_SHIFT | 1;
    uint64_t buf, list;
    uint8_t qpn = 0;
    struct {
        uint32_t key;
        uint16_t npages;
        uint64_t len;
        uint8_t access;
        uint64_t page0;
    } bad[] = {
        { key + (1 << CHPP_KEY_INDEX_SHIFT), 1, 256, MR_ALL, 0 }, /* no FR */
        { key, 1, 256, CHPP_MPT_REMOTE_WRITE, 0 },      /* no local write */
        { key, 1, 256, 0x80, 0 },                       /* unknown right */
        { key, 1, 0, MR_ALL, 0 },                       /* empty */
        { key, 1, 4096, MR_ALL, 0 },                    /* beyond its page */
        { key, 1, 256, MR_ALL, 0x100 },                 /* page unaligned */
    };
    unsigned i;

    chpp_node_setup(&a, chpp_start("node-id=1", NULL), 1, 0);
    g_assert_cmphex(fr_create(a.d, FR_IDX, PD, 4), ==, CHPP_STAT_OK);
    /* Another PD's region. */
    g_assert_cmphex(fr_create(a.d, FR_IDX + 2, PD + 1, 4), ==, CHPP_STAT_OK);
    buf = node_buf(&a, 8192, &k);
    list = buf;
    for (i = 0; i <= ARRAY_SIZE(bad); i++) {
        bool pd_case = i == ARRAY_SIZE(bad);

        chpp_node_qp(&a, qpn, 0x30 + i, 4, 7);
        chpp_node_connect(&a, &a, 14, 7);
        qtest_writeq(a.d->qts, list, cpu_to_le64(pd_case ? buf + 4096 :
                                                 buf + 4096 + bad[i].page0));
        if (pd_case) {
            reg_mr(&a, 50 + i, (FR_IDX + 2) << CHPP_KEY_INDEX_SHIFT, IOVA,
                   4096 - 0x100, list, 1, MR_ALL);
        } else {
            reg_mr(&a, 50 + i, bad[i].key, IOVA, bad[i].len, list,
                   bad[i].npages, bad[i].access);
        }
        expect(&a, &a, 0, 50 + i, 0, CHPP_WC_LOC_PROT_ERR);
        g_assert_cmpuint(fr_state(a.d, FR_IDX), ==, CHPP_RES_FREE);
        qpn++;
        if (qpn == 4) {
            qpn = 0;
        }
        g_assert_cmphex(chpp_modify_qp(a.d, CHPP_CMD_2RST_QP, a.qp.qpn, 0,
                                       &(struct chpp_qp_context){}), ==,
                        CHPP_STAT_OK);
    }
    /* A LOCAL_INV with a stale key of a registered region fails. */
    chpp_node_qp(&a, 0, 0x40, 4, 7);
    chpp_node_connect(&a, &a, 14, 7);
    qtest_writeq(a.d->qts, list, cpu_to_le64(buf + 4096));
    reg_mr(&a, 60, key, IOVA, 4096 - 0x100, list, 1, MR_ALL);
    expect(&a, &a, 0, 60, CHPP_CQE_OP_REG_MR, CHPP_WC_SUCCESS);
    post_op(&a, CHPP_WQE_LOCAL_INV, 61, key + 1, 0, 0, 0);
    expect(&a, &a, 0, 61, 0, CHPP_WC_LOC_PROT_ERR);
    g_assert_cmpuint(fr_state(a.d, FR_IDX), ==, CHPP_RES_HW);
    /* HW2SW of a registered region. */
    g_assert_cmphex(chpp_cmd(a.d, CHPP_CMD_HW2SW_MPT, 0, FR_IDX, 0), ==,
                    CHPP_STAT_OK);
    chpp_stop(a.d);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    if (!qtest_has_machine("q35")) {
        return 1;
    }
    tmpdir = g_dir_make_tmp("chpp-frwr-XXXXXX", NULL);
    g_assert(tmpdir);
    qtest_add_func("/chpp-hca/frwr/link", test_frwr_link);
    qtest_add_func("/chpp-hca/frwr/errors", test_frwr_errors);
    ret = g_test_run();
    rmdir(tmpdir);
    g_free(tmpdir);
    return ret;
}
