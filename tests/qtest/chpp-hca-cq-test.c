/*
 * chpp-hca completion queue tests: SW2HW_CQ, QUERY_CQ, HW2SW_CQ,
 * RESIZE_CQ, the UAR CQ doorbell, and migration of CQs, MRs and the MTT.
 *
 * CQEs are only produced by the engine; what happens when CQEs arrive
 * (owner bits, arming, overrun) is tested with it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "chpp-hca-qtest.h"

#define NUM_CQS     8       /* default num-cqs */
#define NUM_EQS     4       /* default num-eqs */
#define NUM_UARS    16      /* default uar-pages */
#define NUM_MTTS    16384   /* default num-mtts */

static struct chpp_cq_context cq_ctx(uint32_t mtt, uint8_t log_ps,
                                     uint32_t nent, uint32_t eqn,
                                     uint16_t uar)
{
    return (struct chpp_cq_context) {
        .mtt_base = cpu_to_le32(mtt),
        .log_page_size = log_ps,
        .num_entries = cpu_to_le32(nent),
        .eqn = cpu_to_le32(eqn),
        .uar = cpu_to_le16(uar),
    };
}

/* SW2HW_CQ (@resize: RESIZE_CQ) of @ctx must fail with @status. */
static void cq_fails(ChppDev *d, uint8_t status, uint32_t cqn,
                     const struct chpp_cq_context *ctx, bool resize)
{
    qtest_memwrite(d->qts, d->mbox_in, ctx, sizeof(*ctx));
    chpp_assert_cmd_fails(d, status, resize ? CHPP_CMD_RESIZE_CQ :
                          CHPP_CMD_SW2HW_CQ, d->mbox_in, cqn, 0);
}

/* A zeroed ring of @bytes mapped with 4 KiB pages; returns its mtt_base. */
static uint32_t map_ring(ChppDev *d, uint64_t bytes, uint64_t *ring)
{
    *ring = guest_alloc(&d->qs->alloc, bytes);
    qtest_memset(d->qts, *ring, 0, bytes);
    return chpp_map_pages(d, *ring, bytes);
}

static void assert_cq(ChppDev *d, uint32_t cqn, uint8_t state, uint32_t mtt,
                      uint32_t nent, uint32_t eqn, uint16_t uar, uint8_t arm,
                      uint32_t pi, uint32_t ci)
{
    struct chpp_cq_context q;

    g_assert_cmphex(chpp_query_cq(d, cqn, &q), ==, CHPP_STAT_OK);
    g_assert_cmpuint(q.state, ==, state);
    g_assert_cmpuint(le32_to_cpu(q.mtt_base), ==, mtt);
    g_assert_cmpuint(q.log_page_size, ==, state == CHPP_RES_SW ? 0 : 12);
    g_assert_cmpuint(le32_to_cpu(q.num_entries), ==, nent);
    g_assert_cmpuint(le32_to_cpu(q.eqn), ==, eqn);
    g_assert_cmpuint(le16_to_cpu(q.uar), ==, uar);
    g_assert_cmpuint(q.arm, ==, arm);
    g_assert_cmpuint(le32_to_cpu(q.producer_index), ==, pi);
    g_assert_cmpuint(le32_to_cpu(q.consumer_index), ==, ci);
    g_assert_cmpuint(le32_to_cpu(q.dropped), ==, 0);
    g_assert_cmpuint(q.reserved0, ==, 0);
    g_assert_cmpuint(q.reserved1, ==, 0);
    g_assert(buffer_is_zero(q.reserved2, sizeof(q.reserved2)));
}

static void assert_cq_sw(ChppDev *d, uint32_t cqn)
{
    assert_cq(d, cqn, CHPP_RES_SW, 0, 0, 0, 0, 0, 0, 0);
}

