/*
 * chpp-hca: memory regions, the MTT and every data DMA.
 *
 * An MPT entry describes a region [start, start + length) of I/O virtual
 * addresses, its PD, key and rights.  Unless the region is PHYS, its pages
 * (2^log_page_size bytes) are translated by consecutive MTT entries starting
 * at mtt_base; entry mtt_base maps the page that holds 'start'.  Rings (CQs,
 * SQs, RQs) are mapped the same way, from offset 0 of their first page.
 *
 * MTT entries are re-validated on every access: the driver may rewrite them
 * with WRITE_MTT at any time, so creation-time checks are not enough.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "migration/vmstate.h"
#include "hw/chpp/chpp-qemu-compat.h"
#include "chpp-hca.h"
#include "trace.h"

/* Bits 11:1 of an MTT entry: reserved, must be 0. */
#define CHPP_MTT_RSVD_MASK  (~CHPP_MTT_ADDR_MASK & ~CHPP_MTT_VALID)

static bool chpp_mpt_flags_ok(uint32_t flags)
{
    if (flags & ~CHPP_MPT_FLAGS_MASK) {
        return false;
    }
    /* InfiniBand: remote write and atomic access need local write. */
    if ((flags & (CHPP_MPT_REMOTE_WRITE | CHPP_MPT_REMOTE_ATOMIC)) &&
        !(flags & CHPP_MPT_LOCAL_WRITE)) {
        return false;
    }
    return true;
}

static bool chpp_page_shift_ok(uint8_t log_ps)
{
    return log_ps >= CHPP_MIN_PAGE_SHIFT && log_ps <= CHPP_MAX_PAGE_SHIFT;
}

/* Pages of 2^log_ps covering [start, start + length); no wrap (checked). */
static uint64_t chpp_mr_npages(uint64_t start, uint64_t length, uint8_t log_ps)
{
    uint64_t ps = 1ull << log_ps;
    uint64_t span = (start & (ps - 1)) + length;

    return (span >> log_ps) + !!(span & (ps - 1));
}

/* True if MTT entries [base, base + n) exist. */
static bool chpp_mtt_range_ok(ChppHcaState *s, uint64_t base, uint64_t n)
{
    return base <= s->params.num_mtts && n <= s->params.num_mtts - base;
}

/*
 * A fast-registration region: its reserved MTT entries, and, if it is
 * registered (length > 0), a range its pages cover.
 */
static const char *chpp_mpt_fr_invalid(ChppHcaState *s, const ChppMpt *mr)
{
    if (mr->flags & CHPP_MPT_PHYS) {
        return "fast registration of a PHYS region";
    }
    if (mr->fr_max < 1 || mr->fr_max > CHPP_MAX_FR_PAGES) {
        return "max_pages out of range";
    }
    if (!chpp_mtt_range_ok(s, mr->mtt_base, mr->fr_max)) {
        return "MTT range beyond num-mtts";
    }
    if (!mr->length) {
        return NULL;
    }
    if (mr->start + mr->length < mr->start) {
        return "region wraps the address space";
    }
    if (!chpp_page_shift_ok(mr->log_page_size) ||
        chpp_mr_npages(mr->start, mr->length, mr->log_page_size) >
        mr->fr_max) {
        return "registered range beyond its pages";
    }
    return NULL;
}

/* Everything an MPT entry must satisfy (SW2HW_MPT and incoming migration). */
static const char *chpp_mpt_invalid(ChppHcaState *s, uint32_t idx,
                                    const ChppMpt *mr)
{
    if (mr->key >> CHPP_KEY_INDEX_SHIFT != idx) {
        return "key does not name this MPT index";
    }
    if (mr->flags & ~CHPP_MPT_FLAGS_MASK) {
        return "unknown flags";
    }
    if (!chpp_mpt_flags_ok(mr->flags)) {
        return "remote write or atomic access without local write";
    }
    if (mr->pd >= s->params.num_pds) {
        return "PD out of range";
    }
    if (mr->flags & CHPP_MPT_FAST_REG) {
        return chpp_mpt_fr_invalid(s, mr);
    }
    if (mr->fr_max) {
        return "max_pages without fast registration";
    }
    if (mr->length == 0 || mr->start + mr->length < mr->start) {
        return "empty region or region wraps the address space";
    }
    if (mr->flags & CHPP_MPT_PHYS) {
        return NULL;
    }
    if (!chpp_page_shift_ok(mr->log_page_size)) {
        return "page size out of range";
    }
    if (!chpp_mtt_range_ok(s, mr->mtt_base,
                           chpp_mr_npages(mr->start, mr->length,
                                          mr->log_page_size))) {
        return "MTT range beyond num-mtts";
    }
    return NULL;
}

