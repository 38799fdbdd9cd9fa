/*
 * chpp-hca: what the device thinks, for people: the QUERY_STATS command
 * for the guest, and the read-only QOM property "state" (qom-get from QMP
 * or HMP) with every table of the device and the counters, named by the
 * ABI's lists (chpp_counter_name() and the like).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "chpp-hca-datapath.h"
#include "chpp-hca-link-io.h"
#include "chpp-hca-link-eth.h"
#include "trace.h"

QEMU_BUILD_BUG_ON(CHPP_CNT_NUM > CHPP_STATS_MAX);

/* Live devices, for debuggers (scripts/gdb/chpp-hca.py reads this). */
ChppHcaState *chpp_hca_devices[CHPP_DEBUG_MAX_DEVICES];

void chpp_debug_register(ChppHcaState *s, bool add)
{
    unsigned i;

    for (i = 0; i < CHPP_DEBUG_MAX_DEVICES; i++) {
        if (add ? !chpp_hca_devices[i] : chpp_hca_devices[i] == s) {
            chpp_hca_devices[i] = add ? s : NULL;
            return;
        }
    }
}

uint8_t chpp_cmd_query_stats(ChppHcaState *s, uint32_t flags,
                             uint64_t mailbox)
{
    g_autofree struct chpp_stats *st = g_new0(struct chpp_stats, 1);
    size_t len = offsetof(struct chpp_stats, counters) +
                 CHPP_CNT_NUM * sizeof(uint32_t);
    uint8_t status = CHPP_STAT_OK;
    unsigned i;

    if (flags & ~CHPP_STATS_CLEAR) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "flags 0x%x", flags);
    }
    st->num_counters = cpu_to_le32(CHPP_CNT_NUM);
    for (i = 0; i < CHPP_CNT_NUM; i++) {
        st->counters[i] = cpu_to_le32(s->counters[i]);
    }
    if (chpp_mailbox_write(s, mailbox, st, len, &status) &&
        (flags & CHPP_STATS_CLEAR)) {
        memset(s->counters, 0, sizeof(s->counters));
    }
    return status;
}

/* ---- the "state" property ---------------------------------------------- */

static const char *const timer_names[] = { "none", "retransmit", "rnr" };

/* A name of the ABI's lists (chpp_*_name()), "?" for a value not listed. */
static const char *abi_name(const char *name)
{
    return name ? name : "?";
}

static const char *name_of(const char *const *names, size_t n, unsigned v)
{
    return v < n && names[v] ? names[v] : "?";
}
#define NAME(table, v) name_of(table, ARRAY_SIZE(table), v)

typedef struct StateVisit {
    Visitor *v;
    Error **errp;
    bool ok;
} StateVisit;

static void sv_u64(StateVisit *sv, const char *name, uint64_t val)
{
    sv->ok = sv->ok && visit_type_uint64(sv->v, name, &val, sv->errp);
}

static void sv_bool(StateVisit *sv, const char *name, bool val)
{
    sv->ok = sv->ok && visit_type_bool(sv->v, name, &val, sv->errp);
}

static void sv_str(StateVisit *sv, const char *name, const char *val)
{
    char *s = (char *)val;

    sv->ok = sv->ok && visit_type_str(sv->v, name, &s, sv->errp);
}

static void sv_begin(StateVisit *sv, const char *name)
{
    sv->ok = sv->ok && visit_start_struct(sv->v, name, NULL, 0, sv->errp);
}

static void sv_end(StateVisit *sv)
{
    if (sv->ok) {
        sv->ok = visit_check_struct(sv->v, sv->errp);
        visit_end_struct(sv->v, NULL);
    }
}

static void sv_list(StateVisit *sv, const char *name)
{
    sv->ok = sv->ok && visit_start_list(sv->v, name, NULL, 0, sv->errp);
}

static void sv_end_list(StateVisit *sv)
{
    if (sv->ok) {
        sv->ok = visit_check_list(sv->v, sv->errp);
        visit_end_list(sv->v, NULL);
    }
}

