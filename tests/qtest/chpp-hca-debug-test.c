/*
 * chpp-hca observability tests: the QOM "state" view read from QMP against
 * known device state, QUERY_STATS, and trace events of a scripted
 * sequence.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "chpp-hca-qtest.h"

#define DEV_PATH "/machine/peripheral/hca"

static QDict *get_state(ChppDev *d)
{
    QDict *rsp = qtest_qmp(d->qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': %s, 'property': 'state'}}", DEV_PATH);
    QDict *st = qdict_get_qdict(rsp, "return");

    g_assert(st);
    qobject_ref(st);
    qobject_unref(rsp);
    return st;
}

static QDict *nth(QDict *st, const char *list, unsigned n)
{
    QList *l = qdict_get_qlist(st, list);
    QListEntry *e;

    g_assert(l);
    QLIST_FOREACH_ENTRY(l, e) {
        if (!n--) {
            return qobject_to(QDict, qlist_entry_obj(e));
        }
    }
    g_assert_not_reached();
}

static void test_state_view(void)
{
    ChppDev *d = chpp_start("id=hca,node-id=4", NULL);
    struct chpp_qp_context c = {
        .type = CHPP_QPT_RC, .port = 1, .pd = cpu_to_le32(3),
        .send_cqn = cpu_to_le32(1), .recv_cqn = cpu_to_le32(1),
        .log_sq_size = 3, .log_sq_stride = 7,
        .log_rq_size = 3, .log_rq_stride = 7,
        .uar = cpu_to_le16(2), .magic = 0x42,
    };
    uint64_t buf = guest_alloc(&d->qs->alloc, 8192);
    QDict *st, *x, *counters;

    chpp_init_hca(d);
    chpp_create_eq(d, 1, 16, 2, true);
    chpp_create_cq(d, 1, 32, 1, 2);
    chpp_create_mr(d, 5, 3, buf, 8192, CHPP_MPT_LOCAL_WRITE);
    chpp_qp_alloc_rings(d, &c, NULL, NULL);
    g_assert_cmphex(chpp_modify_qp(d, CHPP_CMD_RST2INIT_QP, 2,
                                   CHPP_QP_ATTR_PKEY_INDEX |
                                   CHPP_QP_ATTR_PORT |
                                   CHPP_QP_ATTR_ACCESS_FLAGS, &c), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_INIT_PORT, 0, 1, 0), ==,
                    CHPP_STAT_OK);

    st = get_state(d);
    g_assert_cmpuint(qdict_get_int(st, "node-id"), ==, 4);
    g_assert(qdict_get_bool(st, "hca-init"));
    g_assert_false(qdict_get_bool(qdict_get_qdict(st, "link"), "attached"));
    g_assert_cmpstr(qdict_get_str(nth(st, "ports", 0), "state"), ==,
                    "ACTIVE");
    x = nth(st, "eqs", 0);
    g_assert_cmpuint(qdict_get_int(x, "eqn"), ==, 1);
    g_assert_cmpuint(qdict_get_int(x, "entries"), ==, 16);
    g_assert_cmpuint(qdict_get_int(x, "vector"), ==, 2);
    g_assert(qdict_get_bool(x, "armed"));
    x = nth(st, "cqs", 0);
    g_assert_cmpuint(qdict_get_int(x, "cqn"), ==, 1);
    g_assert_cmpuint(qdict_get_int(x, "qps"), ==, 2);
    g_assert_cmpstr(qdict_get_str(x, "arm"), ==, "no");
    x = nth(st, "mrs", 0);
    g_assert_cmpuint(qdict_get_int(x, "index"), ==, 5);
    g_assert_cmphex(qdict_get_int(x, "start"), ==, buf);
    g_assert_cmpuint(qdict_get_int(x, "length"), ==, 8192);
    x = nth(st, "qps", 0);
    g_assert_cmpuint(qdict_get_int(x, "qpn"), ==, 2);
    g_assert_cmpstr(qdict_get_str(x, "type"), ==, "RC");
    g_assert_cmpstr(qdict_get_str(x, "state"), ==, "INIT");
    g_assert_cmpuint(qdict_get_int(x, "magic"), ==, 0x42);
    g_assert_cmpstr(qdict_get_str(x, "timer"), ==, "none");
    counters = qdict_get_qdict(st, "counters");
    g_assert_cmpuint(qdict_size(counters), ==, CHPP_CNT_NUM);
    g_assert_cmpuint(qdict_get_int(counters, "cmds"), ==,
                     chpp_counter(d, CHPP_CNT_CMDS));
    g_assert_cmpuint(qdict_get_int(counters, "events"), ==,
                     chpp_counter(d, CHPP_CNT_EVENTS));
    qobject_unref(st);

    /* Moving a QP shows at once. */
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_2ERR_QP, 0, 2, 0), ==, CHPP_STAT_OK);
    st = get_state(d);
    g_assert_cmpstr(qdict_get_str(nth(st, "qps", 0), "state"), ==, "ERR");
    qobject_unref(st);
    chpp_stop(d);
}