static void test_cq_create_query_destroy(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    uint64_t ring;
    uint32_t mtt, i;
    struct chpp_cq_context c;

    chpp_init_hca(d);
    d->next_mtt = 40;
    /* 256 entries = 8 KiB = MTT 40, 41; EQ 3 need not exist. */
    ring = chpp_create_cq(d, 2, 256, 3, 9);
    g_assert_cmphex(ring & 0xfff, ==, 0);
    g_assert_cmpuint(d->next_mtt, ==, 42);
    assert_cq(d, 2, CHPP_RES_HW, 40, 256, 3, 9, 0, 0, 0);
    assert_cq_sw(d, 1);
    assert_cq_sw(d, 3);
    /* The device wrote nothing to the ring. */
    {
        g_autofree uint8_t *buf = g_malloc(8192);

        qtest_memread(d->qts, ring, buf, 8192);
        g_assert(buffer_is_zero(buf, 8192));
    }

    /* Already in hardware ownership: refused, CQ unchanged. */
    c = cq_ctx(40, 12, 4, 0, 0);
    cq_fails(d, CHPP_STAT_BAD_RES_STATE, 2, &c, false);
    assert_cq(d, 2, CHPP_RES_HW, 40, 256, 3, 9, 0, 0, 0);

    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_HW2SW_CQ, 0, 2, 0), ==,
                    CHPP_STAT_OK);
    assert_cq_sw(d, 2);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_RES_STATE, CHPP_CMD_HW2SW_CQ, 0,
                          2, 0);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_HW2SW_CQ, 0,
                          NUM_CQS, 0);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_QUERY_CQ, 0,
                          NUM_CQS, d->mbox_out);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_MAILBOX, CHPP_CMD_QUERY_CQ, 0,
                          2, d->mbox_out + 4);

    /* Same ring, other EQ and UAR; every CQ number. */
    mtt = 40;
    c = cq_ctx(mtt, 12, 256, NUM_EQS - 1, NUM_UARS - 1);
    g_assert_cmphex(chpp_sw2hw_cq(d, 2, &c), ==, CHPP_STAT_OK);
    assert_cq(d, 2, CHPP_RES_HW, 40, 256, NUM_EQS - 1, NUM_UARS - 1, 0, 0,
              0);
    c = cq_ctx(mtt, 12, 2, 0, 0);
    for (i = 0; i < NUM_CQS; i++) {
        if (i != 2) {
            g_assert_cmphex(chpp_sw2hw_cq(d, i, &c), ==, CHPP_STAT_OK);
        }
    }
    assert_cq(d, NUM_CQS - 1, CHPP_RES_HW, 40, 2, 0, 0, 0, 0, 0);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_CMD_ERRORS), ==, 5);
    chpp_stop(d);
}

