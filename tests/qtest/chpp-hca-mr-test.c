/*
 * chpp-hca memory region tests: SW2HW_MPT, QUERY_MPT, HW2SW_MPT and
 * WRITE_MTT, with every rejection docs/memory-regions.md lists.
 *
 * The data path through regions (chpp_mr_lookup/chpp_mr_rw) needs the
 * engine and is tested with it.  MTT contents have no query command; they
 * are observed through SW2HW_CQ, which accepts a ring only if every MTT
 * entry it uses is valid.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "chpp-hca-qtest.h"

#define NUM_MTTS    16384   /* default num-mtts */
#define NUM_MPTS    64      /* default num-mpts */
#define NUM_PDS     16      /* default num-pds */

static struct chpp_mpt_context mpt_ctx(uint32_t idx, uint8_t tag,
                                       uint32_t flags, uint32_t pd,
                                       uint64_t start, uint64_t length,
                                       uint32_t mtt_base)
{
    return (struct chpp_mpt_context) {
        .flags = cpu_to_le32(flags),
        .key = cpu_to_le32(idx << CHPP_KEY_INDEX_SHIFT | tag),
        .pd = cpu_to_le32(pd),
        .log_page_size = 12,
        .start = cpu_to_le64(start),
        .length = cpu_to_le64(length),
        .mtt_base = cpu_to_le32(mtt_base),
    };
}

/* SW2HW_MPT of @ctx must fail with @status and leave the entry SW. */
static void mpt_fails(ChppDev *d, uint8_t status, uint32_t idx,
                      const struct chpp_mpt_context *ctx)
{
    struct chpp_mpt_context q;

    qtest_memwrite(d->qts, d->mbox_in, ctx, sizeof(*ctx));
    chpp_assert_cmd_fails(d, status, CHPP_CMD_SW2HW_MPT, d->mbox_in, idx, 0);
    if (idx < NUM_MPTS && status != CHPP_STAT_BAD_RES_STATE) {
        g_assert_cmphex(chpp_query_mpt(d, idx, &q), ==, CHPP_STAT_OK);
        g_assert_cmpuint(q.state, ==, CHPP_RES_SW);
    }
}

static void assert_mpt_eq(const struct chpp_mpt_context *q,
                          const struct chpp_mpt_context *want)
{
    g_assert_cmpuint(q->state, ==, CHPP_RES_HW);
    g_assert_cmphex(le32_to_cpu(q->flags), ==, le32_to_cpu(want->flags));
    g_assert_cmphex(le32_to_cpu(q->key), ==, le32_to_cpu(want->key));
    g_assert_cmpuint(le32_to_cpu(q->pd), ==, le32_to_cpu(want->pd));
    g_assert_cmpuint(q->log_page_size, ==, want->log_page_size);
    g_assert_cmphex(le64_to_cpu(q->start), ==, le64_to_cpu(want->start));
    g_assert_cmphex(le64_to_cpu(q->length), ==, le64_to_cpu(want->length));
    g_assert_cmpuint(le32_to_cpu(q->mtt_base), ==,
                     le32_to_cpu(want->mtt_base));
    g_assert_cmpuint(q->reserved0, ==, 0);
    g_assert(buffer_is_zero(q->reserved1, sizeof(q->reserved1)));
}

static void assert_mpt_sw(ChppDev *d, uint32_t idx)
{
    struct chpp_mpt_context q;

    g_assert_cmphex(chpp_query_mpt(d, idx, &q), ==, CHPP_STAT_OK);
    g_assert_cmpuint(q.state, ==, CHPP_RES_SW);
    g_assert(buffer_is_zero(&q, sizeof(q)));
}

/* True if SW2HW_CQ accepts a 128-entry (one 4 KiB page) ring at @mtt. */
static bool mtt_usable(ChppDev *d, uint32_t mtt)
{
    struct chpp_cq_context cq = {
        .mtt_base = cpu_to_le32(mtt),
        .log_page_size = 12,
        .num_entries = cpu_to_le32(128),
    };
    uint8_t status = chpp_sw2hw_cq(d, 0, &cq);

    if (status == CHPP_STAT_OK) {
        g_assert_cmphex(chpp_cmd(d, CHPP_CMD_HW2SW_CQ, 0, 0, 0), ==,
                        CHPP_STAT_OK);
        return true;
    }
    g_assert_cmphex(status, ==, CHPP_STAT_BAD_PARAM);
    return false;
}

