/*
 * chpp-hca refused doorbells: the MMIO handler only counts, logs and
 * queues; the DOORBELL_ERROR EQE is written later, outside the vCPU.  With
 * the VM stopped nothing reaches guest memory until it runs again, the
 * queue is bounded (the surplus is dropped and counted), events keep their
 * order, and queued events survive migration.  A VF's FLR (a config space
 * write) queues its VF_FLR event on the PF the same way.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "standard-headers/linux/pci_regs.h"
#include "chpp-hca-qtest.h"

#define EQ_SIZE     128
#define UAR         1
#define CQN_NONE    5           /* never created: its doorbells are refused */
#define EQ_NONE     3           /* never created */

static uint64_t bad_cq_db(uint32_t ci)
{
    return (uint64_t)ci << CHPP_CQ_DB_CI_SHIFT |
           CHPP_CQ_DB_ARM_NEXT << CHPP_CQ_DB_CMD_SHIFT | CQN_NONE;
}

static void ring_bad_cq_db(ChppDev *d, uint32_t ci)
{
    qpci_io_writeq(d->pdev, d->bar2,
                   (uint64_t)UAR * CHPP_UAR_PAGE_SIZE + CHPP_UAR_CQ_DB,
                   bad_cq_db(ci));
}

static void qmp_ok(ChppDev *d, const char *cmd)
{
    qtest_qmp_assert_success(d->qts, "{ 'execute': %s }", cmd);
}

/* EQ 0 of EQ_SIZE entries gets the DOORBELL_ERROR and VF_FLR events. */
static uint64_t setup(ChppDev *d)
{
    uint64_t ring;

    chpp_init_hca(d);
    ring = chpp_create_eq(d, 0, EQ_SIZE, 0, false);
    g_assert_cmphex(chpp_map_eq(d, 0, 1ull << CHPP_EVENT_DOORBELL_ERROR |
                                1ull << CHPP_EVENT_VF_FLR, false), ==,
                    CHPP_STAT_OK);
    return ring;
}

static bool eqe_valid(ChppDev *d, uint64_t ring, uint32_t slot,
                      struct chpp_eqe *eqe)
{
    chpp_read_eqe(d, ring, slot, eqe);
    return le32_to_cpu(eqe->owner) == CHPP_EQE_OWNER;
}

/* Wait (main loop iterations and clock steps) for the EQE at @slot. */
static void wait_eqe(ChppDev *d, uint64_t ring, uint32_t slot,
                     struct chpp_eqe *eqe)
{
    int i;

    for (i = 0; i < 1000 && !eqe_valid(d, ring, slot, eqe); i++) {
        qtest_clock_step(d->qts, 1000);
    }
    g_assert(eqe_valid(d, ring, slot, eqe));
}

static void assert_cq_db_event(const struct chpp_eqe *eqe, uint32_t ci)
{
    g_assert_cmpuint(eqe->type, ==, CHPP_EVENT_DOORBELL_ERROR);
    g_assert_cmpuint(eqe->subtype, ==, CHPP_DB_ERR_BAD_VALUE);
    g_assert_cmphex(le32_to_cpu(eqe->event.db_error.offset), ==,
                    CHPP_UAR_CQ_DB);
    g_assert_cmpuint(le32_to_cpu(eqe->event.db_error.uar), ==, UAR);
    g_assert_cmphex(le32_to_cpu(eqe->event.db_error.value), ==,
                    (uint32_t)bad_cq_db(ci));
    /* The high half is the consumer index. */
    g_assert_cmphex(le32_to_cpu(eqe->event.db_error.value_hi), ==, ci);
}

/* Nothing is written while the VM stands still; all of it once it runs. */
static void test_deferred(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    uint64_t ring = setup(d);
    struct chpp_eqe eqe;
    int i;

    qmp_ok(d, "stop");
    ring_bad_cq_db(d, 0x123456);
    /* The handler counted and logged it... */
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_DB_ERRORS), ==, 1);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, 1);
    /* ...but wrote no guest memory, however long the VM stays stopped. */
    for (i = 0; i < 20; i++) {
        g_assert_false(eqe_valid(d, ring, 0, &eqe));
        g_assert_cmpuint(eqe.type, ==, 0);
        g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS), ==, 0);
    }
    qmp_ok(d, "cont");
    wait_eqe(d, ring, 0, &eqe);
    assert_cq_db_event(&eqe, 0x123456);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS), ==, 1);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS_DROPPED), ==, 0);
    chpp_stop(d);
}

/*
 * CHPP_DB_ERR_QUEUE_DEPTH events wait at most, in order (a BAR0 EQ
 * doorbell and UAR doorbells share the queue); the rest are dropped and
 * counted, while every refused doorbell is still counted and logged.
 */