static void chpp_state_eqs(ChppHcaState *s, StateVisit *sv)
{
    unsigned i;

    sv_list(sv, "eqs");
    for (i = 0; i < s->params.num_eqs; i++) {
        ChppEq *eq = &s->eqs[i];

        if (!eq->hw) {
            continue;
        }
        sv_begin(sv, NULL);
        sv_u64(sv, "eqn", i);
        sv_u64(sv, "base", eq->base);
        sv_u64(sv, "entries", eq->nent);
        sv_u64(sv, "pi", eq->pi);
        sv_u64(sv, "ci", eq->ci);
        sv_u64(sv, "vector", eq->vector);
        sv_bool(sv, "armed", eq->armed);
        sv_bool(sv, "overrun", eq->overrun);
        sv_bool(sv, "error", eq->error);
        sv_u64(sv, "dropped", eq->dropped);
        sv_end(sv);
    }
    sv_end_list(sv);
}

static void chpp_state_cqs(ChppHcaState *s, StateVisit *sv)
{
    unsigned i;

    sv_list(sv, "cqs");
    for (i = 0; i < s->params.num_cqs; i++) {
        ChppCq *cq = &s->cqs[i];

        if (!cq->hw) {
            continue;
        }
        sv_begin(sv, NULL);
        sv_u64(sv, "cqn", i);
        sv_u64(sv, "entries", cq->nent);
        sv_u64(sv, "pi", cq->pi);
        sv_u64(sv, "ci", cq->ci);
        sv_u64(sv, "eqn", cq->eqn);
        sv_u64(sv, "uar", cq->uar);
        sv_str(sv, "arm", cq->arm == CHPP_CQ_DB_ARM_NEXT ? "next" :
                          cq->arm == CHPP_CQ_DB_ARM_SOL ? "solicited" : "no");
        sv_bool(sv, "error", cq->error);
        sv_u64(sv, "dropped", cq->dropped);
        sv_u64(sv, "qps", cq->refs);
        sv_end(sv);
    }
    sv_end_list(sv);
}

static void chpp_state_mrs(ChppHcaState *s, StateVisit *sv)
{
    unsigned i;

    sv_list(sv, "mrs");
    for (i = 0; i < s->params.num_mpts; i++) {
        ChppMpt *mr = &s->mpts[i];

        if (!mr->hw) {
            continue;
        }
        sv_begin(sv, NULL);
        sv_u64(sv, "index", i);
        sv_u64(sv, "key", mr->key);
        sv_u64(sv, "pd", mr->pd);
        sv_u64(sv, "flags", mr->flags);
        sv_u64(sv, "start", mr->start);
        sv_u64(sv, "length", mr->length);
        sv_u64(sv, "page-shift", mr->log_page_size);
        sv_u64(sv, "mtt-base", mr->mtt_base);
        sv_end(sv);
    }
    sv_end_list(sv);
}

static void chpp_state_srqs(ChppHcaState *s, StateVisit *sv)
{
    unsigned i;

    sv_list(sv, "srqs");
    for (i = 0; i < s->params.num_srqs; i++) {
        ChppSrq *srq = &s->srqs[i];

        if (srq->state == CHPP_RES_SW) {
            continue;
        }
        sv_begin(sv, NULL);
        sv_u64(sv, "srqn", i);
        sv_u64(sv, "wqes", 1u << srq->log_size);
        sv_u64(sv, "pd", srq->pd);
        sv_u64(sv, "uar", srq->uar);
        sv_u64(sv, "pi", srq->pi);
        sv_u64(sv, "ci", srq->ci);
        sv_u64(sv, "free", srq->free);
        sv_u64(sv, "limit", srq->limit);
        sv_bool(sv, "error", srq->state == CHPP_RES_ERROR);
        sv_u64(sv, "qps", srq->refs);
        sv_end(sv);
    }
    sv_end_list(sv);
}