static void test_mpt_create_query_destroy(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    uint64_t buf;
    struct chpp_mpt_context want, q;
    uint32_t key, flags = CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ |
                          CHPP_MPT_REMOTE_WRITE | CHPP_MPT_REMOTE_ATOMIC;

    chpp_init_hca(d);
    buf = guest_alloc(&d->qs->alloc, 4 * 4096);
    d->next_mtt = 100;
    /* Start 0x10 into a page, 0x2000 long: three pages, MTT 100..102. */
    key = chpp_create_mr(d, 3, 7, buf + 0x10, 0x2000, flags);
    g_assert_cmphex(key, ==, 3 << 8 | 0x5d);
    g_assert_cmpuint(d->next_mtt, ==, 103);
    want = mpt_ctx(3, 0x5d, flags, 7, buf + 0x10, 0x2000, 100);
    g_assert_cmphex(chpp_query_mpt(d, 3, &q), ==, CHPP_STAT_OK);
    assert_mpt_eq(&q, &want);
    /* Neighbours untouched. */
    assert_mpt_sw(d, 2);
    assert_mpt_sw(d, 4);

    /* A second SW2HW on the same index is refused; the entry is kept. */
    mpt_fails(d, CHPP_STAT_BAD_RES_STATE, 3, &want);
    g_assert_cmphex(chpp_query_mpt(d, 3, &q), ==, CHPP_STAT_OK);
    assert_mpt_eq(&q, &want);

    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_HW2SW_MPT, 0, 3, 0), ==,
                    CHPP_STAT_OK);
    assert_mpt_sw(d, 3);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_RES_STATE, CHPP_CMD_HW2SW_MPT, 0,
                          3, 0);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_HW2SW_MPT, 0,
                          NUM_MPTS, 0);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_QUERY_MPT, 0,
                          NUM_MPTS, d->mbox_out);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_MAILBOX, CHPP_CMD_QUERY_MPT, 0,
                          3, d->mbox_out + 8);

    /* Re-created with another tag, PD and rights. */
    want = mpt_ctx(3, 0x11, CHPP_MPT_REMOTE_READ, 0, buf, 1, 100);
    g_assert_cmphex(chpp_sw2hw_mpt(d, 3, &want), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_query_mpt(d, 3, &q), ==, CHPP_STAT_OK);
    assert_mpt_eq(&q, &want);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_CMD_ERRORS), ==, 5);
    chpp_stop(d);
}

static void test_mpt_phys(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    struct chpp_mpt_context c, q, want;

    chpp_init_hca(d);
    /* PHYS ignores log_page_size and mtt_base; they read back as 0. */
    c = mpt_ctx(9, 0xff, CHPP_MPT_PHYS | CHPP_MPT_LOCAL_WRITE, 15,
                0x123456789, 0x10000, 0xffffffff);
    c.log_page_size = 0;
    g_assert_cmphex(chpp_sw2hw_mpt(d, 9, &c), ==, CHPP_STAT_OK);
    want = c;
    want.mtt_base = 0;
    g_assert_cmphex(chpp_query_mpt(d, 9, &q), ==, CHPP_STAT_OK);
    assert_mpt_eq(&q, &want);

    /* Still subject to the other checks. */
    c = mpt_ctx(10, 0, CHPP_MPT_PHYS, 0, 0x1000, 0, 0);
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 10, &c);
    c = mpt_ctx(10, 0, CHPP_MPT_PHYS | CHPP_MPT_REMOTE_WRITE, 0, 0x1000, 1,
                0);
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 10, &c);
    c = mpt_ctx(10, 0, CHPP_MPT_PHYS, 0, ~0ull, 1, 0);
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 10, &c);
    /* A region may end just below 2^64 (start + length must not wrap). */
    c = mpt_ctx(10, 0, CHPP_MPT_PHYS, 0, ~0ull - 1, 1, 0);
    g_assert_cmphex(chpp_sw2hw_mpt(d, 10, &c), ==, CHPP_STAT_OK);
    chpp_stop(d);
}