static uint8_t chpp_mpt_check(ChppHcaState *s, uint32_t idx, bool want_hw)
{
    if (idx >= s->params.num_mpts) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX,
                             "MPT %u out of range (%u MPTs)", idx,
                             s->params.num_mpts);
    }
    if (s->mpts[idx].hw != want_hw) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE, "MPT %u is %s", idx,
                             want_hw ? "not in hardware ownership" :
                             "already in hardware ownership");
    }
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_sw2hw_mpt(ChppHcaState *s, uint32_t idx, uint64_t mailbox)
{
    struct chpp_mpt_context ctx;
    uint8_t status = chpp_mpt_check(s, idx, false);
    const char *why;
    ChppMpt mr;

    if (status != CHPP_STAT_OK ||
        !chpp_mailbox_read(s, mailbox, &ctx, sizeof(ctx), &status)) {
        return status;
    }
    mr = (ChppMpt) {
        .hw = true,
        .flags = le32_to_cpu(ctx.flags),
        .key = le32_to_cpu(ctx.key),
        .pd = le32_to_cpu(ctx.pd),
        .log_page_size = ctx.log_page_size,
        .start = le64_to_cpu(ctx.start),
        .length = le64_to_cpu(ctx.length),
        .mtt_base = le32_to_cpu(ctx.mtt_base),
    };

    /* A fast-registration region starts free: no pages, no rights. */
    if ((mr.flags & CHPP_MPT_FAST_REG) &&
        (mr.flags & ~(CHPP_MPT_FAST_REG | CHPP_MPT_LOCAL_WRITE |
                      CHPP_MPT_REMOTE_READ | CHPP_MPT_REMOTE_WRITE |
                      CHPP_MPT_REMOTE_ATOMIC))) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "MPT %u: fast "
                             "registration with flags 0x%x", idx, mr.flags);
    }
    if (mr.flags & CHPP_MPT_FAST_REG) {
        mr.flags = CHPP_MPT_FAST_REG;
        mr.fr_max = le32_to_cpu(ctx.max_pages);
        mr.start = 0;
        mr.length = 0;
        mr.log_page_size = 0;
    } else if (ctx.max_pages) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "MPT %u: max_pages "
                             "without CHPP_MPT_FAST_REG", idx);
    }

    why = chpp_mpt_invalid(s, idx, &mr);
    if (why) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "MPT %u: %s (key 0x%08x flags 0x%x pd %u start "
                             "0x%" PRIx64 " length 0x%" PRIx64 " log_page_size "
                             "%u mtt_base %u)", idx, why, mr.key, mr.flags,
                             mr.pd, mr.start, mr.length, mr.log_page_size,
                             mr.mtt_base);
    }
    if (mr.flags & CHPP_MPT_PHYS) {
        /* Not used by a PHYS region: keep QUERY_MPT and migration tidy. */
        mr.log_page_size = 0;
        mr.mtt_base = 0;
    }

    s->mpts[idx] = mr;
    trace_chpp_hca_mpt_create(s->func, idx, mr.key, mr.pd, mr.flags, mr.start,
                              mr.length, mr.mtt_base, mr.log_page_size);
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_hw2sw_mpt(ChppHcaState *s, uint32_t idx)
{
    uint8_t status = chpp_mpt_check(s, idx, true);

    if (status != CHPP_STAT_OK) {
        return status;
    }
    memset(&s->mpts[idx], 0, sizeof(s->mpts[idx]));
    trace_chpp_hca_mpt_destroy(s->func, idx);
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_query_mpt(ChppHcaState *s, uint32_t idx, uint64_t mailbox)
{
    struct chpp_mpt_context ctx = {};
    uint8_t status = CHPP_STAT_OK;
    const ChppMpt *mr;

    if (idx >= s->params.num_mpts) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX,
                             "MPT %u out of range (%u MPTs)", idx,
                             s->params.num_mpts);
    }
    /* An entry in software ownership reads as all zero, state SW. */
    mr = &s->mpts[idx];
    if (mr->hw) {
        ctx.flags = cpu_to_le32(mr->flags);
        ctx.key = cpu_to_le32(mr->key);
        ctx.pd = cpu_to_le32(mr->pd);
        ctx.log_page_size = mr->log_page_size;
        ctx.state = (mr->flags & CHPP_MPT_FAST_REG) && !mr->length ?
                    CHPP_RES_FREE : CHPP_RES_HW;
        ctx.max_pages = cpu_to_le32(mr->fr_max);
        ctx.start = cpu_to_le64(mr->start);
        ctx.length = cpu_to_le64(mr->length);
        ctx.mtt_base = cpu_to_le32(mr->mtt_base);
    }
    chpp_mailbox_write(s, mailbox, &ctx, sizeof(ctx), &status);
    return status;
}