static void test_cq_bad_params(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    uint64_t ring, page8k;
    uint32_t mtt, e8k;
    struct chpp_cq_context good, c;
    uint64_t e[4];
    uint32_t i, errs;

    chpp_init_hca(d);
    mtt = map_ring(d, 4096, &ring);     /* 128 entries fit */
    good = cq_ctx(mtt, 12, 128, 1, 1);

    /* Index, state, mailbox. */
    cq_fails(d, CHPP_STAT_BAD_INDEX, NUM_CQS, &good, false);
    cq_fails(d, CHPP_STAT_BAD_INDEX, 0xffffffff, &good, false);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_SW2HW_CQ,
                          d->mbox_in + 8, NUM_CQS, 0);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_MAILBOX, CHPP_CMD_SW2HW_CQ,
                          d->mbox_in + 8, 0, 0);
    chpp_assert_cmd_fails(d, CHPP_STAT_DMA_ERR, CHPP_CMD_SW2HW_CQ,
                          0x7ff000000000ull, 0, 0);

    /* Size: power of two in 2..65536; checked before EQ, UAR and ring. */
    c = good;
    for (i = 0; i < 6; i++) {
        static const uint32_t bad[] = { 0, 1, 3, 100, 131072, 0x80000000 };

        c.num_entries = cpu_to_le32(bad[i]);
        cq_fails(d, CHPP_STAT_BAD_SIZE, 0, &c, false);
    }
    c.eqn = cpu_to_le32(NUM_EQS);
    cq_fails(d, CHPP_STAT_BAD_SIZE, 0, &c, false);

    /* EQ and UAR ranges. */
    c = good;
    c.eqn = cpu_to_le32(NUM_EQS);
    cq_fails(d, CHPP_STAT_BAD_PARAM, 0, &c, false);
    c.eqn = cpu_to_le32(0xff);
    cq_fails(d, CHPP_STAT_BAD_PARAM, 0, &c, false);
    c = good;
    c.uar = cpu_to_le16(NUM_UARS);
    cq_fails(d, CHPP_STAT_BAD_PARAM, 0, &c, false);
    c.uar = cpu_to_le16(0xffff);
    cq_fails(d, CHPP_STAT_BAD_PARAM, 0, &c, false);

    /* Ring: page size; 256 entries need a second MTT entry (not valid). */
    c = good;
    c.log_page_size = 11;
    cq_fails(d, CHPP_STAT_BAD_PARAM, 0, &c, false);
    c.log_page_size = 31;
    cq_fails(d, CHPP_STAT_BAD_PARAM, 0, &c, false);
    c = good;
    c.num_entries = cpu_to_le32(256);
    cq_fails(d, CHPP_STAT_BAD_PARAM, 0, &c, false);
    c = good;
    c.mtt_base = cpu_to_le32(NUM_MTTS);
    cq_fails(d, CHPP_STAT_BAD_PARAM, 0, &c, false);
    c.mtt_base = cpu_to_le32(0xffffffff);
    cq_fails(d, CHPP_STAT_BAD_PARAM, 0, &c, false);
    for (i = 0; i < NUM_CQS; i++) {
        assert_cq_sw(d, i);
    }

    /* The limits themselves are accepted. */
    errs = chpp_counter(d, CHPP_CNT_GUEST_ERRORS);
    c = good;
    c.num_entries = cpu_to_le32(2);
    c.eqn = cpu_to_le32(NUM_EQS - 1);
    c.uar = cpu_to_le16(NUM_UARS - 1);
    g_assert_cmphex(chpp_sw2hw_cq(d, 0, &c), ==, CHPP_STAT_OK);
    /* 65536 entries = 2 MiB = 512 pages: map one page 512 times. */
    {
        g_autofree uint64_t *many = g_new(uint64_t, 512);

        for (i = 0; i < 512; i++) {
            many[i] = ring | CHPP_MTT_VALID;
        }
        chpp_write_mtt(d, NUM_MTTS - 512, many, 512);
    }
    c = cq_ctx(NUM_MTTS - 512, 12, CHPP_MAX_CQ_ENTRIES, 0, 0);
    g_assert_cmphex(chpp_sw2hw_cq(d, 1, &c), ==, CHPP_STAT_OK);
    c = cq_ctx(NUM_MTTS - 511, 12, CHPP_MAX_CQ_ENTRIES, 0, 0);
    cq_fails(d, CHPP_STAT_BAD_PARAM, 2, &c, false);
    errs++;
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, errs);

    /* 8 KiB pages: every entry must be 8 KiB aligned. */
    page8k = guest_alloc(&d->qs->alloc, 5 * 8192);
    page8k = (page8k + 8191) & ~8191ull;
    e[0] = page8k | CHPP_MTT_VALID;
    e[1] = (page8k + 0x3000) | CHPP_MTT_VALID;     /* 4 KiB aligned only */
    e[2] = (page8k + 0x4000) | CHPP_MTT_VALID;
    e8k = d->next_mtt;
    chpp_write_mtt(d, e8k, e, 3);
    d->next_mtt += 3;
    c = cq_ctx(e8k, 13, 512, 0, 0);                /* 16 KiB: 2 pages */
    cq_fails(d, CHPP_STAT_BAD_PARAM, 2, &c, false);
    c = cq_ctx(e8k + 1, 13, 256, 0, 0);            /* 8 KiB: 1 page */
    cq_fails(d, CHPP_STAT_BAD_PARAM, 2, &c, false);
    c = cq_ctx(e8k + 2, 13, 256, 0, 0);
    g_assert_cmphex(chpp_sw2hw_cq(d, 2, &c), ==, CHPP_STAT_OK);
    chpp_stop(d);
}