static void chpp_state_qps(ChppHcaState *s, StateVisit *sv)
{
    unsigned i;

    sv_list(sv, "qps");
    for (i = 0; i < s->params.num_qps; i++) {
        ChppQp *qp = &s->qps[i];

        if (qp->state == CHPP_QPS_RESET) {
            continue;
        }
        sv_begin(sv, NULL);
        sv_u64(sv, "qpn", i);
        sv_str(sv, "type", abi_name(chpp_qp_type_name(qp->type)));
        sv_str(sv, "state", chpp_qp_state_name(qp->state) ?: "?");
        sv_u64(sv, "pd", qp->pd);
        sv_u64(sv, "send-cq", qp->send_cqn);
        sv_u64(sv, "recv-cq", qp->recv_cqn);
        sv_u64(sv, "uar", qp->uar);
        sv_u64(sv, "dest-node", qp->dest_node);
        sv_u64(sv, "dest-qpn", qp->dest_qpn);
        sv_u64(sv, "magic", qp->magic);
        sv_u64(sv, "dest-magic", qp->dest_magic);
        sv_u64(sv, "sq-psn", qp->sq_psn);
        sv_u64(sv, "rq-psn", qp->rq_psn);
        sv_u64(sv, "sq-pi", qp->sq_pi);
        sv_u64(sv, "sq-ci", qp->sq_ci);
        sv_u64(sv, "sq-comp", qp->eng.sq_comp);
        sv_u64(sv, "rq-pi", qp->rq_pi);
        sv_u64(sv, "rq-ci", qp->rq_ci);
        if (qp->flags & CHPP_QP_FLAG_SRQ) {
            sv_u64(sv, "srq", qp->srqn);
        }
        sv_u64(sv, "inflight", qp->eng.infl_count);
        sv_u64(sv, "rd-atomic", qp->eng.rd_atomic);
        sv_u64(sv, "retry-left", qp->eng.retry_left);
        sv_u64(sv, "rnr-left", qp->eng.rnr_left);
        sv_str(sv, "timer", NAME(timer_names, qp->eng.timer_kind));
        sv_end(sv);
    }
    sv_end_list(sv);
}

/*
 * Per-VC figures of the link: on a chardev those of its one peer, on a
 * fabric the sums over its peers (each peer's are in "peers").
 */
static void chpp_state_link_vcs(StateVisit *sv, ChppHcaState *s)
{
    static const char *const keys[] = { "credits", "rx-queued", "owed" };
    ChppLink *l = &s->link;
    unsigned k, vc, i;

    for (k = 0; k < ARRAY_SIZE(keys); k++) {
        for (vc = 0; vc < chpp_num_vcs(s); vc++) {
            g_autofree char *key = g_strdup_printf("%s-vc%u", keys[k], vc);
            uint64_t sum = 0;

            for (i = 0; i < CHPP_LINK_PEERS_MAX; i++) {
                const ChppPeer *p = &l->peers[i];

                sum += k == 0 ? p->credits[vc] :
                       k == 1 ? p->queued[vc] : p->owed[vc];
            }
            sv_u64(sv, key, sum);
        }
    }
    for (vc = 0; vc < chpp_num_vcs(s); vc++) {
        g_autofree char *key = g_strdup_printf("backlog-vc%u", vc);

        sv_u64(sv, key, l->backlog[vc] ?
               g_queue_get_length(l->backlog[vc]) : 0);
    }
}

