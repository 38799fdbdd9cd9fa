/*
 * Helpers shared by the chpp-hca qtests.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "hw/pci/pci_regs.h"
#include "chpp-hca-qtest.h"
#include "hw/chpp/chpp-wire.h"

/* Upper bound on clock steps while waiting: a hung device fails the test. */
#define CHPP_WAIT_STEPS     10000
#define CHPP_WAIT_STEP_NS   100000

#define CHPP_MSI_DATA(v)    (0xc0de0000u | (v))

/*
 * CHPP_QTEST_PROPS: device properties every test's chpp-hca gets besides
 * its own, e.g. "timing=on" (the suite runs the data path tests in timing
 * mode too, docs/timing-model.md).  The test's own properties come last
 * and win.
 */
const char *chpp_env_props(void)
{
    const char *p = getenv("CHPP_QTEST_PROPS");

    return p && *p ? p : NULL;
}

bool chpp_timing_on(void)
{
    const char *p = chpp_env_props();

    return p && strstr(p, "timing=on");
}

static ChppDev *chpp_boot(const char *props, const char *extra)
{
    ChppDev *d = g_new0(ChppDev, 1);
    const char *env = chpp_env_props();

    d->qs = qtest_pc_boot("-machine q35 -nodefaults "
                          "-device chpp-hca,addr=04.0%s%s%s%s %s",
                          env ? "," : "", env ? env : "",
                          props && *props ? "," : "", props ? props : "",
                          extra ? extra : "");
    d->qts = d->qs->qts;
    d->pdev = qpci_device_find(d->qs->pcibus, CHPP_TEST_DEVFN);
    g_assert(d->pdev);
    d->toggle = true;
    return d;
}

ChppDev *chpp_start(const char *props, const char *extra)
{
    ChppDev *d = chpp_boot(props, extra);

    qpci_device_enable(d->pdev);
    /* MSI-X lives in BAR0: let the MSI-X helper map it, then share it. */
    qpci_msix_enable(d->pdev);
    d->bar0 = d->pdev->msix_table_bar;
    d->bar2 = qpci_iomap(d->pdev, CHPP_BAR_UAR, NULL);
    d->mbox_in = guest_alloc(&d->qs->alloc, CHPP_MAILBOX_SIZE);
    d->mbox_out = guest_alloc(&d->qs->alloc, CHPP_MAILBOX_SIZE);
    d->msi_page = guest_alloc(&d->qs->alloc, 4096);
    qtest_memset(d->qts, d->msi_page, 0, 4096);
    return d;
}

ChppDev *chpp_start_incoming(const char *props, const char *uri)
{
    return chpp_start_incoming_extra(props, NULL, uri);
}

ChppDev *chpp_start_incoming_extra(const char *props, const char *extra,
                                   const char *uri)
{
    g_autofree char *args = g_strdup_printf("%s -incoming %s",
                                            extra ? extra : "", uri);

    return chpp_boot(props, args);
}

/* After migration the BARs, mailboxes and MSI-X routes are the source's. */
void chpp_adopt_migrated(ChppDev *dst, const ChppDev *src)
{
    dst->pdev->msix_enabled = src->pdev->msix_enabled;
    dst->pdev->msix_table_bar = src->pdev->msix_table_bar;
    dst->pdev->msix_pba_bar = src->pdev->msix_pba_bar;
    dst->pdev->msix_table_off = src->pdev->msix_table_off;
    dst->pdev->msix_pba_off = src->pdev->msix_pba_off;
    dst->bar0 = src->bar0;
    dst->bar2 = src->bar2;
    dst->mbox_in = src->mbox_in;
    dst->mbox_out = src->mbox_out;
    dst->msi_page = src->msi_page;
    dst->toggle = src->toggle;
}

void chpp_stop(ChppDev *d)
{
    g_free(d->pdev);
    qtest_shutdown(d->qs);
    g_free(d);
}

uint32_t chpp_rd(ChppDev *d, uint32_t off)
{
    return qpci_io_readl(d->pdev, d->bar0, off);
}

void chpp_wr(ChppDev *d, uint32_t off, uint32_t val)
{
    qpci_io_writel(d->pdev, d->bar0, off, val);
}

uint32_t chpp_counter(ChppDev *d, enum chpp_counter c)
{
    return chpp_rd(d, CHPP_REG_CNT(c));
}

void chpp_cmd_post(ChppDev *d, uint16_t opcode, uint64_t in_param,
                   uint32_t in_mod, uint64_t out_param, bool event,
                   uint16_t token)
{
    uint32_t ctrl = CHPP_HCR_GO | opcode | (d->toggle ? CHPP_HCR_T : 0) |
                    (event ? CHPP_HCR_E : 0);

    chpp_wr(d, CHPP_REG_HCR + CHPP_HCR_IN_PARAM_H, in_param >> 32);
    chpp_wr(d, CHPP_REG_HCR + CHPP_HCR_IN_PARAM_L, in_param);
    chpp_wr(d, CHPP_REG_HCR + CHPP_HCR_IN_MODIFIER, in_mod);
    chpp_wr(d, CHPP_REG_HCR + CHPP_HCR_OUT_PARAM_H, out_param >> 32);
    chpp_wr(d, CHPP_REG_HCR + CHPP_HCR_OUT_PARAM_L, out_param);
    chpp_wr(d, CHPP_REG_HCR + CHPP_HCR_TOKEN,
            (uint32_t)token << CHPP_HCR_TOKEN_SHIFT);
    chpp_wr(d, CHPP_REG_HCR + CHPP_HCR_CTRL, ctrl);
    d->toggle = !d->toggle;
}

uint8_t chpp_cmd_wait(ChppDev *d, uint64_t *out_param)
{
    uint32_t ctrl;
    int i;

    for (i = 0; i < CHPP_WAIT_STEPS; i++) {
        ctrl = chpp_rd(d, CHPP_REG_HCR + CHPP_HCR_CTRL);
        if (!(ctrl & CHPP_HCR_GO)) {
            if (out_param) {
                *out_param =
                    (uint64_t)chpp_rd(d, CHPP_REG_HCR + CHPP_HCR_OUT_PARAM_H)
                    << 32 | chpp_rd(d, CHPP_REG_HCR + CHPP_HCR_OUT_PARAM_L);
            }
            return ctrl >> CHPP_HCR_STATUS_SHIFT;
        }
        qtest_clock_step(d->qts, CHPP_WAIT_STEP_NS);
    }
    g_assert_not_reached();
}

uint8_t chpp_cmd(ChppDev *d, uint16_t opcode, uint64_t in_param,
                 uint32_t in_mod, uint64_t out_param)
{
    chpp_cmd_post(d, opcode, in_param, in_mod, out_param, false, 0);
    return chpp_cmd_wait(d, NULL);
}

void chpp_init_hca(ChppDev *d)
{
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_INIT_HCA, 0, CHPP_ABI_VERSION_MAJOR,
                             0), ==, CHPP_STAT_OK);
}