static void test_bounded_in_order(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    uint64_t ring = setup(d);
    struct chpp_eqe eqe;
    uint32_t i, extra = 3;

    qmp_ok(d, "stop");
    chpp_eq_db(d, EQ_NONE, 7, false);
    for (i = 0; i < CHPP_DB_ERR_QUEUE_DEPTH - 1 + extra; i++) {
        ring_bad_cq_db(d, i);
    }
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_DB_ERRORS), ==,
                     CHPP_DB_ERR_QUEUE_DEPTH + extra);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==,
                     CHPP_DB_ERR_QUEUE_DEPTH + extra);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS_DROPPED), ==, extra);
    g_assert_false(eqe_valid(d, ring, 0, &eqe));
    qmp_ok(d, "cont");

    wait_eqe(d, ring, CHPP_DB_ERR_QUEUE_DEPTH - 1, &eqe);
    chpp_read_eqe(d, ring, 0, &eqe);
    g_assert_cmpuint(eqe.type, ==, CHPP_EVENT_DOORBELL_ERROR);
    g_assert_cmphex(le32_to_cpu(eqe.event.db_error.offset), ==,
                    CHPP_REG_EQ_DB(EQ_NONE));
    g_assert_cmphex(le32_to_cpu(eqe.event.db_error.value), ==, 7);
    g_assert_cmphex(le32_to_cpu(eqe.event.db_error.value_hi), ==, 0);
    g_assert_cmphex(le32_to_cpu(eqe.event.db_error.uar), ==,
                    CHPP_DB_ERR_UAR_NONE);
    for (i = 1; i < CHPP_DB_ERR_QUEUE_DEPTH; i++) {
        g_assert(eqe_valid(d, ring, i, &eqe));
        assert_cq_db_event(&eqe, i - 1);
    }
    qtest_clock_step(d->qts, 1000000);
    g_assert_false(eqe_valid(d, ring, CHPP_DB_ERR_QUEUE_DEPTH, &eqe));
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS), ==,
                     CHPP_DB_ERR_QUEUE_DEPTH);

    /* The queue drained: the next refused doorbell is reported again. */
    ring_bad_cq_db(d, 0xabcdef);
    wait_eqe(d, ring, CHPP_DB_ERR_QUEUE_DEPTH, &eqe);
    assert_cq_db_event(&eqe, 0xabcdef);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS_DROPPED), ==, extra);
    chpp_stop(d);
}

/* Migrate the stopped @src to a new QEMU; @src stays (stopped). */
static ChppDev *migrate_to_new(ChppDev *src)
{
    g_autofree char *tmpdir = g_dir_make_tmp("chpp-dberr-XXXXXX", NULL);
    g_autofree char *uri = g_strdup_printf("unix:%s/mig", tmpdir);
    g_autofree char *sock = g_strdup_printf("%s/mig", tmpdir);
    ChppDev *dst = chpp_start_incoming(NULL, uri);

    migrate(src->qs, dst->qs, uri);
    chpp_adopt_migrated(dst, src);
    unlink(sock);
    rmdir(tmpdir);
    return dst;
}

/* An event still queued when the state is saved is posted on arrival. */
static void test_migrated(void)
{
    ChppDev *src = chpp_start(NULL, NULL);
    uint64_t ring = setup(src);
    struct chpp_eqe eqe;
    ChppDev *dst;

    qmp_ok(src, "stop");
    ring_bad_cq_db(src, 0x654321);
    g_assert_false(eqe_valid(src, ring, 0, &eqe));

    dst = migrate_to_new(src);
    g_assert_cmpuint(chpp_counter(dst, CHPP_CNT_DB_ERRORS), ==, 1);
    g_assert_false(eqe_valid(dst, ring, 0, &eqe));
    qmp_ok(dst, "cont");
    wait_eqe(dst, ring, 0, &eqe);
    assert_cq_db_event(&eqe, 0x654321);
    g_assert_cmpuint(chpp_counter(dst, CHPP_CNT_EVENTS), ==, 1);
    chpp_stop(src);
    chpp_stop(dst);
}

/* The device's state property: doorbell-errors.lost. */
static uint64_t db_err_lost(ChppDev *d)
{
    QDict *rsp = qtest_qmp(d->qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': '/machine/peripheral-anon/device[0]', "
                           "'property': 'state'}}");
    QDict *st = qdict_get_qdict(qdict_get_qdict(rsp, "return"),
                                "doorbell-errors");
    uint64_t lost = qdict_get_int(st, "lost");

    qobject_unref(rsp);
    return lost;
}

/*
 * Events dropped from a full queue stay counted across migration even
 * when nothing waits any more at the stop.
 */