/* Rings whose MTT entries are invalid are refused at creation. */
static void test_cq_ring_invalid_mtt(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    uint64_t ring;
    uint32_t mtt;
    struct chpp_cq_context c;
    uint64_t zero = 0;

    chpp_init_hca(d);
    mtt = map_ring(d, 4 * 4096, &ring);          /* 512 entries */
    c = cq_ctx(mtt, 12, 512, 0, 0);
    /* Entry 2 of 4 invalidated. */
    chpp_write_mtt(d, mtt + 2, &zero, 1);
    cq_fails(d, CHPP_STAT_BAD_PARAM, 0, &c, false);
    /* The first two pages are enough for 256 entries. */
    c.num_entries = cpu_to_le32(256);
    g_assert_cmphex(chpp_sw2hw_cq(d, 0, &c), ==, CHPP_STAT_OK);
    /* Never written entries are invalid too. */
    c = cq_ctx(NUM_MTTS - 1, 12, 2, 0, 0);
    cq_fails(d, CHPP_STAT_BAD_PARAM, 1, &c, false);
    assert_cq_sw(d, 1);
    chpp_stop(d);
}

static void test_cq_resize(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    uint64_t ring, ring2, ring3;
    uint32_t mtt, mtt2, mtt3;
    struct chpp_cq_context c, good;

    chpp_init_hca(d);
    mtt = map_ring(d, 4096, &ring);
    c = cq_ctx(mtt, 12, 4, 1, 2);
    g_assert_cmphex(chpp_sw2hw_cq(d, 3, &c), ==, CHPP_STAT_OK);
    chpp_cq_db(d, 2, 3, CHPP_CQ_DB_ARM_SOL, 0);
    assert_cq(d, 3, CHPP_RES_HW, mtt, 4, 1, 2, CHPP_CQ_DB_ARM_SOL, 0, 0);

    /* Grow to 256 entries (two pages); eqn and uar are ignored. */
    mtt2 = map_ring(d, 8192, &ring2);
    good = cq_ctx(mtt2, 12, 256, 3, 7);
    good.state = 0xff;
    good.producer_index = cpu_to_le32(5);
    good.consumer_index = cpu_to_le32(5);
    g_assert_cmphex(chpp_resize_cq(d, 3, &good), ==, CHPP_STAT_OK);
    assert_cq(d, 3, CHPP_RES_HW, mtt2, 256, 1, 2, CHPP_CQ_DB_ARM_SOL, 0, 0);

    /* Errors, in order; none changes the CQ. */
    cq_fails(d, CHPP_STAT_BAD_INDEX, NUM_CQS, &good, true);
    cq_fails(d, CHPP_STAT_BAD_RES_STATE, 4, &good, true);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_RES_STATE, CHPP_CMD_RESIZE_CQ,
                          d->mbox_in + 8, 4, 0);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_MAILBOX, CHPP_CMD_RESIZE_CQ,
                          d->mbox_in + 8, 3, 0);
    c = good;
    c.num_entries = cpu_to_le32(3);
    cq_fails(d, CHPP_STAT_BAD_SIZE, 3, &c, true);
    c.num_entries = cpu_to_le32(1);
    cq_fails(d, CHPP_STAT_BAD_SIZE, 3, &c, true);
    c.num_entries = cpu_to_le32(CHPP_MAX_CQ_ENTRIES * 2);
    cq_fails(d, CHPP_STAT_BAD_SIZE, 3, &c, true);
    c = good;
    c.log_page_size = 31;
    cq_fails(d, CHPP_STAT_BAD_PARAM, 3, &c, true);
    c = good;
    c.num_entries = cpu_to_le32(512);   /* third page not mapped */
    cq_fails(d, CHPP_STAT_BAD_PARAM, 3, &c, true);
    assert_cq(d, 3, CHPP_RES_HW, mtt2, 256, 1, 2, CHPP_CQ_DB_ARM_SOL, 0, 0);

    /* Shrink to the minimum on a third ring; the arm survives. */
    mtt3 = map_ring(d, 4096, &ring3);
    chpp_cq_db(d, 2, 3, CHPP_CQ_DB_ARM_NEXT, 0);
    c = cq_ctx(mtt3, 12, 2, 0, 0);
    g_assert_cmphex(chpp_resize_cq(d, 3, &c), ==, CHPP_STAT_OK);
    assert_cq(d, 3, CHPP_RES_HW, mtt3, 2, 1, 2, CHPP_CQ_DB_ARM_NEXT, 0, 0);
    /* Resizing never writes either ring. */
    g_assert_cmphex(qtest_readq(d->qts, ring2 + 24), ==, 0);
    g_assert_cmphex(qtest_readq(d->qts, ring3 + 24), ==, 0);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_DB_ERRORS), ==, 0);
    chpp_stop(d);
}