uint64_t chpp_eq_alloc(ChppDev *d, uint32_t nent)
{
    size_t size = MAX((size_t)nent * CHPP_EQE_SIZE, 64);
    uint64_t ring = guest_alloc(&d->qs->alloc, size);

    qtest_memset(d->qts, ring, 0, size);
    return ring;
}

uint8_t chpp_sw2hw_eq(ChppDev *d, uint32_t eqn, uint64_t base, uint32_t nent,
                      uint16_t vector, uint8_t flags)
{
    struct chpp_eq_context ctx = {
        .base_addr = cpu_to_le64(base),
        .num_entries = cpu_to_le32(nent),
        .msix_vector = cpu_to_le16(vector),
        .flags = flags,
    };

    qtest_memwrite(d->qts, d->mbox_in, &ctx, sizeof(ctx));
    return chpp_cmd(d, CHPP_CMD_SW2HW_EQ, d->mbox_in, eqn, 0);
}

uint64_t chpp_create_eq(ChppDev *d, uint32_t eqn, uint32_t nent,
                        uint16_t vector, bool armed)
{
    uint64_t ring = chpp_eq_alloc(d, nent);

    g_assert_cmphex(chpp_sw2hw_eq(d, eqn, ring, nent, vector,
                                  armed ? CHPP_EQ_FLAG_ARMED : 0),
                    ==, CHPP_STAT_OK);
    return ring;
}

uint8_t chpp_map_eq(ChppDev *d, uint32_t eqn, uint64_t mask, bool unmap)
{
    return chpp_cmd(d, CHPP_CMD_MAP_EQ, mask,
                    eqn | (unmap ? CHPP_MAP_EQ_UNMAP : 0), 0);
}

uint8_t chpp_query_eq(ChppDev *d, uint32_t eqn, struct chpp_eq_context *ctx)
{
    uint8_t status;

    qtest_memset(d->qts, d->mbox_out, 0xa5, sizeof(*ctx));
    status = chpp_cmd(d, CHPP_CMD_QUERY_EQ, 0, eqn, d->mbox_out);
    qtest_memread(d->qts, d->mbox_out, ctx, sizeof(*ctx));
    return status;
}

void chpp_read_eqe(ChppDev *d, uint64_t ring, uint32_t slot,
                   struct chpp_eqe *eqe)
{
    qtest_memread(d->qts, ring + (uint64_t)slot * CHPP_EQE_SIZE, eqe,
                  sizeof(*eqe));
}

void chpp_eq_db(ChppDev *d, uint32_t eqn, uint32_t ci, bool arm)
{
    chpp_wr(d, CHPP_REG_EQ_DB(eqn), ci | (arm ? CHPP_EQ_DB_ARM : 0));
}

void chpp_write_mtt(ChppDev *d, uint32_t first, const uint64_t *entries,
                    uint32_t n)
{
    uint32_t done = 0;

    while (done < n) {
        uint32_t chunk = MIN(n - done, CHPP_MTT_PER_MAILBOX);
        uint64_t hdr[2] = { cpu_to_le64(first + done), 0 };
        g_autofree uint64_t *le = g_new(uint64_t, chunk);
        uint32_t i;

        for (i = 0; i < chunk; i++) {
            le[i] = cpu_to_le64(entries[done + i]);
        }
        qtest_memwrite(d->qts, d->mbox_in, hdr, sizeof(hdr));
        qtest_memwrite(d->qts, d->mbox_in + sizeof(hdr), le, chunk * 8);
        g_assert_cmphex(chpp_cmd(d, CHPP_CMD_WRITE_MTT, d->mbox_in, chunk, 0),
                        ==, CHPP_STAT_OK);
        done += chunk;
    }
}

uint32_t chpp_map_pages(ChppDev *d, uint64_t addr, uint64_t len)
{
    uint64_t first = addr & ~0xfffull;
    uint32_t n = (((addr + len + 0xfff) & ~0xfffull) - first) >> 12;
    g_autofree uint64_t *e = g_new(uint64_t, MAX(n, 1));
    uint32_t base = d->next_mtt, i;

    for (i = 0; i < n; i++) {
        e[i] = (first + ((uint64_t)i << 12)) | CHPP_MTT_VALID;
    }
    chpp_write_mtt(d, base, e, n);
    d->next_mtt += n;
    return base;
}

uint8_t chpp_sw2hw_mpt(ChppDev *d, uint32_t idx,
                       const struct chpp_mpt_context *ctx)
{
    qtest_memwrite(d->qts, d->mbox_in, ctx, sizeof(*ctx));
    return chpp_cmd(d, CHPP_CMD_SW2HW_MPT, d->mbox_in, idx, 0);
}

uint32_t chpp_create_mr(ChppDev *d, uint32_t idx, uint32_t pd, uint64_t addr,
                        uint64_t len, uint32_t flags)
{
    uint32_t key = idx << CHPP_KEY_INDEX_SHIFT | (0x5a + idx) % 256;
    struct chpp_mpt_context ctx = {
        .flags = cpu_to_le32(flags),
        .key = cpu_to_le32(key),
        .pd = cpu_to_le32(pd),
        .log_page_size = 12,
        .start = cpu_to_le64(addr),
        .length = cpu_to_le64(len),
        .mtt_base = cpu_to_le32(chpp_map_pages(d, addr, len)),
    };

    g_assert_cmphex(chpp_sw2hw_mpt(d, idx, &ctx), ==, CHPP_STAT_OK);
    return key;
}

uint8_t chpp_sw2hw_cq(ChppDev *d, uint32_t cqn,
                      const struct chpp_cq_context *ctx)
{
    qtest_memwrite(d->qts, d->mbox_in, ctx, sizeof(*ctx));
    return chpp_cmd(d, CHPP_CMD_SW2HW_CQ, d->mbox_in, cqn, 0);
}

uint64_t chpp_create_cq(ChppDev *d, uint32_t cqn, uint32_t nent, uint32_t eqn,
                        uint16_t uar)
{
    uint64_t size = MAX((uint64_t)nent * CHPP_CQE_SIZE, 4096);
    uint64_t ring = guest_alloc(&d->qs->alloc, size);
    struct chpp_cq_context ctx = {
        .log_page_size = 12,
        .num_entries = cpu_to_le32(nent),
        .eqn = cpu_to_le32(eqn),
        .uar = cpu_to_le16(uar),
    };

    qtest_memset(d->qts, ring, 0, size);
    ctx.mtt_base = cpu_to_le32(chpp_map_pages(d, ring, size));
    g_assert_cmphex(chpp_sw2hw_cq(d, cqn, &ctx), ==, CHPP_STAT_OK);
    return ring;
}

void chpp_read_cqe(ChppDev *d, uint64_t ring, uint32_t slot,
                   struct chpp_cqe *cqe)
{
    qtest_memread(d->qts, ring + (uint64_t)slot * CHPP_CQE_SIZE, cqe,
                  sizeof(*cqe));
}