uint8_t chpp_cmd_write_mtt(ChppHcaState *s, uint32_t count, uint64_t mailbox)
{
    g_autofree struct chpp_write_mtt *m = NULL;
    uint8_t status = CHPP_STAT_OK;
    uint64_t first;
    uint32_t i;

    if (count < 1 || count > CHPP_MTT_PER_MAILBOX) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "%u MTT entries (1..%u per command)", count,
                             (unsigned)CHPP_MTT_PER_MAILBOX);
    }
    m = g_new(struct chpp_write_mtt, 1);
    if (!chpp_mailbox_read(s, mailbox, m,
                           offsetof(struct chpp_write_mtt, entries) +
                           count * sizeof(uint64_t), &status)) {
        return status;
    }
    first = le64_to_cpu(m->first_index);
    if (!chpp_mtt_range_ok(s, first, count)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX,
                             "MTT %" PRIu64 " + %u beyond %u entries", first,
                             count, s->params.num_mtts);
    }
    /* All or nothing: validate every entry before writing any. */
    for (i = 0; i < count; i++) {
        uint64_t e = le64_to_cpu(m->entries[i]);

        if (e & CHPP_MTT_RSVD_MASK) {
            return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                                 "MTT entry %u (index %" PRIu64 ") = 0x%"
                                 PRIx64 ": reserved bits set", i, first + i,
                                 e);
        }
    }
    for (i = 0; i < count; i++) {
        s->mtt[first + i] = le64_to_cpu(m->entries[i]);
    }
    trace_chpp_hca_write_mtt(s->func, first, count);
    return CHPP_STAT_OK;
}

const ChppMpt *chpp_mr_lookup(ChppHcaState *s, uint32_t key, uint32_t pd,
                              uint64_t va, uint64_t len, uint32_t need,
                              uint8_t *verr)
{
    uint32_t idx = key >> CHPP_KEY_INDEX_SHIFT;
    const ChppMpt *mr;
    uint64_t off;

    if (idx >= s->params.num_mpts || !s->mpts[idx].hw ||
        s->mpts[idx].key != key ||
        ((s->mpts[idx].flags & CHPP_MPT_FAST_REG) && !s->mpts[idx].length)) {
        *verr = CHPP_VERR_BAD_LKEY;
        goto fail;
    }
    mr = &s->mpts[idx];
    if (mr->pd != pd) {
        *verr = CHPP_VERR_LKEY_PD;
        goto fail;
    }
    if ((mr->flags & need) != need) {
        *verr = CHPP_VERR_LKEY_RIGHTS;
        goto fail;
    }
    /* [va, va + len) inside [start, start + length); len 0 at the end ok. */
    off = va - mr->start;
    if (va < mr->start || off > mr->length || len > mr->length - off) {
        *verr = CHPP_VERR_LKEY_BOUNDS;
        goto fail;
    }
    return mr;

fail:
    trace_chpp_hca_err_mr_lookup(s->func, key, pd, va, len, need, *verr);
    return NULL;
}

/* The fast-registration region of @key's index, in @pd, or NULL. */
static ChppMpt *chpp_mr_fr(ChppHcaState *s, uint32_t pd, uint32_t key,
                           uint8_t *verr)
{
    uint32_t idx = key >> CHPP_KEY_INDEX_SHIFT;
    ChppMpt *mr = idx < s->params.num_mpts ? &s->mpts[idx] : NULL;

    if (!mr || !mr->hw || !(mr->flags & CHPP_MPT_FAST_REG)) {
        *verr = CHPP_VERR_BAD_LKEY;
        return NULL;
    }
    if (mr->pd != pd) {
        *verr = CHPP_VERR_LKEY_PD;
        return NULL;
    }
    return mr;
}