static void cq_db_raw(ChppDev *d, uint16_t uar, uint64_t val)
{
    qpci_io_writeq(d->pdev, d->bar2,
                   (uint64_t)uar * CHPP_UAR_PAGE_SIZE + CHPP_UAR_CQ_DB, val);
}

/* The event carries all 64 bits of the value (ABI 1.2: value_hi). */
static void assert_db_error(ChppDev *d, uint64_t eq_ring, uint32_t *slot,
                            uint32_t uar, uint64_t value)
{
    struct chpp_eqe eqe;

    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_DB_ERRORS), ==, *slot + 1);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, *slot + 1);
    chpp_read_eqe(d, eq_ring, *slot, &eqe);
    g_assert_cmpuint(eqe.type, ==, CHPP_EVENT_DOORBELL_ERROR);
    g_assert_cmpuint(eqe.subtype, ==, CHPP_DB_ERR_BAD_VALUE);
    g_assert_cmphex(le32_to_cpu(eqe.event.db_error.offset), ==,
                    CHPP_UAR_CQ_DB);
    g_assert_cmphex(le32_to_cpu(eqe.event.db_error.value), ==,
                    (uint32_t)value);
    g_assert_cmphex(le32_to_cpu(eqe.event.db_error.value_hi), ==,
                    value >> 32);
    g_assert_cmpuint(le32_to_cpu(eqe.event.db_error.uar), ==, uar);
    g_assert_cmphex(le32_to_cpu(eqe.owner), ==, CHPP_EQE_OWNER);
    (*slot)++;
}

static uint64_t db_val(uint32_t cqn, uint32_t cmd, uint32_t ci)
{
    return (uint64_t)ci << CHPP_CQ_DB_CI_SHIFT | cmd << CHPP_CQ_DB_CMD_SHIFT |
           cqn;
}