void chpp_cq_db(ChppDev *d, uint16_t uar, uint32_t cqn, uint32_t cmd,
                uint32_t ci)
{
    qpci_io_writeq(d->pdev, d->bar2,
                   (uint64_t)uar * CHPP_UAR_PAGE_SIZE + CHPP_UAR_CQ_DB,
                   (uint64_t)(ci & CHPP_CQ_DB_CI_MASK) << CHPP_CQ_DB_CI_SHIFT |
                   cmd << CHPP_CQ_DB_CMD_SHIFT | cqn);
}

void chpp_sq_db(ChppDev *d, uint16_t uar, uint32_t qpn, uint32_t pi)
{
    qpci_io_writel(d->pdev, d->bar2,
                   (uint64_t)uar * CHPP_UAR_PAGE_SIZE + CHPP_UAR_SQ_DB,
                   qpn << CHPP_UAR_DB_QPN_SHIFT | (pi & CHPP_UAR_DB_PI_MASK));
}

void chpp_rq_db(ChppDev *d, uint16_t uar, uint32_t qpn, uint32_t pi)
{
    qpci_io_writel(d->pdev, d->bar2,
                   (uint64_t)uar * CHPP_UAR_PAGE_SIZE + CHPP_UAR_RQ_DB,
                   qpn << CHPP_UAR_DB_QPN_SHIFT | (pi & CHPP_UAR_DB_PI_MASK));
}

uint8_t chpp_modify_qp(ChppDev *d, uint16_t opcode, uint32_t qpn,
                       uint32_t mask, const struct chpp_qp_context *ctx)
{
    struct chpp_qp_modify m = {
        .attr_mask = cpu_to_le32(mask),
        .ctx = *ctx,
    };

    qtest_memwrite(d->qts, d->mbox_in, &m, sizeof(m));
    return chpp_cmd(d, opcode, d->mbox_in, qpn, 0);
}

uint8_t chpp_query_qp(ChppDev *d, uint32_t qpn, struct chpp_qp_context *ctx)
{
    uint8_t status;

    qtest_memset(d->qts, d->mbox_out, 0xa5, sizeof(*ctx));
    status = chpp_cmd(d, CHPP_CMD_QUERY_QP, 0, qpn, d->mbox_out);
    qtest_memread(d->qts, d->mbox_out, ctx, sizeof(*ctx));
    return status;
}

void chpp_msix_route(ChppDev *d, uint16_t vector)
{
    uint64_t entry = d->pdev->msix_table_off + vector * PCI_MSIX_ENTRY_SIZE;
    uint64_t addr = d->msi_page + vector * 4;

    qpci_io_writel(d->pdev, d->bar0, entry + PCI_MSIX_ENTRY_LOWER_ADDR,
                   addr);
    qpci_io_writel(d->pdev, d->bar0, entry + PCI_MSIX_ENTRY_UPPER_ADDR,
                   addr >> 32);
    qpci_io_writel(d->pdev, d->bar0, entry + PCI_MSIX_ENTRY_DATA,
                   CHPP_MSI_DATA(vector));
    chpp_msix_mask(d, vector, false);
}

void chpp_msix_mask(ChppDev *d, uint16_t vector, bool mask)
{
    uint64_t entry = d->pdev->msix_table_off + vector * PCI_MSIX_ENTRY_SIZE;

    qpci_io_writel(d->pdev, d->bar0, entry + PCI_MSIX_ENTRY_VECTOR_CTRL,
                   mask ? PCI_MSIX_ENTRY_CTRL_MASKBIT : 0);
}

bool chpp_msix_fired(ChppDev *d, uint16_t vector)
{
    uint64_t addr = d->msi_page + vector * 4;
    uint32_t data = qtest_readl(d->qts, addr);

    qtest_writel(d->qts, addr, 0);
    if (data) {
        g_assert_cmphex(data, ==, CHPP_MSI_DATA(vector));
    }
    return data != 0;
}

uint8_t chpp_query_mpt(ChppDev *d, uint32_t idx, struct chpp_mpt_context *ctx)
{
    uint8_t status;

    qtest_memset(d->qts, d->mbox_out, 0xa5, sizeof(*ctx));
    status = chpp_cmd(d, CHPP_CMD_QUERY_MPT, 0, idx, d->mbox_out);
    qtest_memread(d->qts, d->mbox_out, ctx, sizeof(*ctx));
    return status;
}

uint8_t chpp_write_mtt_status(ChppDev *d, uint64_t first,
                              const uint64_t *entries, uint32_t n)
{
    uint64_t hdr[2] = { cpu_to_le64(first), 0 };
    g_autofree uint64_t *le = g_new(uint64_t, MAX(n, 1));
    uint32_t i;

    g_assert_cmpuint(n, <=, CHPP_MTT_PER_MAILBOX);
    for (i = 0; i < n; i++) {
        le[i] = cpu_to_le64(entries[i]);
    }
    qtest_memwrite(d->qts, d->mbox_in, hdr, sizeof(hdr));
    if (n) {
        qtest_memwrite(d->qts, d->mbox_in + sizeof(hdr), le, n * 8);
    }
    return chpp_cmd(d, CHPP_CMD_WRITE_MTT, d->mbox_in, n, 0);
}

uint8_t chpp_query_cq(ChppDev *d, uint32_t cqn, struct chpp_cq_context *ctx)
{
    uint8_t status;

    qtest_memset(d->qts, d->mbox_out, 0xa5, sizeof(*ctx));
    status = chpp_cmd(d, CHPP_CMD_QUERY_CQ, 0, cqn, d->mbox_out);
    qtest_memread(d->qts, d->mbox_out, ctx, sizeof(*ctx));
    return status;
}

uint8_t chpp_resize_cq(ChppDev *d, uint32_t cqn,
                       const struct chpp_cq_context *ctx)
{
    qtest_memwrite(d->qts, d->mbox_in, ctx, sizeof(*ctx));
    return chpp_cmd(d, CHPP_CMD_RESIZE_CQ, d->mbox_in, cqn, 0);
}

void chpp_assert_cmd_fails(ChppDev *d, uint8_t status, uint16_t opcode,
                           uint64_t in, uint32_t mod, uint64_t out)
{
    uint32_t errs = chpp_counter(d, CHPP_CNT_GUEST_ERRORS);
    uint32_t cmd_errs = chpp_counter(d, CHPP_CNT_CMD_ERRORS);

    g_assert_cmphex(chpp_cmd(d, opcode, in, mod, out), ==, status);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, errs + 1);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_CMD_ERRORS), ==, cmd_errs + 1);
}