static void test_mpt_bad_params(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    struct chpp_mpt_context good = mpt_ctx(5, 0x42, CHPP_MPT_LOCAL_WRITE, 1,
                                           0x100000, 0x3000, 0);
    struct chpp_mpt_context c;
    uint32_t errs;

    /* Before INIT_HCA. */
    qtest_memwrite(d->qts, d->mbox_in, &good, sizeof(good));
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_SYS_STATE, CHPP_CMD_SW2HW_MPT,
                          d->mbox_in, 5, 0);
    chpp_init_hca(d);

    /* Index, then state, then mailbox. */
    mpt_fails(d, CHPP_STAT_BAD_INDEX, NUM_MPTS, &good);
    mpt_fails(d, CHPP_STAT_BAD_INDEX, 0xffffffff, &good);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_SW2HW_MPT,
                          d->mbox_in + 4, NUM_MPTS, 0);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_MAILBOX, CHPP_CMD_SW2HW_MPT,
                          d->mbox_in + 4, 5, 0);
    chpp_assert_cmd_fails(d, CHPP_STAT_DMA_ERR, CHPP_CMD_SW2HW_MPT,
                          0x7ff000000000ull, 5, 0);

    /* Key must name the index. */
    c = good;
    c.key = cpu_to_le32(6 << 8 | 0x42);
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);
    c.key = cpu_to_le32(0x42);
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);

    /* Flags: unknown bits; remote write/atomic need local write. */
    c = good;
    c.flags = cpu_to_le32(CHPP_MPT_LOCAL_WRITE | (1u << 4));
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);
    c.flags = cpu_to_le32(CHPP_MPT_LOCAL_WRITE | (1u << 31));
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);
    c.flags = cpu_to_le32(CHPP_MPT_REMOTE_WRITE);
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);
    c.flags = cpu_to_le32(CHPP_MPT_REMOTE_ATOMIC | CHPP_MPT_REMOTE_READ);
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);

    /* PD range. */
    c = good;
    c.pd = cpu_to_le32(NUM_PDS);
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);

    /* Empty region, region wrapping the address space. */
    c = good;
    c.length = 0;
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);
    c.start = cpu_to_le64(0xfffffffffffff000ull);
    c.length = cpu_to_le64(0x1000);
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);
    c.length = cpu_to_le64(~0ull);
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);

    /* Page size. */
    c = good;
    c.log_page_size = CHPP_MIN_PAGE_SHIFT - 1;
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);
    c.log_page_size = CHPP_MAX_PAGE_SHIFT + 1;
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);
    c.log_page_size = 0;
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);

    /*
     * MTT range.  0x1ff0 + 0x20 touches two 4 KiB pages, so it needs two
     * entries from mtt_base; the last entry index is num-mtts - 1.
     */
    c = good;
    c.start = cpu_to_le64(0x1ff0);
    c.length = cpu_to_le64(0x20);
    c.mtt_base = cpu_to_le32(NUM_MTTS - 1);
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);
    c.mtt_base = cpu_to_le32(0xffffffff);
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);
    c.mtt_base = cpu_to_le32(NUM_MTTS);
    c.length = cpu_to_le64(1);
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);
    /* 1 GiB pages: 2 GiB from 0x40000000 + 1 spans 3 pages. */
    c = good;
    c.log_page_size = 30;
    c.start = cpu_to_le64(0x40000001);
    c.length = cpu_to_le64(0x80000000);
    c.mtt_base = cpu_to_le32(NUM_MTTS - 2);
    mpt_fails(d, CHPP_STAT_BAD_PARAM, 5, &c);

    /* Nothing above changed anything: the boundary cases now succeed. */
    errs = chpp_counter(d, CHPP_CNT_GUEST_ERRORS);
    c.mtt_base = cpu_to_le32(NUM_MTTS - 3);
    g_assert_cmphex(chpp_sw2hw_mpt(d, 5, &c), ==, CHPP_STAT_OK);
    c = good;
    c.start = cpu_to_le64(0x1ff0);
    c.length = cpu_to_le64(0x20);
    c.mtt_base = cpu_to_le32(NUM_MTTS - 2);
    c.key = cpu_to_le32(6 << 8);
    c.pd = cpu_to_le32(NUM_PDS - 1);
    c.flags = cpu_to_le32(CHPP_MPT_FLAGS_MASK &
                          ~(CHPP_MPT_PHYS | CHPP_MPT_FAST_REG));
    c.log_page_size = CHPP_MIN_PAGE_SHIFT;
    g_assert_cmphex(chpp_sw2hw_mpt(d, 6, &c), ==, CHPP_STAT_OK);
    /* Remote read alone needs no local write. */
    c = mpt_ctx(7, 1, CHPP_MPT_REMOTE_READ, 0, 0, 1, 0);
    g_assert_cmphex(chpp_sw2hw_mpt(d, 7, &c), ==, CHPP_STAT_OK);
    /* Region ending at the last byte of the address space. */
    c = mpt_ctx(8, 1, 0, 0, 0xfffffffffffff000ull, 0xfff, NUM_MTTS - 1);
    g_assert_cmphex(chpp_sw2hw_mpt(d, 8, &c), ==, CHPP_STAT_OK);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, errs);
    chpp_stop(d);
}