uint8_t chpp_mr_fast_reg(ChppHcaState *s, uint32_t pd,
                         const struct chpp_wqe_reg *r, uint8_t *verr)
{
    g_autofree uint64_t *pages = NULL;
    ChppMpt *mr = chpp_mr_fr(s, pd, r->key, verr);
    ChppMpt n;
    const char *why;
    uint32_t i;

    if (!mr) {
        return CHPP_WC_LOC_PROT_ERR;
    }
    /* IBA: a region is registered from the free state only. */
    if (mr->length) {
        chpp_guest_note(s, "REG_MR of MPT key 0x%08x: still registered",
                        r->key);
        *verr = CHPP_VERR_BAD_LKEY;
        return CHPP_WC_LOC_PROT_ERR;
    }
    n = *mr;
    n.key = r->key;
    n.start = r->iova;
    n.length = r->length;
    n.log_page_size = r->log_page_size;
    n.flags = CHPP_MPT_FAST_REG | r->access;
    why = r->access & ~(CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ |
                        CHPP_MPT_REMOTE_WRITE | CHPP_MPT_REMOTE_ATOMIC) ?
          "unknown rights" : !chpp_mpt_flags_ok(n.flags) ?
          "remote write or atomic access without local write" :
          !r->length ? "empty region" :
          r->npages < 1 || r->npages > mr->fr_max ? "more pages than reserved" :
          chpp_mpt_invalid(s, mr - s->mpts, &n);
    if (!why && chpp_mr_npages(n.start, n.length, n.log_page_size) >
        r->npages) {
        why = "range beyond its pages";
    }
    if (why) {
        chpp_guest_note(s, "REG_MR of key 0x%08x (iova 0x%" PRIx64 " length "
                        "0x%" PRIx64 ", %u pages of 2^%u): %s", r->key,
                        r->iova, r->length, r->npages, r->log_page_size, why);
        *verr = CHPP_VERR_LKEY_BOUNDS;
        return CHPP_WC_LOC_PROT_ERR;
    }
    /* The page list, in guest memory: each page aligned to the size. */
    pages = g_new(uint64_t, r->npages);
    if (!chpp_dma_read(s, r->page_list, pages, r->npages * 8ull)) {
        *verr = CHPP_VERR_DMA;
        return CHPP_WC_LOC_PROT_ERR;
    }
    for (i = 0; i < r->npages; i++) {
        pages[i] = le64_to_cpu(pages[i]);
        if (pages[i] & ((1ull << n.log_page_size) - 1)) {
            chpp_guest_note(s, "REG_MR of key 0x%08x: page %u at 0x%" PRIx64
                            " not aligned", r->key, i, pages[i]);
            *verr = CHPP_VERR_LKEY_BOUNDS;
            return CHPP_WC_LOC_PROT_ERR;
        }
    }
    for (i = 0; i < r->npages; i++) {
        s->mtt[mr->mtt_base + i] = pages[i] | CHPP_MTT_VALID;
    }
    *mr = n;
    trace_chpp_hca_mpt_fast_reg(s->func, r->key, r->iova, r->length,
                                r->npages);
    return 0;
}

uint8_t chpp_mr_invalidate(ChppHcaState *s, uint32_t pd, uint32_t key,
                           uint8_t *verr)
{
    ChppMpt *mr = chpp_mr_fr(s, pd, key, verr);

    if (!mr) {
        return CHPP_WC_LOC_PROT_ERR;
    }
    /* A free region may be invalidated again; a registered one by key. */
    if (mr->length && mr->key != key) {
        *verr = CHPP_VERR_BAD_LKEY;
        return CHPP_WC_LOC_PROT_ERR;
    }
    mr->flags = CHPP_MPT_FAST_REG;
    mr->start = 0;
    mr->length = 0;
    mr->log_page_size = 0;
    trace_chpp_hca_mpt_invalidate(s->func, key);
    return 0;
}

/*
 * Page address of MTT entry @idx for pages of 2^@log_ps bytes, or false if
 * the entry does not exist, is not valid or is misaligned for the page size.
 */
static bool chpp_mtt_page(ChppHcaState *s, uint64_t idx, uint8_t log_ps,
                          dma_addr_t *addr)
{
    uint64_t e;

    if (idx >= s->params.num_mtts) {
        chpp_guest_error(s, "MTT index %" PRIu64 " beyond %u entries", idx,
                         s->params.num_mtts);
        return false;
    }
    e = s->mtt[idx];
    if (!(e & CHPP_MTT_VALID) ||
        (e & CHPP_MTT_ADDR_MASK & ((1ull << log_ps) - 1))) {
        chpp_guest_error(s, "MTT entry %" PRIu64 " = 0x%" PRIx64 " is %s",
                         idx, e, !(e & CHPP_MTT_VALID) ? "not valid" :
                         "not aligned to the page size");
        return false;
    }
    *addr = e & CHPP_MTT_ADDR_MASK;
    return true;
}