void chpp_qp_alloc_rings(ChppDev *d, struct chpp_qp_context *ctx,
                         uint64_t *sq, uint64_t *rq)
{
    uint64_t sq_size = 1ull << (ctx->log_sq_size + ctx->log_sq_stride);
    uint64_t rq_size = 1ull << (ctx->log_rq_size + ctx->log_rq_stride);
    uint64_t sq_ring = guest_alloc(&d->qs->alloc, MAX(sq_size, 4096));
    uint64_t rq_ring = guest_alloc(&d->qs->alloc, MAX(rq_size, 4096));

    qtest_memset(d->qts, sq_ring, 0, sq_size);
    qtest_memset(d->qts, rq_ring, 0, rq_size);
    ctx->sq_mtt_base = cpu_to_le32(chpp_map_pages(d, sq_ring, sq_size));
    ctx->rq_mtt_base = cpu_to_le32(chpp_map_pages(d, rq_ring, rq_size));
    ctx->sq_log_page_size = 12;
    ctx->rq_log_page_size = 12;
    if (sq) {
        *sq = sq_ring;
    }
    if (rq) {
        *rq = rq_ring;
    }
}

uint8_t chpp_hw2sw_cq(ChppDev *d, uint32_t cqn)
{
    return chpp_cmd(d, CHPP_CMD_HW2SW_CQ, 0, cqn, 0);
}

ChppWqeBuf *chpp_wqe_new(uint8_t opcode, uint8_t flags, uint64_t wr_id,
                         uint32_t imm)
{
    ChppWqeBuf *w = g_new0(ChppWqeBuf, 1);

    w->buf[0] = opcode;
    w->buf[1] = flags;
    stl_le_p(w->buf + 4, imm);
    stq_le_p(w->buf + 8, wr_id);
    w->pos = sizeof(struct chpp_wqe_ctrl);
    return w;
}

void chpp_wqe_raddr(ChppWqeBuf *w, uint64_t raddr, uint32_t rkey)
{
    stq_le_p(w->buf + w->pos, raddr);
    stl_le_p(w->buf + w->pos + 8, rkey);
    w->pos += sizeof(struct chpp_wqe_raddr);
}

void chpp_wqe_atomic(ChppWqeBuf *w, uint64_t swap_add, uint64_t compare)
{
    stq_le_p(w->buf + w->pos, swap_add);
    stq_le_p(w->buf + w->pos + 8, compare);
    w->pos += sizeof(struct chpp_wqe_atomic);
}

void chpp_wqe_ud(ChppWqeBuf *w, uint32_t node, uint32_t qpn, uint32_t qkey,
                 uint8_t magic)
{
    stl_le_p(w->buf + w->pos, node);
    stl_le_p(w->buf + w->pos + 4, qpn);
    stl_le_p(w->buf + w->pos + 8, qkey);
    w->buf[w->pos + 13] = magic;
    w->pos += sizeof(struct chpp_wqe_ud);
}

void chpp_wqe_sge(ChppWqeBuf *w, uint64_t addr, uint32_t len, uint32_t lkey)
{
    stl_le_p(w->buf + w->pos, len);
    stl_le_p(w->buf + w->pos + 4, lkey);
    stq_le_p(w->buf + w->pos + 8, addr);
    w->pos += sizeof(struct chpp_wqe_sge);
    w->buf[2]++;
}

void chpp_wqe_inline(ChppWqeBuf *w, const void *data, uint32_t len)
{
    stl_le_p(w->buf + w->pos, len);
    memcpy(w->buf + w->pos + sizeof(struct chpp_wqe_inline), data, len);
    w->pos += sizeof(struct chpp_wqe_inline) + ROUND_UP(len, 16);
}

/* Write @n WQEs of 2^@stride bytes from @buf at @pi of a 2^@log ring. */
static void chpp_ring_write(ChppDev *d, uint64_t ring, uint8_t log,
                            uint8_t stride, uint32_t pi, const uint8_t *buf,
                            uint32_t n)
{
    uint32_t nent = 1u << log;
    uint32_t slot = pi & (nent - 1);
    uint32_t first = MIN(n, nent - slot);

    qtest_bufwrite(d->qts, ring + ((uint64_t)slot << stride), buf,
                   first << stride);
    if (n > first) {
        qtest_bufwrite(d->qts, ring, buf + (first << stride),
                       (n - first) << stride);
    }
}

void chpp_post_sends(ChppDev *d, ChppTQp *q, ChppWqeBuf **w, uint32_t n,
                     bool ring)
{
    g_autofree uint8_t *buf = g_malloc((size_t)n << q->stride);
    uint32_t i;

    for (i = 0; i < n; i++) {
        memcpy(buf + ((size_t)i << q->stride), w[i]->buf, 1u << q->stride);
        g_free(w[i]);
    }
    chpp_ring_write(d, q->sq, q->log_sq, q->stride, q->sq_pi, buf, n);
    q->sq_pi = (q->sq_pi + n) & CHPP_UAR_DB_PI_MASK;
    if (ring) {
        chpp_sq_db(d, q->uar, q->qpn, q->sq_pi);
    }
}

void chpp_post_send(ChppDev *d, ChppTQp *q, ChppWqeBuf *w, bool ring)
{
    chpp_post_sends(d, q, &w, 1, ring);
}

/* @count receive WQEs at producer index @pi of a ring (RQ or SRQ). */
static void chpp_rwqes_write(ChppDev *d, uint64_t ring, uint8_t log,
                             uint8_t stride, uint32_t pi, uint64_t wr_id,
                             const ChppTSge *sge, uint32_t nsge,
                             uint32_t count)
{
    g_autofree uint8_t *buf = g_malloc0((size_t)count << stride);
    uint32_t i, j;

    for (j = 0; j < count; j++) {
        uint8_t *w = buf + ((size_t)j << stride);

        stq_le_p(w, wr_id + j);
        stl_le_p(w + 8, nsge);
        for (i = 0; i < nsge; i++) {
            uint8_t *p = w + sizeof(struct chpp_rwqe_hdr) +
                         i * sizeof(struct chpp_wqe_sge);

            stl_le_p(p, sge[i].len);
            stl_le_p(p + 4, sge[i].key);
            stq_le_p(p + 8, sge[i].addr);
        }
    }
    chpp_ring_write(d, ring, log, stride, pi, buf, count);
}

void chpp_post_recvs(ChppDev *d, ChppTQp *q, uint64_t wr_id,
                     const ChppTSge *sge, uint32_t nsge, uint32_t count)
{
    chpp_rwqes_write(d, q->rq, q->log_rq, q->stride, q->rq_pi, wr_id, sge,
                     nsge, count);
    q->rq_pi = (q->rq_pi + count) & CHPP_UAR_DB_PI_MASK;
    chpp_rq_db(d, q->uar, q->qpn, q->rq_pi);
}

/* ---- shared receive queues (ABI 1.5) ------------------------------------ */