/* The fabric's view (docs/fabric.md): each peer, each VC. */
static void chpp_state_link_fabric(StateVisit *sv, ChppHcaState *s)
{
    ChppLink *l = &s->link;
    const ChppEthStats *es = l->eth ? chpp_link_eth_stats(l->eth) : NULL;
    unsigned nvcs = chpp_num_vcs(s);
    unsigned i, vc;

    sv_str(sv, "transport", l->eth ? "ethernet" : "stream");
    sv_u64(sv, "epoch", l->epoch);
    sv_u64(sv, "eth-rx", es ? es->rx : 0);
    sv_u64(sv, "eth-tx", es ? es->tx : 0);
    sv_u64(sv, "eth-other-type", es ? es->other_type : 0);
    sv_u64(sv, "eth-other-dst", es ? es->other_dst : 0);
    sv_u64(sv, "eth-bad", es ? es->bad : 0);
    sv_u64(sv, "hello-unmet", l->fab.unmet);
    sv_u64(sv, "hello-epoch-conflicts", l->fab.epoch_conflicts);
    sv_u64(sv, "hello-table-full", l->fab.table_full);
    sv_list(sv, "peers");
    for (i = 0; i < CHPP_LINK_PEERS_MAX; i++) {
        const ChppPeer *p = &l->peers[i];

        if (!p->used) {
            continue;
        }
        sv_begin(sv, NULL);
        sv_u64(sv, "node", p->node);
        sv_bool(sv, "up", p->up);
        sv_u64(sv, "epoch", p->epoch);
        sv_u64(sv, "tx-frames", p->tx_frames);
        sv_u64(sv, "rx-frames", p->rx_frames);
        sv_u64(sv, "lost", p->lost);
        sv_u64(sv, "late", p->late);
        sv_u64(sv, "probes", p->probes);
        for (vc = 0; vc < nvcs; vc++) {
            g_autofree char *c = g_strdup_printf("credits-vc%u", vc);
            g_autofree char *q = g_strdup_printf("rx-queued-vc%u", vc);
            g_autofree char *o = g_strdup_printf("owed-vc%u", vc);

            sv_u64(sv, c, p->credits[vc]);
            sv_u64(sv, q, p->queued[vc]);
            sv_u64(sv, o, p->owed[vc]);
        }
        sv_end(sv);
    }
    sv_end_list(sv);
    sv_u64(sv, "data-vcs", nvcs - 1);
    sv_list(sv, "vcs");
    for (vc = 0; vc < nvcs; vc++) {
        const ChppVcStats *st = &l->vcs[vc];

        sv_begin(sv, NULL);
        sv_u64(sv, "vc", vc);
        sv_str(sv, "carries", vc == nvcs - 1 ? "get" : "data");
        sv_u64(sv, "tx-frames", st->tx_frames);
        sv_u64(sv, "tx-bytes", st->tx_bytes);
        sv_u64(sv, "credit-stalls", st->credit_stalls);
        sv_u64(sv, "hol-stalls", st->hol_stalls);
        sv_bool(sv, "blocked", st->blocked_since);
        sv_u64(sv, "blocked-ns", st->blocked_ns);
        sv_u64(sv, "backlog-max", st->backlog_max);
        sv_end(sv);
    }
    sv_end_list(sv);
}