/*
 * Copy @len bytes at byte @off of the space mapped by MTT entries
 * @base.. (pages of 2^@log_ps).  Physically contiguous pages are merged,
 * so a transfer costs one DMA per discontiguity, never per page or byte.
 */
static bool chpp_mtt_rw(ChppHcaState *s, uint32_t base, uint8_t log_ps,
                        uint64_t off, void *buf, uint64_t len,
                        DMADirection dir)
{
    uint64_t ps = 1ull << log_ps;
    uint8_t *p = buf;

    while (len) {
        uint64_t page = base + (off >> log_ps);
        uint64_t run = MIN(len, ps - (off & (ps - 1)));
        dma_addr_t addr, next;
        bool ok;

        if (!chpp_mtt_page(s, page, log_ps, &addr)) {
            return false;
        }
        addr += off & (ps - 1);
        while (run < len) {
            if (!chpp_mtt_page(s, ++page, log_ps, &next)) {
                return false;
            }
            if (next != addr + run || addr + run < addr) {
                break;
            }
            run += MIN(len - run, ps);
        }
        if (dir == DMA_DIRECTION_TO_DEVICE) {
            ok = chpp_dma_read(s, addr, p, run);
        } else {
            ok = chpp_dma_write(s, addr, p, run);
        }
        if (!ok) {
            return false;
        }
        p += run;
        off += run;
        len -= run;
    }
    return true;
}

bool chpp_mr_rw(ChppHcaState *s, const ChppMpt *mr, uint64_t va, void *buf,
                uint64_t len, DMADirection dir)
{
    uint64_t off = va - mr->start;
    uint64_t ps;

    /* The caller checked with chpp_mr_lookup(); stay inside regardless. */
    if (va < mr->start || off > mr->length || len > mr->length - off) {
        chpp_guest_error(s, "access 0x%" PRIx64 " + 0x%" PRIx64 " outside "
                         "region key 0x%08x", va, len, mr->key);
        return false;
    }
    if (!len) {
        return true;
    }
    if (mr->flags & CHPP_MPT_PHYS) {
        if (dir == DMA_DIRECTION_TO_DEVICE) {
            return chpp_dma_read(s, va, buf, len);
        }
        return chpp_dma_write(s, va, buf, len);
    }
    ps = 1ull << mr->log_page_size;
    return chpp_mtt_rw(s, mr->mtt_base, mr->log_page_size,
                       va - (mr->start & ~(ps - 1)), buf, len, dir);
}

bool chpp_ring_check(ChppHcaState *s, const ChppRing *ring, uint64_t size)
{
    uint64_t npages, i;

    if (!chpp_page_shift_ok(ring->log_page_size)) {
        trace_chpp_hca_err_ring_bad(s->func, ring->mtt_base,
                                    ring->log_page_size, size,
                                    "page size out of range");
        return false;
    }
    npages = DIV_ROUND_UP(size, 1ull << ring->log_page_size);
    if (!size || !chpp_mtt_range_ok(s, ring->mtt_base, npages)) {
        trace_chpp_hca_err_ring_bad(s->func, ring->mtt_base,
                                    ring->log_page_size, size,
                                    "MTT range beyond num-mtts");
        return false;
    }
    for (i = 0; i < npages; i++) {
        uint64_t e = s->mtt[ring->mtt_base + i];

        /* Not chpp_mtt_page(): the caller reports one error for all. */
        if (!(e & CHPP_MTT_VALID) ||
            (e & CHPP_MTT_ADDR_MASK & ((1ull << ring->log_page_size) - 1))) {
            trace_chpp_hca_err_ring_bad(s->func, ring->mtt_base + i,
                                        ring->log_page_size, size,
                                        "MTT entry invalid or unaligned");
            return false;
        }
    }
    return true;
}

bool chpp_ring_rw(ChppHcaState *s, const ChppRing *ring, uint64_t offset,
                  void *buf, uint64_t len, DMADirection dir)
{
    if (!chpp_page_shift_ok(ring->log_page_size)) {
        return false;
    }
    return chpp_mtt_rw(s, ring->mtt_base, ring->log_page_size, offset, buf,
                       len, dir);
}