static void test_write_mtt(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    g_autofree uint64_t *e = g_new0(uint64_t, CHPP_MTT_PER_MAILBOX + 1);
    uint64_t page = guest_alloc(&d->qs->alloc, 4096);
    uint64_t bad = page | CHPP_MTT_VALID | 0x2;
    uint32_t i;

    chpp_init_hca(d);
    g_assert_false(mtt_usable(d, 10));
    e[0] = page | CHPP_MTT_VALID;
    g_assert_cmphex(chpp_write_mtt_status(d, 10, e, 1), ==, CHPP_STAT_OK);
    g_assert(mtt_usable(d, 10));
    g_assert_false(mtt_usable(d, 11));
    /* The highest entry. */
    g_assert_cmphex(chpp_write_mtt_status(d, NUM_MTTS - 1, e, 1), ==,
                    CHPP_STAT_OK);
    g_assert(mtt_usable(d, NUM_MTTS - 1));

    /* Count: 1..CHPP_MTT_PER_MAILBOX. */
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_PARAM, CHPP_CMD_WRITE_MTT,
                          d->mbox_in, 0, 0);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_PARAM, CHPP_CMD_WRITE_MTT,
                          d->mbox_in, CHPP_MTT_PER_MAILBOX + 1, 0);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_PARAM, CHPP_CMD_WRITE_MTT,
                          d->mbox_in, 0xffffffff, 0);
    /* Count is checked before the mailbox. */
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_PARAM, CHPP_CMD_WRITE_MTT,
                          d->mbox_in + 8, 0, 0);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_MAILBOX, CHPP_CMD_WRITE_MTT,
                          d->mbox_in + 8, 1, 0);

    /* Index range, including 64-bit overflow of first_index + count. */
    for (i = 0; i < 2; i++) {
        e[i] = page | CHPP_MTT_VALID;
    }
    g_assert_cmphex(chpp_write_mtt_status(d, NUM_MTTS - 1, e, 2), ==,
                    CHPP_STAT_BAD_INDEX);
    g_assert_cmphex(chpp_write_mtt_status(d, NUM_MTTS, e, 1), ==,
                    CHPP_STAT_BAD_INDEX);
    g_assert_cmphex(chpp_write_mtt_status(d, ~0ull, e, 2), ==,
                    CHPP_STAT_BAD_INDEX);
    g_assert_cmphex(chpp_write_mtt_status(d, 1ull << 32, e, 1), ==,
                    CHPP_STAT_BAD_INDEX);

    /* Reserved bits 11:1; all or nothing: entry 20 stays unwritten. */
    e[0] = page | CHPP_MTT_VALID;
    e[1] = bad;
    g_assert_cmphex(chpp_write_mtt_status(d, 20, e, 2), ==,
                    CHPP_STAT_BAD_PARAM);
    g_assert_false(mtt_usable(d, 20));
    e[1] = page | CHPP_MTT_VALID | 0x800;
    g_assert_cmphex(chpp_write_mtt_status(d, 20, e, 2), ==,
                    CHPP_STAT_BAD_PARAM);
    g_assert_false(mtt_usable(d, 20));
    /* An invalid (not VALID) entry may be written: it unmaps the page. */
    g_assert_cmphex(chpp_write_mtt_status(d, 10, (uint64_t[]){ 0 }, 1), ==,
                    CHPP_STAT_OK);
    g_assert_false(mtt_usable(d, 10));

    /* Only count entries are read: garbage behind them is ignored. */
    e[0] = page | CHPP_MTT_VALID;
    for (i = 1; i <= CHPP_MTT_PER_MAILBOX; i++) {
        e[i] = bad;
    }
    qtest_memset(d->qts, d->mbox_in, 0, CHPP_MAILBOX_SIZE);
    g_assert_cmphex(chpp_write_mtt_status(d, 20, e, CHPP_MTT_PER_MAILBOX),
                    ==, CHPP_STAT_BAD_PARAM);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_WRITE_MTT, d->mbox_in, 1, 0), ==,
                    CHPP_STAT_OK);
    g_assert(mtt_usable(d, 20));

    /* A full mailbox: entries 1000..1509, checked at both ends. */
    for (i = 0; i < CHPP_MTT_PER_MAILBOX; i++) {
        e[i] = page | CHPP_MTT_VALID;
    }
    g_assert_cmphex(chpp_write_mtt_status(d, 1000, e, CHPP_MTT_PER_MAILBOX),
                    ==, CHPP_STAT_OK);
    g_assert(mtt_usable(d, 1000));
    g_assert(mtt_usable(d, 1000 + CHPP_MTT_PER_MAILBOX - 1));
    g_assert_false(mtt_usable(d, 1000 + CHPP_MTT_PER_MAILBOX));
    g_assert_false(mtt_usable(d, 999));
    chpp_stop(d);
}