static void test_lost_migrated(void)
{
    ChppDev *src = chpp_start(NULL, NULL);
    uint64_t ring = setup(src);
    struct chpp_eqe eqe;
    ChppDev *dst;
    uint32_t i, extra = 2;

    qmp_ok(src, "stop");
    for (i = 0; i < CHPP_DB_ERR_QUEUE_DEPTH + extra; i++) {
        ring_bad_cq_db(src, i);
    }
    qmp_ok(src, "cont");
    wait_eqe(src, ring, CHPP_DB_ERR_QUEUE_DEPTH - 1, &eqe);
    g_assert_cmpuint(db_err_lost(src), ==, extra);
    qmp_ok(src, "stop");

    dst = migrate_to_new(src);
    g_assert_cmpuint(db_err_lost(dst), ==, extra);
    g_assert_cmpuint(chpp_counter(dst, CHPP_CNT_EVENTS_DROPPED), ==, extra);
    chpp_stop(src);
    chpp_stop(dst);
}

/* The device's state property: doorbell-fifo.@key (a number or bool). */
static uint64_t db_fifo_state(ChppDev *d, const char *key)
{
    QDict *rsp = qtest_qmp(d->qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': '/machine/peripheral-anon/device[0]', "
                           "'property': 'state'}}");
    QDict *st = qdict_get_qdict(qdict_get_qdict(rsp, "return"),
                                "doorbell-fifo");
    QObject *o = qdict_get(st, key);
    uint64_t v = qobject_type(o) == QTYPE_QBOOL ?
                 qbool_get_bool(qobject_to(QBool, o)) : qdict_get_int(st, key);

    qobject_unref(rsp);
    return v;
}

/* QP @qpn in INIT on UAR: its SQ doorbells take FIFO entries, no work. */
static void init_qp(ChppDev *d, uint32_t qpn)
{
    struct chpp_qp_context c = {
        .type = CHPP_QPT_RC, .port = 1,
        .log_sq_size = 6, .log_sq_stride = 6,
        .log_rq_size = 2, .log_rq_stride = 6,
        .uar = cpu_to_le16(UAR), .magic = 0x42,
    };

    chpp_create_cq(d, 0, 64, 0, UAR);
    chpp_qp_alloc_rings(d, &c, NULL, NULL);
    g_assert_cmphex(chpp_modify_qp(d, CHPP_CMD_RST2INIT_QP, qpn,
                                   CHPP_QP_ATTR_PKEY_INDEX |
                                   CHPP_QP_ATTR_PORT |
                                   CHPP_QP_ATTR_ACCESS_FLAGS, &c), ==,
                    CHPP_STAT_OK);
}

/*
 * A doorbell lost to a full FIFO is never lost to a full event queue: its
 * FIFO_OVERFLOW event takes the place of the newest refused doorbell's.
 * The lost state and the waiting event survive migration.
 */
static void test_fifo_overflow_kept(void)
{
    ChppDev *src = chpp_start("num-qps=4", NULL);
    uint64_t ring = setup(src);
    g_autofree struct chpp_db_lost *lost = g_new0(struct chpp_db_lost, 1);
    struct chpp_eqe eqe;
    ChppDev *dst;
    uint32_t i;

    init_qp(src, 3);
    qmp_ok(src, "stop");
    for (i = 0; i < CHPP_DB_ERR_QUEUE_DEPTH; i++) {
        ring_bad_cq_db(src, i);
    }
    for (i = 1; i <= CHPP_DB_FIFO_DEPTH + 1; i++) {
        chpp_sq_db(src, UAR, 3, i);
    }
    g_assert_cmpuint(chpp_counter(src, CHPP_CNT_DB_FIFO_OVERFLOW), ==, 1);
    g_assert_cmpuint(chpp_counter(src, CHPP_CNT_EVENTS_DROPPED), ==, 1);
    g_assert_cmpuint(db_fifo_state(src, "lost-qps"), ==, 1);

    dst = migrate_to_new(src);
    g_assert_cmpuint(db_fifo_state(dst, "lost-qps"), ==, 1);
    g_assert_cmpuint(db_fifo_state(dst, "event-unanswered"), ==, 1);
    qmp_ok(dst, "cont");
    wait_eqe(dst, ring, CHPP_DB_ERR_QUEUE_DEPTH - 1, &eqe);
    g_assert_cmpuint(eqe.type, ==, CHPP_EVENT_DOORBELL_ERROR);
    g_assert_cmpuint(eqe.subtype, ==, CHPP_DB_ERR_FIFO_OVERFLOW);
    g_assert_cmphex(le32_to_cpu(eqe.event.db_error.offset), ==,
                    CHPP_UAR_SQ_DB);
    g_assert_cmpuint(le32_to_cpu(eqe.event.db_error.uar), ==, UAR);
    g_assert_cmphex(le32_to_cpu(eqe.event.db_error.value), ==,
                    3 << CHPP_UAR_DB_QPN_SHIFT | (CHPP_DB_FIFO_DEPTH + 1));
    for (i = 0; i < CHPP_DB_ERR_QUEUE_DEPTH - 1; i++) {
        g_assert(eqe_valid(dst, ring, i, &eqe));
        assert_cq_db_event(&eqe, i);
    }
    g_assert_cmphex(chpp_cmd(dst, CHPP_CMD_QUERY_DB_LOST, 0, 0,
                             dst->mbox_out), ==, CHPP_STAT_OK);
    qtest_memread(dst->qts, dst->mbox_out, lost, sizeof(*lost));
    g_assert_cmpuint(le32_to_cpu(lost->count), ==, 1);
    g_assert_cmpuint(le32_to_cpu(lost->num_qps), ==, 4);
    g_assert_cmphex(lost->qps[0], ==, 1 << 3);
    g_assert_cmpuint(db_fifo_state(dst, "lost-qps"), ==, 0);
    g_assert_cmpuint(db_fifo_state(dst, "event-unanswered"), ==, 0);
    chpp_stop(src);
    chpp_stop(dst);
}