static void test_query_stats(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    struct chpp_stats stats;
    unsigned i;

    chpp_cmd(d, 0x7ff, 0, 0, 0);          /* a failing command */
    chpp_rd(d, 0x1ffc);                   /* a bad register read */
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_QUERY_STATS, 0, 0, d->mbox_out), ==,
                    CHPP_STAT_OK);
    qtest_memread(d->qts, d->mbox_out, &stats, sizeof(stats));
    g_assert_cmpuint(le32_to_cpu(stats.num_counters), ==, CHPP_CNT_NUM);
    for (i = 0; i < CHPP_CNT_NUM; i++) {
        /* The registers moved on by exactly this command. */
        uint32_t reg = chpp_counter(d, i);

        g_assert_cmpuint(le32_to_cpu(stats.counters[i]), ==,
                         i == CHPP_CNT_CMDS ? reg - 1 : reg);
    }
    g_assert_cmpuint(le32_to_cpu(stats.counters[CHPP_CNT_CMD_ERRORS]), ==, 1);
    g_assert_cmpuint(le32_to_cpu(stats.counters[CHPP_CNT_GUEST_ERRORS]), ==,
                     2);
    /* Read and clear. */
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_QUERY_STATS, 0, CHPP_STATS_CLEAR,
                             d->mbox_out), ==, CHPP_STAT_OK);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, 0);
    /* ... and then the clearing command itself is counted. */
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_CMDS), ==, 1);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_PARAM, CHPP_CMD_QUERY_STATS, 0, 2,
                          d->mbox_out);
    chpp_stop(d);
}

/* A scripted sequence leaves the expected trace lines. */
static void test_trace_events(void)
{
    g_autofree char *dir = g_dir_make_tmp("chpp-trace-XXXXXX", NULL);
    g_autofree char *log = g_strdup_printf("%s/trace.log", dir);
    g_autofree char *extra = g_strdup_printf("-trace 'chpp_hca_*' -D %s",
                                             log);
    g_autofree char *text = NULL;
    ChppDev *d = chpp_start(NULL, extra);
    static const char *const expect[] = {
        "chpp_hca_cmd_issue fn 0 INIT_HCA",
        "chpp_hca_cmd_done fn 0 INIT_HCA status 0x00",
        "chpp_hca_eq_create fn 0 EQ 0 ",
        "chpp_hca_map_eq fn 0 EQ 0 ",
        "chpp_hca_cmd_issue fn 0 NOP (0x031) in_mod 0x0 event 1 token 0x1234",
        "chpp_hca_eqe fn 0 EQ 0 pi 0 type 0x0a",
        "chpp_hca_cmd_done fn 0 UNKNOWN status 0x02",
        "chpp_hca_err_guest fn 0: command UNKNOWN: unknown opcode 0x7ff",
        "chpp_hca_reg_read fn 0 BAR0+0x0 -> 0x50504843",
    };
    unsigned i;

    chpp_init_hca(d);
    chpp_create_eq(d, 0, 8, 0, false);
    chpp_map_eq(d, 0, 1ull << CHPP_EVENT_CMD, false);
    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, true, 0x1234);
    chpp_cmd_wait(d, NULL);
    chpp_cmd(d, 0x7ff, 0, 0, 0);
    chpp_rd(d, CHPP_REG_MAGIC);
    chpp_stop(d);

    g_assert(g_file_get_contents(log, &text, NULL, NULL));
    for (i = 0; i < ARRAY_SIZE(expect); i++) {
        if (!strstr(text, expect[i])) {
            g_error("trace line missing: %s", expect[i]);
        }
    }
    unlink(log);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/chpp-hca/debug/state-view", test_state_view);
    qtest_add_func("/chpp-hca/debug/query-stats", test_query_stats);
    qtest_add_func("/chpp-hca/debug/trace-events", test_trace_events);
    return g_test_run();
}