static void test_cq_doorbells(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    uint64_t eq_ring;
    uint32_t mtt, slot = 0;
    struct chpp_cq_context q;
    static const uint64_t bad_vals[] = {
        1ull << 28 | 1, 1ull << 31 | 1,         /* reserved 31:28 */
        1ull << 56 | 1, 1ull << 63 | 1,         /* reserved 63:56 */
    };
    unsigned i;

    chpp_init_hca(d);
    eq_ring = chpp_create_eq(d, 0, 32, 0, false);
    g_assert_cmphex(chpp_map_eq(d, 0, 1ull << CHPP_EVENT_DOORBELL_ERROR,
                                false), ==, CHPP_STAT_OK);
    mtt = chpp_map_pages(d, guest_alloc(&d->qs->alloc, 4096), 4096);
    g_assert_cmphex(chpp_sw2hw_cq(d, 1, &(struct chpp_cq_context) {
                        .mtt_base = cpu_to_le32(mtt), .log_page_size = 12,
                        .num_entries = cpu_to_le32(8),
                        .eqn = cpu_to_le32(2), .uar = cpu_to_le16(2) }),
                    ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_sw2hw_cq(d, 3, &(struct chpp_cq_context) {
                        .mtt_base = cpu_to_le32(mtt), .log_page_size = 12,
                        .num_entries = cpu_to_le32(8),
                        .eqn = cpu_to_le32(0), .uar = cpu_to_le16(5) }),
                    ==, CHPP_STAT_OK);

    /* Arming: ARM_SOL, then ARM_NEXT wins; SET_CI keeps the arm. */
    chpp_cq_db(d, 2, 1, CHPP_CQ_DB_ARM_SOL, 0);
    assert_cq(d, 1, CHPP_RES_HW, mtt, 8, 2, 2, CHPP_CQ_DB_ARM_SOL, 0, 0);
    chpp_cq_db(d, 2, 1, CHPP_CQ_DB_ARM_NEXT, 0);
    assert_cq(d, 1, CHPP_RES_HW, mtt, 8, 2, 2, CHPP_CQ_DB_ARM_NEXT, 0, 0);
    chpp_cq_db(d, 2, 1, CHPP_CQ_DB_ARM_SOL, 0);
    chpp_cq_db(d, 2, 1, CHPP_CQ_DB_SET_CI, 0);
    assert_cq(d, 1, CHPP_RES_HW, mtt, 8, 2, 2, CHPP_CQ_DB_ARM_NEXT, 0, 0);
    /* Each CQ has its own arm. */
    assert_cq(d, 3, CHPP_RES_HW, mtt, 8, 0, 5, 0, 0, 0);
    chpp_cq_db(d, 5, 3, CHPP_CQ_DB_ARM_SOL, 0);
    assert_cq(d, 3, CHPP_RES_HW, mtt, 8, 0, 5, CHPP_CQ_DB_ARM_SOL, 0, 0);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_DB_ERRORS), ==, 0);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, 0);

    /* Consumer index past the producer (the CQ is empty), or backwards. */
    cq_db_raw(d, 2, db_val(1, CHPP_CQ_DB_SET_CI, 1));
    assert_db_error(d, eq_ring, &slot, 2, db_val(1, CHPP_CQ_DB_SET_CI, 1));
    cq_db_raw(d, 2, db_val(1, CHPP_CQ_DB_ARM_NEXT, 0xffffff));
    assert_db_error(d, eq_ring, &slot, 2,
                    db_val(1, CHPP_CQ_DB_ARM_NEXT, 0xffffff));
    /* The right CQ through another process's UAR page. */
    cq_db_raw(d, 3, db_val(1, CHPP_CQ_DB_ARM_SOL, 0));
    assert_db_error(d, eq_ring, &slot, 3, db_val(1, CHPP_CQ_DB_ARM_SOL, 0));
    cq_db_raw(d, 2, db_val(3, CHPP_CQ_DB_SET_CI, 0));
    assert_db_error(d, eq_ring, &slot, 2, 3);
    /* CQ not in hardware ownership, CQ number out of range. */
    cq_db_raw(d, 2, db_val(4, CHPP_CQ_DB_ARM_NEXT, 0));
    assert_db_error(d, eq_ring, &slot, 2, db_val(4, CHPP_CQ_DB_ARM_NEXT, 0));
    cq_db_raw(d, 2, db_val(NUM_CQS, 0, 0));
    assert_db_error(d, eq_ring, &slot, 2, NUM_CQS);
    cq_db_raw(d, 2, db_val(0xffffff, 0, 0));
    assert_db_error(d, eq_ring, &slot, 2, 0xffffff);
    /* Unknown commands. */
    cq_db_raw(d, 2, db_val(1, 3, 0));
    assert_db_error(d, eq_ring, &slot, 2, db_val(1, 3, 0));
    cq_db_raw(d, 2, db_val(1, 15, 0));
    assert_db_error(d, eq_ring, &slot, 2, db_val(1, 15, 0));
    /* Reserved bits. */
    for (i = 0; i < ARRAY_SIZE(bad_vals); i++) {
        cq_db_raw(d, 2, bad_vals[i]);
        assert_db_error(d, eq_ring, &slot, 2, bad_vals[i]);
    }
    /* The CQ doorbell is 64 bits wide: a 32-bit write is refused. */
    qpci_io_writel(d->pdev, d->bar2, 2 * CHPP_UAR_PAGE_SIZE + CHPP_UAR_CQ_DB,
                   db_val(1, CHPP_CQ_DB_SET_CI, 0));
    assert_db_error(d, eq_ring, &slot, 2, 1);
    g_assert_cmpuint(slot, ==, 14);

    /* None of them changed a CQ. */
    assert_cq(d, 1, CHPP_RES_HW, mtt, 8, 2, 2, CHPP_CQ_DB_ARM_NEXT, 0, 0);
    assert_cq(d, 3, CHPP_RES_HW, mtt, 8, 0, 5, CHPP_CQ_DB_ARM_SOL, 0, 0);

    /* With no EQ mapped for it the error event is dropped, still counted. */
    g_assert_cmphex(chpp_map_eq(d, 0, 1ull << CHPP_EVENT_DOORBELL_ERROR,
                                true), ==, CHPP_STAT_OK);
    cq_db_raw(d, 2, db_val(1, CHPP_CQ_DB_SET_CI, 2));
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_DB_ERRORS), ==, 15);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, 15);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS_DROPPED), ==, 1);
    g_assert_cmphex(chpp_query_cq(d, 1, &q), ==, CHPP_STAT_OK);
    g_assert_cmpuint(le32_to_cpu(q.consumer_index), ==, 0);
    chpp_stop(d);
}