static void vf_flr(ChppDev *vf)
{
    uint16_t devctl = qpci_config_readw(vf->pdev,
                                        CHPP_PCI_CAP_EXP + PCI_EXP_DEVCTL);

    qpci_config_writew(vf->pdev, CHPP_PCI_CAP_EXP + PCI_EXP_DEVCTL,
                       devctl | PCI_EXP_DEVCTL_BCR_FLR);
}

static void assert_vf_flr_event(const struct chpp_eqe *eqe, uint32_t vf)
{
    g_assert_cmpuint(eqe->type, ==, CHPP_EVENT_VF_FLR);
    g_assert_cmpuint(eqe->subtype, ==, 0);
    g_assert_cmpuint(le32_to_cpu(eqe->event.vf.vf), ==, vf);
}

/*
 * A VF's FLR, a config space write, writes no EQE there either: with the
 * VM stopped nothing appears until it runs, then the PF's events come in
 * the order of their causes.  FLRs of a VF while its event waits are told
 * by that one event.
 */
static void test_vf_flr_deferred(void)
{
    ChppPf *p = chpp_pf_start(NULL, NULL);
    ChppDev *d = p->d;
    uint64_t ring;
    struct chpp_eqe eqe;
    int i;

    chpp_pf_vfs_set(p, 2);
    ring = setup(d);
    qmp_ok(d, "stop");
    ring_bad_cq_db(d, 1);
    vf_flr(p->vf[2]);
    vf_flr(p->vf[1]);
    vf_flr(p->vf[2]);
    ring_bad_cq_db(d, 2);
    for (i = 0; i < 20; i++) {
        g_assert_false(eqe_valid(d, ring, 0, &eqe));
        g_assert_cmpuint(eqe.type, ==, 0);
        g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS), ==, 0);
    }
    qmp_ok(d, "cont");
    wait_eqe(d, ring, 3, &eqe);
    chpp_read_eqe(d, ring, 0, &eqe);
    assert_cq_db_event(&eqe, 1);
    chpp_read_eqe(d, ring, 1, &eqe);
    assert_vf_flr_event(&eqe, 2);
    chpp_read_eqe(d, ring, 2, &eqe);
    assert_vf_flr_event(&eqe, 1);
    chpp_read_eqe(d, ring, 3, &eqe);
    assert_cq_db_event(&eqe, 2);
    qtest_clock_step(d->qts, 1000000);
    g_assert_false(eqe_valid(d, ring, 4, &eqe));
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS), ==, 4);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS_DROPPED), ==, 0);

    /* The VM running, the event follows the FLR shortly. */
    vf_flr(p->vf[1]);
    wait_eqe(d, ring, 4, &eqe);
    assert_vf_flr_event(&eqe, 1);
    chpp_pf_stop(p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    if (!qtest_has_machine("q35")) {
        g_test_message("q35 machine missing: this QEMU cannot run chpp-hca");
        return 1;
    }
    qtest_add_func("/chpp-hca/db-error/deferred", test_deferred);
    qtest_add_func("/chpp-hca/db-error/bounded-in-order",
                   test_bounded_in_order);
    qtest_add_func("/chpp-hca/db-error/migrated", test_migrated);
    qtest_add_func("/chpp-hca/db-error/lost-migrated", test_lost_migrated);
    qtest_add_func("/chpp-hca/db-error/fifo-overflow-kept",
                   test_fifo_overflow_kept);
    qtest_add_func("/chpp-hca/db-error/vf-flr-deferred",
                   test_vf_flr_deferred);
    return g_test_run();
}