void chpp_mr_reset(ChppHcaState *s)
{
    memset(s->mpts, 0, sizeof(ChppMpt) * s->params.num_mpts);
    memset(s->mtt, 0, sizeof(uint64_t) * s->params.num_mtts);
}

/* Migration streams are input too: refuse entries the device cannot hold. */
int chpp_mr_post_load(ChppHcaState *s)
{
    uint32_t i;

    for (i = 0; i < s->params.num_mpts; i++) {
        const ChppMpt *mr = &s->mpts[i];
        const char *why;

        if (!mr->hw) {
            continue;
        }
        why = chpp_mpt_invalid(s, i, mr);
        if (why) {
            return chpp_refuse(s, "MPT %u: %s", i, why);
        }
    }
    return 0;
}

/* Incoming state: no fast-registration region unless the stream has it. */
void chpp_mr_pre_load(ChppHcaState *s)
{
    uint32_t i;

    for (i = 0; i < s->params.num_mpts; i++) {
        s->mpts[i].fr_max = 0;
    }
}

static bool chpp_frmr_needed(void *opaque)
{
    ChppHcaState *s = opaque;
    uint32_t i;

    for (i = 0; i < s->params.num_mpts; i++) {
        if (s->mpts[i].hw && (s->mpts[i].flags & CHPP_MPT_FAST_REG)) {
            return true;
        }
    }
    return false;
}

static const VMStateDescription vmstate_chpp_mpt_fr = {
    .name = "chpp-hca-mpt-fr",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT32(fr_max, ChppMpt),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * ABI 1.6: the MTT entries each fast-registration region reserved, sent
 * only while there is one; checked with the MPTs (chpp_mr_post_load()).
 */
const VMStateDescription vmstate_chpp_frmr = {
    .name = "chpp-hca-function/frmr",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = chpp_frmr_needed,
    .fields = (VMStateField[]) {
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(mpts, ChppHcaState,
                                             params.num_mpts,
                                             vmstate_chpp_mpt_fr, ChppMpt),
        VMSTATE_END_OF_LIST()
    }
};

const VMStateDescription vmstate_chpp_mpt = {
    .name = "chpp-hca-mpt",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_BOOL(hw, ChppMpt),
        VMSTATE_UINT32(flags, ChppMpt),
        VMSTATE_UINT32(key, ChppMpt),
        VMSTATE_UINT32(pd, ChppMpt),
        VMSTATE_UINT8(log_page_size, ChppMpt),
        VMSTATE_UINT64(start, ChppMpt),
        VMSTATE_UINT64(length, ChppMpt),
        VMSTATE_UINT32(mtt_base, ChppMpt),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * Copy @len bytes at message offset @offset between @buf and a scatter/
 * gather list, checking each piece against its region.
 */
bool chpp_sge_rw(ChppHcaState *s, ChppQp *qp, const ChppSge *sge,
                 uint32_t num_sge, uint32_t offset, void *buf, uint32_t len,
                 DMADirection dir, uint8_t *verr)
{
    return chpp_sge_rw_pd(s, qp->pd, sge, num_sge, offset, buf, len, dir,
                          verr);
}

bool chpp_sge_rw_pd(ChppHcaState *s, uint32_t pd, const ChppSge *sge,
                    uint32_t num_sge, uint32_t offset, void *buf,
                    uint32_t len, DMADirection dir, uint8_t *verr)
{
    uint32_t need = dir == DMA_DIRECTION_FROM_DEVICE ? CHPP_MPT_LOCAL_WRITE : 0;
    uint8_t *p = buf;
    uint32_t i;

    for (i = 0; i < num_sge && len; i++) {
        uint32_t chunk;
        const ChppMpt *mr;

        if (offset >= sge[i].length) {
            offset -= sge[i].length;
            continue;
        }
        chunk = MIN(sge[i].length - offset, len);
        mr = chpp_mr_lookup(s, sge[i].lkey, pd, sge[i].addr + offset,
                            chunk, need, verr);
        if (!mr) {
            return false;
        }
        if (!chpp_mr_rw(s, mr, sge[i].addr + offset, p, chunk, dir)) {
            *verr = CHPP_VERR_DMA;
            return false;
        }
        p += chunk;
        len -= chunk;
        offset = 0;
    }
    if (len) {
        *verr = CHPP_VERR_LKEY_BOUNDS;
        return false;
    }
    return true;
}