static void test_cq_reset(void)
{
    ChppDev *d = chpp_start(NULL, NULL);

    chpp_init_hca(d);
    chpp_create_cq(d, 0, 16, 0, 0);
    chpp_create_cq(d, NUM_CQS - 1, 16, 1, 1);
    chpp_cq_db(d, 1, NUM_CQS - 1, CHPP_CQ_DB_ARM_NEXT, 0);
    chpp_wr(d, CHPP_REG_RESET, CHPP_RESET_MAGIC);
    chpp_init_hca(d);
    assert_cq_sw(d, 0);
    assert_cq_sw(d, NUM_CQS - 1);
    /* The doorbell of a CQ gone with the reset is an error. */
    chpp_cq_db(d, 1, NUM_CQS - 1, CHPP_CQ_DB_ARM_NEXT, 0);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_DB_ERRORS), ==, 1);
    chpp_stop(d);
}

static void test_migration(void)
{
    g_autofree char *tmpdir = g_dir_make_tmp("chpp-hca-cq-test-XXXXXX", NULL);
    g_autofree char *uri = g_strdup_printf("unix:%s/migsock", tmpdir);
    g_autofree char *sock = g_strdup_printf("%s/migsock", tmpdir);
    const char *props = "num-cqs=12,num-mpts=40,num-mtts=4096,uar-pages=8";
    ChppDev *src = chpp_start(props, NULL);
    ChppDev *dst;
    struct chpp_mpt_context mpt_src[2], mpt_dst;
    struct chpp_cq_context cq_src[2], cq_dst, c;
    struct chpp_mpt_context phys = {
        .flags = cpu_to_le32(CHPP_MPT_PHYS | CHPP_MPT_REMOTE_READ),
        .key = cpu_to_le32(33 << 8 | 0xee),
        .pd = cpu_to_le32(2),
        .start = cpu_to_le64(0x10000000),
        .length = cpu_to_le64(0x123),
    };
    uint64_t buf, ring;
    uint32_t spare_mtt, errs;

    g_assert(tmpdir);
    chpp_init_hca(src);
    buf = guest_alloc(&src->qs->alloc, 3 * 4096);
    src->next_mtt = 100;    /* every migrated field non-zero */
    chpp_create_mr(src, 4, 3, buf + 0x20, 0x1800, CHPP_MPT_LOCAL_WRITE |
                   CHPP_MPT_REMOTE_WRITE);
    g_assert_cmphex(chpp_sw2hw_mpt(src, 33, &phys), ==, CHPP_STAT_OK);
    chpp_create_cq(src, 11, 64, 3, 7);
    chpp_cq_db(src, 7, 11, CHPP_CQ_DB_ARM_SOL, 0);
    chpp_create_cq(src, 6, 2, 1, 0);
    spare_mtt = map_ring(src, 8192, &ring);
    c = cq_ctx(spare_mtt, 12, 256, 0, 0);
    g_assert_cmphex(chpp_resize_cq(src, 6, &c), ==, CHPP_STAT_OK);
    /* MTT entries not yet used by anything. */
    spare_mtt = map_ring(src, 4 * 4096, &ring);
    chpp_cq_db(src, 1, 11, 0, 0);   /* wrong UAR: one doorbell error */

    g_assert_cmphex(chpp_query_mpt(src, 4, &mpt_src[0]), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_query_mpt(src, 33, &mpt_src[1]), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_query_cq(src, 11, &cq_src[0]), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_query_cq(src, 6, &cq_src[1]), ==, CHPP_STAT_OK);
    g_assert_cmpuint(cq_src[0].arm, ==, CHPP_CQ_DB_ARM_SOL);
    g_assert_cmpuint(le32_to_cpu(cq_src[1].num_entries), ==, 256);
    g_assert_cmpuint(mpt_src[0].state, ==, CHPP_RES_HW);
    g_assert_cmpuint(le32_to_cpu(mpt_src[0].mtt_base), ==, 100);
    errs = chpp_counter(src, CHPP_CNT_DB_ERRORS);
    g_assert_cmpuint(errs, ==, 1);

    dst = chpp_start_incoming(props, uri);
    migrate(src->qs, dst->qs, uri);
    chpp_adopt_migrated(dst, src);

    g_assert_cmphex(chpp_query_mpt(dst, 4, &mpt_dst), ==, CHPP_STAT_OK);
    g_assert_cmpmem(&mpt_dst, sizeof(mpt_dst), &mpt_src[0],
                    sizeof(mpt_src[0]));
    g_assert_cmphex(chpp_query_mpt(dst, 33, &mpt_dst), ==, CHPP_STAT_OK);
    g_assert_cmpmem(&mpt_dst, sizeof(mpt_dst), &mpt_src[1],
                    sizeof(mpt_src[1]));
    g_assert_cmphex(chpp_query_cq(dst, 11, &cq_dst), ==, CHPP_STAT_OK);
    g_assert_cmpmem(&cq_dst, sizeof(cq_dst), &cq_src[0], sizeof(cq_src[0]));
    g_assert_cmphex(chpp_query_cq(dst, 6, &cq_dst), ==, CHPP_STAT_OK);
    g_assert_cmpmem(&cq_dst, sizeof(cq_dst), &cq_src[1], sizeof(cq_src[1]));
    g_assert_cmpuint(chpp_counter(dst, CHPP_CNT_DB_ERRORS), ==, errs);

    /* The MTT came along: a ring on the spare entries is accepted. */
    c = cq_ctx(spare_mtt, 12, 512, 2, 2);
    g_assert_cmphex(chpp_sw2hw_cq(dst, 0, &c), ==, CHPP_STAT_OK);
    c = cq_ctx(spare_mtt + 4, 12, 2, 2, 2);
    g_assert_cmphex(chpp_sw2hw_cq(dst, 1, &c), ==, CHPP_STAT_BAD_PARAM);
    /* The UAR binding too; doorbells and commands work on the copy. */
    chpp_cq_db(dst, 7, 11, CHPP_CQ_DB_ARM_NEXT, 0);
    chpp_cq_db(dst, 6, 11, CHPP_CQ_DB_ARM_SOL, 0);
    g_assert_cmpuint(chpp_counter(dst, CHPP_CNT_DB_ERRORS), ==, errs + 1);
    g_assert_cmphex(chpp_query_cq(dst, 11, &cq_dst), ==, CHPP_STAT_OK);
    g_assert_cmpuint(cq_dst.arm, ==, CHPP_CQ_DB_ARM_NEXT);
    g_assert_cmphex(chpp_cmd(dst, CHPP_CMD_HW2SW_CQ, 0, 11, 0), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_cmd(dst, CHPP_CMD_HW2SW_MPT, 0, 4, 0), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_cmd(dst, CHPP_CMD_HW2SW_MPT, 0, 4, 0), ==,
                    CHPP_STAT_BAD_RES_STATE);

    chpp_stop(src);
    chpp_stop(dst);
    unlink(sock);
    rmdir(tmpdir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    if (!qtest_has_machine("q35")) {
        g_test_message("q35 machine missing: this QEMU cannot run chpp-hca");
        return 1;
    }
    qtest_add_func("/chpp-hca/cq/create-query-destroy",
                   test_cq_create_query_destroy);
    qtest_add_func("/chpp-hca/cq/bad-params", test_cq_bad_params);
    qtest_add_func("/chpp-hca/cq/ring-invalid-mtt", test_cq_ring_invalid_mtt);
    qtest_add_func("/chpp-hca/cq/resize", test_cq_resize);
    qtest_add_func("/chpp-hca/cq/doorbells", test_cq_doorbells);
    qtest_add_func("/chpp-hca/cq/reset", test_cq_reset);
    qtest_add_func("/chpp-hca/migration/cq-mr", test_migration);
    return g_test_run();
}