void chpp_srq_db(ChppDev *d, uint16_t uar, uint32_t srqn, uint32_t pi)
{
    qpci_io_writel(d->pdev, d->bar2,
                   (uint64_t)uar * CHPP_UAR_PAGE_SIZE + CHPP_UAR_SRQ_DB,
                   srqn << CHPP_UAR_DB_QPN_SHIFT | (pi & CHPP_UAR_DB_PI_MASK));
}

uint8_t chpp_sw2hw_srq(ChppDev *d, uint32_t srqn,
                       const struct chpp_srq_context *ctx)
{
    qtest_memwrite(d->qts, d->mbox_in, ctx, sizeof(*ctx));
    return chpp_cmd(d, CHPP_CMD_SW2HW_SRQ, d->mbox_in, srqn, 0);
}

uint8_t chpp_query_srq(ChppDev *d, uint32_t srqn,
                       struct chpp_srq_context *ctx)
{
    uint8_t st = chpp_cmd(d, CHPP_CMD_QUERY_SRQ, 0, srqn, d->mbox_out);

    qtest_memread(d->qts, d->mbox_out, ctx, sizeof(*ctx));
    return st;
}

uint8_t chpp_create_srq(ChppDev *d, ChppTSrq *q, uint32_t srqn, uint32_t pd,
                        uint8_t log_size, uint8_t stride, uint16_t uar)
{
    uint64_t bytes = (1ull << (log_size + stride)) +
                     sizeof(struct chpp_srq_record);
    struct chpp_srq_context c = {
        .pd = cpu_to_le32(pd),
        .log_size = log_size,
        .log_stride = stride,
        .log_page_size = 12,
        .uar = cpu_to_le16(uar),
    };

    *q = (ChppTSrq) {
        .srqn = srqn, .log_size = log_size, .stride = stride, .uar = uar,
        .ring = guest_alloc(&d->qs->alloc, ROUND_UP(bytes, 4096)),
    };
    qtest_memset(d->qts, q->ring, 0xee, ROUND_UP(bytes, 4096));
    c.mtt_base = cpu_to_le32(chpp_map_pages(d, q->ring, bytes));
    return chpp_sw2hw_srq(d, srqn, &c);
}

void chpp_post_srq_recvs(ChppDev *d, ChppTSrq *q, uint64_t wr_id,
                         const ChppTSge *sge, uint32_t nsge, uint32_t count)
{
    chpp_rwqes_write(d, q->ring, q->log_size, q->stride, q->pi, wr_id, sge,
                     nsge, count);
    q->pi = (q->pi + count) & CHPP_UAR_DB_PI_MASK;
    chpp_srq_db(d, q->uar, q->srqn, q->pi);
}

void chpp_srq_record(ChppDev *d, const ChppTSrq *q, uint32_t *free,
                     uint32_t *ci)
{
    struct chpp_srq_record rec;

    qtest_memread(d->qts, q->ring + (1ull << (q->log_size + q->stride)),
                  &rec, sizeof(rec));
    *free = le32_to_cpu(rec.free);
    *ci = le32_to_cpu(rec.ci);
}

void chpp_post_recv_sges(ChppDev *d, ChppTQp *q, uint64_t wr_id,
                         const ChppTSge *sge, uint32_t n)
{
    chpp_post_recvs(d, q, wr_id, sge, n, 1);
}

bool chpp_cqe_valid(ChppDev *d, ChppTCq *cq, struct chpp_cqe *cqe)
{
    bool want = !((cq->ci / cq->nent) & 1);

    chpp_read_cqe(d, cq->ring, cq->ci % cq->nent, cqe);
    return !!(cqe->owner & CHPP_CQE_OWNER) == want;
}

void chpp_poll_cq(ChppDev *d, ChppTCq *cq, struct chpp_cqe *cqe)
{
    int i;

    for (i = 0; i < CHPP_WAIT_STEPS; i++) {
        if (chpp_cqe_valid(d, cq, cqe)) {
            cq->ci++;
            chpp_cq_db(d, cq->uar, cq->cqn, CHPP_CQ_DB_SET_CI, cq->ci);
            return;
        }
        qtest_clock_step(d->qts, CHPP_WAIT_STEP_NS);
    }
    g_error("no CQE on CQ %u at ci %u", cq->cqn, cq->ci);
}

static uint8_t chpp_pattern(size_t i, uint8_t seed)
{
    return seed + i * 7 + (i >> 8);
}

void chpp_fill(ChppDev *d, uint64_t addr, size_t len, uint8_t seed)
{
    g_autofree uint8_t *data = g_malloc(len);
    size_t i;

    for (i = 0; i < len; i++) {
        data[i] = chpp_pattern(i, seed);
    }
    qtest_bufwrite(d->qts, addr, data, len);
}

void chpp_check(ChppDev *d, uint64_t addr, size_t len, uint8_t seed)
{
    g_autofree uint8_t *data = g_malloc(len);
    size_t i;

    qtest_bufread(d->qts, addr, data, len);
    for (i = 0; i < len; i++) {
        if (data[i] != chpp_pattern(i, seed)) {
            g_error("byte %zu of %zu at 0x%" PRIx64 ": 0x%02x, want 0x%02x",
                    i, len, addr, data[i], chpp_pattern(i, seed));
        }
    }
}

/* ---- two nodes joined by a link ---------------------------------------- */

void chpp_node_start(ChppNode *n, uint16_t id, const char *chardev)
{
    g_autofree char *props = g_strdup_printf("node-id=%u,chardev=lnk", id);
    g_autofree char *extra = g_strdup_printf("-chardev socket,id=lnk,%s",
                                             chardev);

    chpp_node_setup(n, chpp_start(props, extra), id, 0);
}

void chpp_node_setup(ChppNode *n, ChppDev *d, uint16_t id, uint8_t func)
{
    unsigned i;

    memset(n, 0, sizeof(*n));
    n->id = id;
    n->func = func;
    n->d = d;
    chpp_init_hca(n->d);
    n->eq = chpp_create_eq(n->d, 0, 256, 0, false);
    g_assert_cmphex(chpp_map_eq(n->d, 0, CHPP_EVENT_MAPPABLE_MASK &
                                ~(1ull << CHPP_EVENT_CMD), false), ==,
                    CHPP_STAT_OK);
    for (i = 0; i < 2; i++) {
        n->cq[i] = (ChppTCq) {
            .cqn = i, .nent = 256, .uar = CHPP_NODE_UAR,
            .ring = chpp_create_cq(n->d, i, 256, 0, CHPP_NODE_UAR),
        };
    }
    g_assert_cmphex(chpp_cmd(n->d, CHPP_CMD_INIT_PORT, 0, 1, 0), ==,
                    CHPP_STAT_OK);
}

bool chpp_node_link_up(ChppNode *n)
{
    return chpp_rd(n->d, CHPP_REG_LINK) & CHPP_LINK_UP;
}

void chpp_node_wait_link(ChppNode *a, ChppNode *b, bool up)
{
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    while (chpp_node_link_up(a) != up || (b && chpp_node_link_up(b) != up)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(2000);
    }
}