static void test_mpt_many(void)
{
    ChppDev *d = chpp_start("num-mpts=300,num-pds=300", NULL);
    uint64_t buf;
    struct chpp_mpt_context q;
    uint32_t i;

    chpp_init_hca(d);
    buf = guest_alloc(&d->qs->alloc, 300 * 4096);
    for (i = 0; i < 300; i++) {
        uint32_t key = chpp_create_mr(d, i, i, buf + i * 4096 + i, 4096 - i,
                                      i & 1 ? CHPP_MPT_REMOTE_READ :
                                      CHPP_MPT_LOCAL_WRITE);

        g_assert_cmphex(key, ==, i << 8 | ((0x5a + i) & 0xff));
    }
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_SW2HW_MPT,
                          d->mbox_in, 300, 0);
    for (i = 0; i < 300; i += 2) {
        g_assert_cmphex(chpp_cmd(d, CHPP_CMD_HW2SW_MPT, 0, i, 0), ==,
                        CHPP_STAT_OK);
    }
    for (i = 0; i < 300; i++) {
        g_assert_cmphex(chpp_query_mpt(d, i, &q), ==, CHPP_STAT_OK);
        if (!(i & 1)) {
            g_assert(buffer_is_zero(&q, sizeof(q)));
            continue;
        }
        g_assert_cmpuint(q.state, ==, CHPP_RES_HW);
        g_assert_cmphex(le32_to_cpu(q.key), ==, i << 8 | ((0x5a + i) & 0xff));
        g_assert_cmpuint(le32_to_cpu(q.pd), ==, i);
        g_assert_cmphex(le32_to_cpu(q.flags), ==, CHPP_MPT_REMOTE_READ);
        g_assert_cmphex(le64_to_cpu(q.start), ==, buf + i * 4096 + i);
        g_assert_cmphex(le64_to_cpu(q.length), ==, 4096 - i);
        g_assert_cmpuint(le32_to_cpu(q.mtt_base), ==, i);
    }
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_CMD_ERRORS), ==, 1);
    chpp_stop(d);
}

static void test_mr_reset(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    uint64_t buf;
    struct chpp_mpt_context c;

    chpp_init_hca(d);
    buf = guest_alloc(&d->qs->alloc, 4096);
    chpp_create_mr(d, 1, 1, buf, 4096, CHPP_MPT_LOCAL_WRITE);
    c = mpt_ctx(2, 0, CHPP_MPT_PHYS, 0, buf, 4096, 0);
    g_assert_cmphex(chpp_sw2hw_mpt(d, 2, &c), ==, CHPP_STAT_OK);
    g_assert(mtt_usable(d, 0));

    chpp_wr(d, CHPP_REG_RESET, CHPP_RESET_MAGIC);
    chpp_init_hca(d);
    assert_mpt_sw(d, 1);
    assert_mpt_sw(d, 2);
    /* The MTT is cleared too. */
    g_assert_false(mtt_usable(d, 0));
    /* And the entries can be created again. */
    d->next_mtt = 0;
    chpp_create_mr(d, 1, 1, buf, 4096, CHPP_MPT_LOCAL_WRITE);
    g_assert_cmphex(chpp_sw2hw_mpt(d, 2, &c), ==, CHPP_STAT_OK);
    chpp_stop(d);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    if (!qtest_has_machine("q35")) {
        g_test_message("q35 machine missing: this QEMU cannot run chpp-hca");
        return 1;
    }
    qtest_add_func("/chpp-hca/mr/create-query-destroy",
                   test_mpt_create_query_destroy);
    qtest_add_func("/chpp-hca/mr/phys", test_mpt_phys);
    qtest_add_func("/chpp-hca/mr/bad-params", test_mpt_bad_params);
    qtest_add_func("/chpp-hca/mr/write-mtt", test_write_mtt);
    qtest_add_func("/chpp-hca/mr/many", test_mpt_many);
    qtest_add_func("/chpp-hca/mr/reset", test_mr_reset);
    return g_test_run();
}