static void chpp_state_get(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp)
{
    ChppHcaState *s = CHPP_HCA(obj);
    StateVisit sv = { .v = v, .errp = errp, .ok = true };
    uint32_t link = chpp_link_status(s);
    ChppLinkIoStats io = {};
    unsigned i, n;

    sv_begin(&sv, name);
    sv_u64(&sv, "node-id", s->params.node_id);
    sv_u64(&sv, "function", 0);
    sv_bool(&sv, "hca-init", s->hca_init);
    sv_bool(&sv, "cmd-busy", s->hcr[CHPP_HCR_CTRL / 4] & CHPP_HCR_GO);

    if (s->link.io) {
        chpp_link_io_stats(s->link.io, &io);
    }
    sv_begin(&sv, "link");
    sv_bool(&sv, "attached", link & CHPP_LINK_ATTACHED);
    sv_bool(&sv, "up", link & CHPP_LINK_UP);
    sv_u64(&sv, "peer-node", link >> CHPP_LINK_PEER_SHIFT);
    sv_bool(&sv, "reader-thread", s->link.io);
    sv_u64(&sv, "reader-ring-size", s->link.ring_size);
    sv_u64(&sv, "reader-ring-waits", io.ring_waits);
    sv_u64(&sv, "poll-reads", io.pulls);
    sv_u64(&sv, "reader-reads", io.reads);
    sv_u64(&sv, "loop-reads", io.loop_reads);
    sv_u64(&sv, "poll-stalls", io.stalls);
    sv_u64(&sv, "reader-early", io.early);
    sv_u64(&sv, "reader-away-us", io.away_us);
    sv_bool(&sv, "shm-rx", io.shm_rx);
    sv_bool(&sv, "shm-tx", io.shm_tx);
    sv_u64(&sv, "stray-fds", io.stray_fds);
    sv_u64(&sv, "spin-hits", io.spin_hits);
    sv_u64(&sv, "spin-misses", io.spin_misses);
    sv_u64(&sv, "acks-held", s->link.acks_held);
    sv_u64(&sv, "acks-held-timed-out", s->link.acks_timed_out);
    sv_u64(&sv, "requests-held", s->link.requests_held);
    chpp_state_link_vcs(&sv, s);
    sv_u64(&sv, "out-queue-records", s->link.outq ?
           g_queue_get_length(s->link.outq) : 0);
    sv_u64(&sv, "out-queue-bytes", s->link.out_bytes);
    sv_bool(&sv, "rx-paused", s->link.rx_paused);
    chpp_state_link_fabric(&sv, s);
    sv_end(&sv);

    sv_list(&sv, "ports");
    for (i = 0; i < CHPP_NUM_PORTS; i++) {
        sv_begin(&sv, NULL);
        sv_u64(&sv, "port", i + 1);
        sv_bool(&sv, "open", s->port_open[i]);
        sv_str(&sv, "state", abi_name(chpp_port_state_name(s->port_state[i])));
        /* ABI 1.6: what the SMA holds (docs/management-datagrams.md) */
        sv_u64(&sv, "lid", s->sma[i].lid);
        sv_u64(&sv, "sm-lid", s->sma[i].sm_lid);
        sv_u64(&sv, "cap-mask", s->sma[i].cap_mask);
        sv_bool(&sv, "wait-sm", s->sma[i].wait_sm);
        sv_end(&sv);
    }
    sv_end_list(&sv);

    sv_list(&sv, "multicast-groups");
    for (i = 0; i < CHPP_MAX_MCGS; i++) {
        if (s->mcgs[i].num_qps) {
            sv_begin(&sv, NULL);
            sv_u64(&sv, "mlid", s->mcgs[i].mlid);
            sv_u64(&sv, "qps", s->mcgs[i].num_qps);
            sv_u64(&sv, "first-qpn", s->mcgs[i].qpn[0]);
            sv_end(&sv);
        }
    }
    sv_end_list(&sv);

    sv_begin(&sv, "doorbell-fifo");
    sv_u64(&sv, "fill", s->db_count);
    sv_u64(&sv, "depth", CHPP_DB_FIFO_DEPTH);
    for (i = 0, n = 0; i < s->params.num_qps; i++) {
        n += !!(s->db_lost[i / 8] & (1u << (i % 8)));
    }
    sv_u64(&sv, "lost-qps", n);
    sv_bool(&sv, "event-unanswered", s->db_lost_qpn != CHPP_DB_LOST_NONE);
    sv_end(&sv);

    sv_begin(&sv, "doorbell-errors");
    sv_u64(&sv, "queued", s->db_err_count);
    sv_u64(&sv, "depth", CHPP_DB_ERR_QUEUE_DEPTH);
    sv_u64(&sv, "lost", s->db_err_lost);
    sv_end(&sv);

    sv_begin(&sv, "counters");
    for (i = 0; i < CHPP_CNT_NUM; i++) {
        /* The ABI's name in lower case with '-': "db-fifo-overflow". */
        g_autofree char *key = g_ascii_strdown(chpp_counter_name(i), -1);

        sv_u64(&sv, g_strdelimit(key, "_", '-'), s->counters[i]);
    }
    sv_end(&sv);

    chpp_state_eqs(s, &sv);
    chpp_state_cqs(s, &sv);
    chpp_state_mrs(s, &sv);
    chpp_state_srqs(s, &sv);
    chpp_state_qps(s, &sv);
    sv_end(&sv);
}

void chpp_debug_add_properties(Object *obj)
{
    object_property_add(obj, "state", "ChppHcaState", chpp_state_get, NULL,
                        NULL, NULL);
    object_property_set_description(obj, "state",
                                    "the device's tables and counters "
                                    "(read-only; qom-get)");
}