void chpp_node_qp(ChppNode *n, uint32_t qpn, uint8_t magic, uint8_t log_q,
                  uint8_t stride)
{
    ChppTQp *q = &n->qp;
    struct chpp_qp_context c = {
        .type = CHPP_QPT_RC, .port = 1,
        .pd = cpu_to_le32(CHPP_NODE_PD),
        .send_cqn = cpu_to_le32(0), .recv_cqn = cpu_to_le32(1),
        .log_sq_size = log_q, .log_sq_stride = stride,
        .log_rq_size = log_q, .log_rq_stride = stride,
        .uar = cpu_to_le16(CHPP_NODE_UAR),
        .access_flags = cpu_to_le32(CHPP_ACCESS_REMOTE_WRITE |
                                    CHPP_ACCESS_REMOTE_READ |
                                    CHPP_ACCESS_REMOTE_ATOMIC),
        .magic = magic,
    };

    *q = (ChppTQp) {
        .qpn = qpn, .type = CHPP_QPT_RC, .log_sq = log_q, .log_rq = log_q,
        .stride = stride, .magic = magic, .uar = CHPP_NODE_UAR,
    };
    chpp_qp_alloc_rings(n->d, &c, &q->sq, &q->rq);
    g_assert_cmphex(chpp_modify_qp(n->d, CHPP_CMD_RST2INIT_QP, qpn,
                                   CHPP_QP_ATTR_PKEY_INDEX |
                                   CHPP_QP_ATTR_PORT |
                                   CHPP_QP_ATTR_ACCESS_FLAGS, &c), ==,
                    CHPP_STAT_OK);
}

void chpp_rc_qp_connect(ChppDev *d, uint32_t qpn,
                        const struct chpp_qp_context *c)
{
    g_assert_cmphex(chpp_modify_qp(d, CHPP_CMD_INIT2RTR_QP, qpn,
                                   CHPP_QP_ATTR_AV | CHPP_QP_ATTR_PATH_MTU |
                                   CHPP_QP_ATTR_DEST_QPN |
                                   CHPP_QP_ATTR_RQ_PSN |
                                   CHPP_QP_ATTR_MAX_DEST_RD_ATOMIC |
                                   CHPP_QP_ATTR_MIN_RNR_TIMER, c), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_modify_qp(d, CHPP_CMD_RTR2RTS_QP, qpn,
                                   CHPP_QP_ATTR_SQ_PSN |
                                   CHPP_QP_ATTR_TIMEOUT |
                                   CHPP_QP_ATTR_RETRY_CNT |
                                   CHPP_QP_ATTR_RNR_RETRY |
                                   CHPP_QP_ATTR_MAX_QP_RD_ATOMIC, c), ==,
                    CHPP_STAT_OK);
}

void chpp_node_connect(ChppNode *n, const ChppNode *peer, uint8_t timeout,
                       uint8_t retry)
{
    struct chpp_qp_context c = {
        .path_mtu = 5,
        .dest_node = cpu_to_le32(peer->id),
        .dest_qpn = cpu_to_le32(peer->qp.qpn),
        .dest_magic = peer->qp.magic,
        .dest_vf = peer->func,
        .rq_psn = cpu_to_le32(0x500),
        .sq_psn = cpu_to_le32(0x500),
        .max_dest_rd_atomic = 16, .max_rd_atomic = 16,
        .min_rnr_timer = 1, .timeout = timeout, .retry_cnt = retry,
        .rnr_retry = 7,
    };

    chpp_rc_qp_connect(n->d, n->qp.qpn, &c);
}

/* ---- SR-IOV ------------------------------------------------------------- */

#define CHPP_MCH_PCIEXBAR   0x60

uint64_t chpp_ecam(int devfn, int off)
{
    return CHPP_TEST_ECAM_BASE | (uint64_t)devfn << 12 | off;
}

uint32_t chpp_pf_cfg_rd(ChppPf *p, int fn, int off)
{
    return qtest_readl(p->d->qts, chpp_ecam(CHPP_TEST_DEVFN + fn, off));
}

void chpp_pf_cfg_wr16(ChppPf *p, int fn, int off, uint16_t v)
{
    qtest_writew(p->d->qts, chpp_ecam(CHPP_TEST_DEVFN + fn, off), v);
}

ChppPf *chpp_pf_start(const char *props, const char *extra)
{
    ChppPf *p = g_new0(ChppPf, 1);
    QPCIDevice *host;

    p->d = chpp_start(props, extra);
    host = qpci_device_find(p->d->qs->pcibus, 0);
    qpci_config_writel(host, CHPP_MCH_PCIEXBAR + 4, 0);
    qpci_config_writel(host, CHPP_MCH_PCIEXBAR, CHPP_TEST_ECAM_BASE | 1);
    g_free(host);
    qtest_writel(p->d->qts, chpp_ecam(CHPP_TEST_DEVFN,
                                      CHPP_PCI_EXT_CAP_SRIOV + PCI_SRIOV_BAR),
                 CHPP_TEST_VF_BAR0 | PCI_BASE_ADDRESS_MEM_TYPE_64);
    qtest_writel(p->d->qts,
                 chpp_ecam(CHPP_TEST_DEVFN,
                           CHPP_PCI_EXT_CAP_SRIOV + PCI_SRIOV_BAR + 8),
                 CHPP_TEST_VF_BAR2 | PCI_BASE_ADDRESS_MEM_TYPE_64 |
                 PCI_BASE_ADDRESS_MEM_PREFETCH);
    return p;
}

void chpp_vf_free(ChppDev *vf)
{
    if (vf) {
        g_free(vf->pdev);
        g_free(vf);
    }
}

/* A VF's config reads 0xffff as its IDs: the handle is built by hand. */
static ChppDev *chpp_vf_new(ChppPf *p, int fn)
{
    ChppDev *vf = g_new0(ChppDev, 1);

    vf->qs = p->d->qs;
    vf->qts = p->d->qts;
    vf->pdev = g_new0(QPCIDevice, 1);
    vf->pdev->bus = p->d->pdev->bus;
    vf->pdev->devfn = CHPP_TEST_DEVFN + fn;
    vf->bar0.addr = CHPP_TEST_VF_BAR0 + (fn - 1) * CHPP_BAR0_SIZE;
    vf->bar2.addr = CHPP_TEST_VF_BAR2 + (fn - 1) * CHPP_VF_UAR_PAGES *
                    CHPP_UAR_PAGE_SIZE;
    vf->pdev->msix_table_bar = vf->bar0;
    vf->pdev->msix_table_off = CHPP_MSIX_TABLE_OFFSET;
    vf->pdev->msix_pba_bar = vf->bar0;
    vf->pdev->msix_pba_off = CHPP_MSIX_PBA_OFFSET;
    vf->toggle = true;
    return vf;
}

ChppDev *chpp_vf_handle(ChppPf *p, int fn)
{
    ChppDev *vf = chpp_vf_new(p, fn);
    uint16_t ctrl;

    /* QEMU 7.2 maps VF BARs by the VF's own Memory Space bit. */
    qpci_config_writew(vf->pdev, PCI_COMMAND,
                       PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    ctrl = qpci_config_readw(vf->pdev, CHPP_PCI_CAP_MSIX + PCI_MSIX_FLAGS);
    qpci_config_writew(vf->pdev, CHPP_PCI_CAP_MSIX + PCI_MSIX_FLAGS,
                       ctrl | PCI_MSIX_FLAGS_ENABLE);
    vf->pdev->msix_enabled = true;
    vf->mbox_in = guest_alloc(&vf->qs->alloc, CHPP_MAILBOX_SIZE);
    vf->mbox_out = guest_alloc(&vf->qs->alloc, CHPP_MAILBOX_SIZE);
    vf->msi_page = guest_alloc(&vf->qs->alloc, 4096);
    return vf;
}

void chpp_pf_vfs_set(ChppPf *p, int n)
{
    int i;

    for (i = 1; i <= CHPP_MAX_VFS; i++) {
        chpp_vf_free(p->vf[i]);
        p->vf[i] = NULL;
    }
    chpp_pf_cfg_wr16(p, 0, CHPP_PCI_EXT_CAP_SRIOV + PCI_SRIOV_CTRL, 0);
    if (n) {
        chpp_pf_cfg_wr16(p, 0, CHPP_PCI_EXT_CAP_SRIOV + PCI_SRIOV_NUM_VF, n);
        chpp_pf_cfg_wr16(p, 0, CHPP_PCI_EXT_CAP_SRIOV + PCI_SRIOV_CTRL,
                         PCI_SRIOV_CTRL_VFE | PCI_SRIOV_CTRL_MSE);
    }
    for (i = 1; i <= n; i++) {
        p->vf[i] = chpp_vf_handle(p, i);
    }
}

void chpp_pf_stop(ChppPf *p)
{
    int i;

    for (i = 1; i <= CHPP_MAX_VFS; i++) {
        chpp_vf_free(p->vf[i]);
    }
    chpp_stop(p->d);
    g_free(p);
}

ChppPf *chpp_pf_adopt_migrated(ChppDev *dst, ChppPf *src)
{
    ChppPf *p = g_new0(ChppPf, 1);
    int i;

    p->d = dst;
    chpp_adopt_migrated(dst, src->d);
    for (i = 1; i <= CHPP_MAX_VFS; i++) {
        if (src->vf[i]) {
            p->vf[i] = chpp_vf_new(p, i);
            chpp_adopt_migrated(p->vf[i], src->vf[i]);
        }
    }
    chpp_pf_stop(src);
    return p;
}

/* ---- benchmark helpers --------------------------------------------------- */

int chpp_find_qemu_pid(int except)
{
    g_autoptr(GDir) dir = g_dir_open("/proc", 0, NULL);
    const char *name;
    unsigned long long newest = 0;
    int found = 0;

    /* The youngest live one: an older QEMU may still be on its way out. */
    while (dir && (name = g_dir_read_name(dir))) {
        g_autofree char *path = g_strdup_printf("/proc/%s/stat", name);
        g_autofree char *stat = NULL;
        unsigned long long start;
        char *p, state;
        int ppid;

        if (!g_ascii_isdigit(name[0]) || atoi(name) == except ||
            !g_file_get_contents(path, &stat, NULL, NULL)) {
            continue;
        }
        p = strrchr(stat, ')');
        /* Fields 3 (state), 4 (ppid) and 22 (start time). */
        if (p && sscanf(p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                        "%*u %*u %*d %*d %*d %*d %*d %*d %llu", &state, &ppid,
                        &start) == 3 &&
            ppid == getpid() && state != 'Z' && strstr(stat, "(qemu-system") &&
            (!found || start >= newest)) {
            found = atoi(name);
            newest = start;
        }
    }
    return found;
}

uint64_t chpp_cpu_ns(int pid)
{
    g_autofree char *tdir = pid ? g_strdup_printf("/proc/%d/task", pid)
                                : g_strdup("/proc/self/task");
    g_autoptr(GDir) dir = g_dir_open(tdir, 0, NULL);
    const char *name;
    uint64_t sum = 0;

    while (dir && (name = g_dir_read_name(dir))) {
        g_autofree char *path = g_strdup_printf("%s/%s/schedstat", tdir, name);
        g_autofree char *txt = NULL;

        if (g_file_get_contents(path, &txt, NULL, NULL)) {
            sum += g_ascii_strtoull(txt, NULL, 10);
        }
    }
    return sum;
}

static int chpp_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

void chpp_med_p99(int64_t *v, uint32_t n, double *med, double *p99)
{
    qsort(v, n, sizeof(*v), chpp_cmp_i64);
    *med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
    *p99 = v[MIN(n - 1, (uint32_t)((n * 99 + 99) / 100) - 1)];
}

const char *chpp_size_str(uint32_t size)
{
    static char s[8][16];
    static int k;
    char *p = s[k++ % 8];

    if (size >= (1u << 20) && !(size % (1u << 20))) {
        snprintf(p, 16, "%u MiB", size >> 20);
    } else if (size >= 1024 && !(size % 1024)) {
        snprintf(p, 16, "%u KiB", size >> 10);
    } else {
        snprintf(p, 16, "%u B", size);
    }
    return p;
}

void chpp_node_post(ChppNode *n, uint8_t op, uint64_t wr_id, uint64_t laddr,
                    uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
                    bool ring)
{
    ChppWqeBuf *w = chpp_wqe_new(op, CHPP_WQE_SIGNALED, wr_id, 0);

    if (op != CHPP_WQE_SEND) {
        chpp_wqe_raddr(w, raddr, rkey);
    }
    chpp_wqe_sge(w, laddr, len, lkey);
    chpp_post_send(n->d, &n->qp, w, ring);
}

void chpp_node_expect(ChppNode *n, uint32_t cq, uint64_t wr_id,
                      uint8_t opcode, uint32_t len)
{
    struct chpp_cqe cqe;

    chpp_poll_cq(n->d, &n->cq[cq], &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, opcode);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, len);
}

void chpp_node_expect_none(ChppNode *n, uint32_t cq)
{
    struct chpp_cqe cqe;

    qtest_clock_step(n->d->qts, 10 * 1000 * 1000);
    g_assert_false(chpp_cqe_valid(n->d, &n->cq[cq], &cqe));
}

/* ---- migration streams as files ---------------------------------------- */

void chpp_qmp_uri(QTestState *qts, const char *cmd, const char *arg)
{
    QDict *rsp = qtest_qmp(qts, "{ 'execute': %s, 'arguments': "
                           "{ 'uri': %s } }", cmd, arg);

    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
}

void chpp_save_to_file(QTestState *qts, const char *path)
{
    g_autofree char *uri = g_strdup_printf("exec:cat > %s", path);

    chpp_qmp_uri(qts, "migrate", uri);
    for (;;) {
        QDict *rsp = qtest_qmp(qts, "{ 'execute': 'query-migrate' }");
        const char *st = qdict_get_str(qdict_get_qdict(rsp, "return"),
                                       "status");

        if (!strcmp(st, "completed")) {
            qobject_unref(rsp);
            return;
        }
        g_assert(strcmp(st, "failed") && strcmp(st, "cancelled"));
        qobject_unref(rsp);
        g_usleep(5000);
    }
}

size_t chpp_stream_find(const uint8_t *data, size_t len, const void *what,
                        size_t wlen)
{
    const uint8_t *hit = memmem(data, len, what, wlen);

    g_assert(hit);
    /* Exactly one place. */
    g_assert(!memmem(hit + 1, data + len - hit - 1, what, wlen));
    return hit - data;
}

void chpp_load_stream(const char *props, const char *stream, const char *log,
                      bool good)
{
    g_autofree char *extra = g_strdup_printf(
        "-trace 'chpp_hca_*vmstate_*' -D %s", log);
    g_autofree char *uri = g_strdup_printf("exec:cat %s", stream);
    ChppDev *d = chpp_start_incoming_extra(props, extra, "defer");
    int64_t end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    chpp_qmp_uri(d->qts, "migrate-incoming", uri);
    if (!good) {
        while (qtest_probe_child(d->qts)) {
            g_assert_cmpint(g_get_monotonic_time(), <, end);
            g_usleep(10000);
        }
        qtest_set_expected_status(d->qts, 1);
        chpp_stop(d);
        return;
    }
    for (;;) {
        QDict *rsp = qtest_qmp(d->qts, "{ 'execute': 'query-status' }");
        g_autofree char *st = g_strdup(qdict_get_str(
                                  qdict_get_qdict(rsp, "return"), "status"));

        qobject_unref(rsp);
        if (strcmp(st, "inmigrate")) {
            if (strcmp(st, "running")) {
                g_assert_cmpstr(st, ==, "paused");
            }
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(10000);
    }
    chpp_stop(d);
}

void chpp_load_corrupted(const char *props, const uint8_t *data, size_t len,
                         const char *dir, const char *what, size_t at,
                         uint8_t value, const char *trace)
{
    g_autofree char *bad = g_strdup_printf("%s/bad", dir);
    g_autofree char *log = g_strdup_printf("%s/log", dir);
    g_autofree uint8_t *copy = g_memdup2(data, len);
    g_autofree char *text = NULL;

    g_test_message("corrupt %s at %zu: 0x%02x -> 0x%02x", what, at,
                   data[at], value);
    g_assert_cmphex(data[at], !=, value);
    copy[at] = value;
    g_assert(g_file_set_contents(bad, (char *)copy, len, NULL));
    unlink(log);
    chpp_load_stream(props, bad, log, false);
    if (trace) {
        g_assert(g_file_get_contents(log, &text, NULL, NULL));
        if (!strstr(text, trace)) {
            g_error("%s: no \"%s\" in the trace:\n%s", what, trace, text);
        }
    }
    unlink(bad);
    unlink(log);
}

/* ---- frames as the wire carries them (docs/wire-format.md) ------------ */

static uint8_t chpp_frm_pkt_type(uint8_t op)
{
    switch (op) {
    case CHPP_OP_WRITE:
    case CHPP_OP_WRITE_IMM:
    case CHPP_OP_READ_RESP:
        return CHPP_PKT_PUT;
    case CHPP_OP_READ_REQ:
        return CHPP_PKT_GET;
    case CHPP_OP_ATOMIC_CS:
    case CHPP_OP_ATOMIC_FA:
        return CHPP_PKT_ATOMIC;
    case CHPP_OP_ACK:
    case CHPP_OP_NAK:
    case CHPP_OP_ATOMIC_ACK:
        return CHPP_PKT_ACK;
    default:
        return CHPP_PKT_NAP;
    }
}

GByteArray *chpp_frm_build(const ChppFrm *f)
{
    GByteArray *ba = g_byte_array_new();
    uint8_t h[CHPP_WIRE_HDR_SIZE] = {};
    uint32_t dws = DIV_ROUND_UP(f->len, 4);
    uint8_t first_be = f->len ? 0xf : 0, last_be = 0;
    uint32_t sflag = (f->flags & CHPP_WIRE_F_SOLICITED ? 1 : 0) |
                     (f->flags & CHPP_WIRE_F_IMM ? 2 : 0) |
                     (f->flags & CHPP_WIRE_F_ACK_REQ ? 4 : 0) |
                     (f->flags & CHPP_WIRE_F_LAST ? 8 : 0);
    struct chpp_wire_ext e = {
        .version = CHPP_WIRE_EXT_VERSION, .op = f->op, .flags = f->flags,
        .psn = cpu_to_le32(f->psn), .src_qpn = cpu_to_le32(f->src_qpn),
        .dst_qpn = cpu_to_le32(f->dst_qpn),
        .src_node = cpu_to_le16(f->src_node),
        .dst_node = cpu_to_le16(f->dst_node), .src_vf = f->src_vf,
        .dst_vf = f->dst_vf, .magic = f->magic, .rkey = cpu_to_le32(f->rkey),
        .va = cpu_to_le64(f->va), .msg_len = cpu_to_le32(f->msg_len),
        .payload_len = cpu_to_le32(f->len), .qkey = cpu_to_le32(f->qkey),
        .mlid = cpu_to_le16(f->mlid),
    };
    g_autofree uint8_t *zeros = g_malloc0(f->len + 1);

    if (f->len > 4) {
        last_be = f->len % 4 ? (1u << (f->len % 4)) - 1 : 0xf;
    } else if (f->len) {
        first_be = (1u << f->len) - 1;
    }
    h[0] = (f->len ? 3 : 1) << 5;
    h[1] = (f->vc & 0x7) << 4;
    h[2] = chpp_frm_pkt_type(f->op) << 2 | ((dws >> 8) & 0x3);
    h[3] = dws & 0xff;
    stw_be_p(h + 4, f->src_vf);
    h[6] = f->magic;
    h[7] = last_be << 4 | first_be;
    stl_be_p(h + 8, (f->src_node & 0xf) << 28 | (f->src_vf & 0x7) << 25 |
             (f->src_qpn & 0x7) << 22 | (f->dst_node & 0xf) << 18 |
             (f->dst_vf & 0x7) << 15 | (f->dst_qpn & 0x7) << 12 |
             sflag << 8 | ((f->va >> 32) & 0xff));
    stl_be_p(h + 12, (uint32_t)f->va & ~3u);
    g_byte_array_append(ba, h, sizeof(h));
    g_byte_array_append(ba, (void *)&e, sizeof(e));
    g_byte_array_append(ba, zeros, f->len);
    return ba;
}
