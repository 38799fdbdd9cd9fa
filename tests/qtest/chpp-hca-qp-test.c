/*
 * chpp-hca QP tests: the modify-QP state machine, attribute masks and
 * values, creation fields, CQ references, QUERY_QP and migration.
 *
 * Every result is checked with QUERY_QP: the whole context the device
 * reports is compared with a model kept by the test.  Every refused command
 * must leave the QP exactly as it was and count one guest error.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "chpp-hca-qtest.h"

#define NUM_QPS     16
#define PROPS       "num-qps=16,num-cqs=8,num-pds=16,uar-pages=4"
#define NUM_PDS     16
#define NUM_CQS     8
#define NUM_UARS    4
#define NUM_TYPES   3

/* Attribute bits (Linux ib_qp_attr_mask names, shortened). */
#define CUR         CHPP_QP_ATTR_CUR_STATE
#define SQD_NTF     CHPP_QP_ATTR_EN_SQD_ASYNC_NOTIFY
#define ACCESS      CHPP_QP_ATTR_ACCESS_FLAGS
#define PKEY        CHPP_QP_ATTR_PKEY_INDEX
#define PORT        CHPP_QP_ATTR_PORT
#define QKEY        CHPP_QP_ATTR_QKEY
#define AV          CHPP_QP_ATTR_AV
#define MTU         CHPP_QP_ATTR_PATH_MTU
#define TIMEOUT     CHPP_QP_ATTR_TIMEOUT
#define RETRY       CHPP_QP_ATTR_RETRY_CNT
#define RNR_RETRY   CHPP_QP_ATTR_RNR_RETRY
#define RQ_PSN      CHPP_QP_ATTR_RQ_PSN
#define RD_ATOM     CHPP_QP_ATTR_MAX_QP_RD_ATOMIC
#define ALT         CHPP_QP_ATTR_ALT_PATH
#define RNR_TMR     CHPP_QP_ATTR_MIN_RNR_TIMER
#define SQ_PSN      CHPP_QP_ATTR_SQ_PSN
#define DEST_RD     CHPP_QP_ATTR_MAX_DEST_RD_ATOMIC
#define MIG         CHPP_QP_ATTR_PATH_MIG_STATE
#define CAP         CHPP_QP_ATTR_CAP
#define DEST_QPN    CHPP_QP_ATTR_DEST_QPN
#define ATTR_BITS   21

/* Linux's qp_state_table for RC, UC, UD (valid, required, optional). */
typedef struct TransRule {
    uint16_t opcode;
    const char *name;
    uint8_t from;           /* state the QP must be in (0xff: see below) */
    uint8_t to;
    bool valid[NUM_TYPES];
    uint32_t req[NUM_TYPES];
    uint32_t opt[NUM_TYPES];
} TransRule;

static const TransRule rules[] = {
    { CHPP_CMD_RST2INIT_QP, "RST2INIT", CHPP_QPS_RESET, CHPP_QPS_INIT,
      { 1, 1, 1 },
      { PKEY | PORT | ACCESS, PKEY | PORT | ACCESS, PKEY | PORT | QKEY },
      { 0, 0, 0 } },
    { CHPP_CMD_INIT2INIT_QP, "INIT2INIT", CHPP_QPS_INIT, CHPP_QPS_INIT,
      { 1, 1, 1 }, { 0, 0, 0 },
      { PKEY | PORT | ACCESS, PKEY | PORT | ACCESS, PKEY | PORT | QKEY } },
    { CHPP_CMD_INIT2RTR_QP, "INIT2RTR", CHPP_QPS_INIT, CHPP_QPS_RTR,
      { 1, 1, 1 },
      { AV | MTU | DEST_QPN | RQ_PSN | DEST_RD | RNR_TMR,
        AV | MTU | DEST_QPN | RQ_PSN, 0 },
      { ALT | ACCESS | PKEY, ALT | ACCESS | PKEY, PKEY | QKEY } },
    { CHPP_CMD_RTR2RTS_QP, "RTR2RTS", CHPP_QPS_RTR, CHPP_QPS_RTS,
      { 1, 1, 1 },
      { TIMEOUT | RETRY | RNR_RETRY | SQ_PSN | RD_ATOM, SQ_PSN, SQ_PSN },
      { CUR | ALT | ACCESS | RNR_TMR | MIG, CUR | ALT | ACCESS | MIG,
        CUR | QKEY } },
    { CHPP_CMD_RTS2RTS_QP, "RTS2RTS", CHPP_QPS_RTS, CHPP_QPS_RTS,
      { 1, 1, 1 }, { 0, 0, 0 },
      { CUR | ACCESS | ALT | MIG | RNR_TMR, CUR | ACCESS | ALT | MIG,
        CUR | QKEY } },
    { CHPP_CMD_RTS2SQD_QP, "RTS2SQD", CHPP_QPS_RTS, CHPP_QPS_SQD,
      { 1, 1, 1 }, { 0, 0, 0 }, { SQD_NTF, SQD_NTF, SQD_NTF } },
    { CHPP_CMD_SQD2SQD_QP, "SQD2SQD", CHPP_QPS_SQD, CHPP_QPS_SQD,
      { 1, 1, 1 }, { 0, 0, 0 },
      { PORT | AV | TIMEOUT | RETRY | RNR_RETRY | RD_ATOM | DEST_RD | ALT |
        ACCESS | PKEY | RNR_TMR | MIG,
        AV | ALT | ACCESS | PKEY | MIG, PKEY | QKEY } },
    { CHPP_CMD_SQD2RTS_QP, "SQD2RTS", CHPP_QPS_SQD, CHPP_QPS_RTS,
      { 1, 1, 1 }, { 0, 0, 0 },
      { CUR | ALT | ACCESS | RNR_TMR | MIG, CUR | ALT | ACCESS | MIG,
        CUR | QKEY } },
    { CHPP_CMD_SQERR2RTS_QP, "SQERR2RTS", CHPP_QPS_SQE, CHPP_QPS_RTS,
      { 0, 1, 1 }, { 0, 0, 0 }, { 0, CUR | ACCESS, CUR | QKEY } },
};

/* Modify opcodes, including the mailbox-less ones. */
static const uint16_t all_modify_ops[] = {
    CHPP_CMD_RST2INIT_QP, CHPP_CMD_INIT2INIT_QP, CHPP_CMD_INIT2RTR_QP,
    CHPP_CMD_RTR2RTS_QP, CHPP_CMD_RTS2RTS_QP, CHPP_CMD_RTS2SQD_QP,
    CHPP_CMD_SQD2SQD_QP, CHPP_CMD_SQD2RTS_QP, CHPP_CMD_SQERR2RTS_QP,
    CHPP_CMD_2ERR_QP, CHPP_CMD_2RST_QP,
};

/* States a test can reach without the datapath (SQE needs a failed WQE). */
static const uint8_t reachable_states[] = {
    CHPP_QPS_RESET, CHPP_QPS_INIT, CHPP_QPS_RTR, CHPP_QPS_RTS,
    CHPP_QPS_SQD, CHPP_QPS_ERR,
};

static const uint8_t types[NUM_TYPES] = {
    CHPP_QPT_RC, CHPP_QPT_UC, CHPP_QPT_UD
};

static const TransRule *rule_of(uint16_t opcode)
{
    size_t i;

    for (i = 0; i < ARRAY_SIZE(rules); i++) {
        if (rules[i].opcode == opcode) {
            return &rules[i];
        }
    }
    return NULL;
}

/* The opcode is accepted from @state for @type. */
static bool op_allowed(uint16_t opcode, uint8_t state, uint8_t type)
{
    const TransRule *r = rule_of(opcode);

    if (opcode == CHPP_CMD_2RST_QP) {
        return true;
    }
    if (opcode == CHPP_CMD_2ERR_QP) {
        return state != CHPP_QPS_RESET;
    }
    return r && r->from == state && r->valid[type];
}

/* ---- fixture ----------------------------------------------------------- */

typedef struct QpTest {
    ChppDev *d;
    uint64_t eq_ring;               /* EQ 0: SQ_DRAINED events */
    uint64_t sq_ring;               /* the SQ ring every QP uses */
    struct chpp_qp_context create;  /* creation fields, valid */
    struct chpp_qp_context attrs;   /* every attribute, valid */
    struct chpp_qp_context model[NUM_QPS]; /* what QUERY_QP must return */
} QpTest;

static QpTest *qp_test_start(void)
{
    QpTest *t = g_new0(QpTest, 1);
    struct chpp_qp_context *c = &t->create;
    struct chpp_qp_context *a = &t->attrs;

    t->d = chpp_start(PROPS, NULL);
    chpp_init_hca(t->d);
    t->eq_ring = chpp_create_eq(t->d, 0, 64, 0, false);
    g_assert_cmphex(chpp_map_eq(t->d, 0, 1ull << CHPP_EVENT_SQ_DRAINED,
                                false), ==, CHPP_STAT_OK);
    chpp_create_cq(t->d, 0, 64, 0, 1);
    chpp_create_cq(t->d, 1, 64, 0, 1);
    chpp_create_cq(t->d, 2, 64, 0, 1);

    c->pd = cpu_to_le32(3);
    c->send_cqn = cpu_to_le32(0);
    c->recv_cqn = cpu_to_le32(1);
    c->log_sq_size = 4;
    c->log_sq_stride = 7;
    c->log_rq_size = 3;
    c->log_rq_stride = 6;
    chpp_qp_alloc_rings(t->d, c, &t->sq_ring, NULL);
    c->uar = cpu_to_le16(2);
    c->magic = 0x5c;
    c->flags = CHPP_QP_FLAG_SQ_SIG_ALL;

    a->port = 1;
    a->pkey_index = 0;
    a->access_flags = cpu_to_le32(CHPP_ACCESS_REMOTE_WRITE |
                                  CHPP_ACCESS_REMOTE_READ);
    a->qkey = cpu_to_le32(0x11112222);
    a->dest_node = cpu_to_le32(1);
    a->dest_vf = 0;
    a->dest_magic = 0x33;
    a->path_mtu = 3;
    a->dest_qpn = cpu_to_le32(5);
    a->rq_psn = cpu_to_le32(0x123456);
    a->max_dest_rd_atomic = 4;
    a->min_rnr_timer = 12;
    a->timeout = 14;
    a->retry_cnt = 7;
    a->rnr_retry = 6;
    a->sq_psn = cpu_to_le32(0xabcdef);
    a->max_rd_atomic = 8;
    return t;
}

static void qp_test_stop(QpTest *t)
{
    chpp_stop(t->d);
    g_free(t);
}

/* The mailbox context: creation fields (read by RST2INIT) + attributes. */
static struct chpp_qp_context full_ctx(QpTest *t, uint8_t type)
{
    struct chpp_qp_context c = t->attrs;

    c.type = type;
    c.pd = t->create.pd;
    c.send_cqn = t->create.send_cqn;
    c.recv_cqn = t->create.recv_cqn;
    c.sq_mtt_base = t->create.sq_mtt_base;
    c.rq_mtt_base = t->create.rq_mtt_base;
    c.log_sq_size = t->create.log_sq_size;
    c.log_sq_stride = t->create.log_sq_stride;
    c.log_rq_size = t->create.log_rq_size;
    c.log_rq_stride = t->create.log_rq_stride;
    c.sq_log_page_size = t->create.sq_log_page_size;
    c.rq_log_page_size = t->create.rq_log_page_size;
    c.uar = t->create.uar;
    c.magic = t->create.magic;
    c.flags = t->create.flags;
    return c;
}

/* What a successful modify does to the context QUERY_QP reports. */
static void model_apply(struct chpp_qp_context *m, uint16_t opcode,
                        uint32_t mask, const struct chpp_qp_context *c)
{
    const TransRule *r = rule_of(opcode);

    if (opcode == CHPP_CMD_2RST_QP) {
        memset(m, 0, sizeof(*m));
        return;
    }
    if (opcode == CHPP_CMD_2ERR_QP) {
        m->state = CHPP_QPS_ERR;
        return;
    }
    g_assert(r);
    if (opcode == CHPP_CMD_RST2INIT_QP) {
        m->type = c->type;
        m->pd = c->pd;
        m->send_cqn = c->send_cqn;
        m->recv_cqn = c->recv_cqn;
        m->sq_mtt_base = c->sq_mtt_base;
        m->rq_mtt_base = c->rq_mtt_base;
        m->log_sq_size = c->log_sq_size;
        m->log_sq_stride = c->log_sq_stride;
        m->log_rq_size = c->log_rq_size;
        m->log_rq_stride = c->log_rq_stride;
        m->sq_log_page_size = c->sq_log_page_size;
        m->rq_log_page_size = c->rq_log_page_size;
        m->uar = c->uar;
        m->magic = c->magic;
        m->flags = c->flags;
        if (c->type == CHPP_QPT_UD) {
            m->path_mtu = CHPP_MTU_4096;
        }
    }
    if (mask & PORT) {
        m->port = c->port;
    }
    if (mask & PKEY) {
        m->pkey_index = c->pkey_index;
    }
    if (mask & ACCESS) {
        m->access_flags = c->access_flags;
    }
    if (mask & QKEY) {
        m->qkey = c->qkey;
    }
    if (mask & AV) {
        m->dest_node = c->dest_node;
        m->dest_vf = c->dest_vf;
        m->dest_magic = c->dest_magic;
    }
    if (mask & MTU) {
        m->path_mtu = c->path_mtu;
    }
    if (mask & TIMEOUT) {
        m->timeout = c->timeout;
    }
    if (mask & RETRY) {
        m->retry_cnt = c->retry_cnt;
    }
    if (mask & RNR_RETRY) {
        m->rnr_retry = c->rnr_retry;
    }
    if (mask & RQ_PSN) {
        m->rq_psn = c->rq_psn;
    }
    if (mask & RD_ATOM) {
        m->max_rd_atomic = c->max_rd_atomic;
    }
    if (mask & RNR_TMR) {
        m->min_rnr_timer = c->min_rnr_timer;
    }
    if (mask & SQ_PSN) {
        m->sq_psn = c->sq_psn;
    }
    if (mask & DEST_RD) {
        m->max_dest_rd_atomic = c->max_dest_rd_atomic;
    }
    if (mask & DEST_QPN) {
        m->dest_qpn = c->dest_qpn;
    }
    if (opcode == CHPP_CMD_RTS2SQD_QP) {
        m->en_sqd_async_notify = (mask & SQD_NTF) && c->en_sqd_async_notify;
    }
    m->state = r->to;
}

static void assert_ctx_eq(const struct chpp_qp_context *got,
                          const struct chpp_qp_context *want)
{
    /* Field by field first, for a readable failure. */
    g_assert_cmpuint(got->state, ==, want->state);
    g_assert_cmpuint(got->type, ==, want->type);
    g_assert_cmpuint(got->port, ==, want->port);
    g_assert_cmpuint(got->path_mtu, ==, want->path_mtu);
    g_assert_cmphex(le32_to_cpu(got->pd), ==, le32_to_cpu(want->pd));
    g_assert_cmphex(le32_to_cpu(got->send_cqn), ==,
                    le32_to_cpu(want->send_cqn));
    g_assert_cmphex(le32_to_cpu(got->recv_cqn), ==,
                    le32_to_cpu(want->recv_cqn));
    g_assert_cmphex(le32_to_cpu(got->sq_mtt_base), ==,
                    le32_to_cpu(want->sq_mtt_base));
    g_assert_cmphex(le32_to_cpu(got->rq_mtt_base), ==,
                    le32_to_cpu(want->rq_mtt_base));
    g_assert_cmpuint(got->log_sq_size, ==, want->log_sq_size);
    g_assert_cmpuint(got->log_sq_stride, ==, want->log_sq_stride);
    g_assert_cmpuint(got->log_rq_size, ==, want->log_rq_size);
    g_assert_cmpuint(got->log_rq_stride, ==, want->log_rq_stride);
    g_assert_cmpuint(got->sq_log_page_size, ==, want->sq_log_page_size);
    g_assert_cmpuint(got->rq_log_page_size, ==, want->rq_log_page_size);
    g_assert_cmphex(le16_to_cpu(got->uar), ==, le16_to_cpu(want->uar));
    g_assert_cmphex(le32_to_cpu(got->access_flags), ==,
                    le32_to_cpu(want->access_flags));
    g_assert_cmphex(le32_to_cpu(got->qkey), ==, le32_to_cpu(want->qkey));
    g_assert_cmphex(le32_to_cpu(got->dest_node), ==,
                    le32_to_cpu(want->dest_node));
    g_assert_cmphex(le32_to_cpu(got->dest_qpn), ==,
                    le32_to_cpu(want->dest_qpn));
    g_assert_cmphex(le32_to_cpu(got->sq_psn), ==, le32_to_cpu(want->sq_psn));
    g_assert_cmphex(le32_to_cpu(got->rq_psn), ==, le32_to_cpu(want->rq_psn));
    g_assert_cmpuint(got->timeout, ==, want->timeout);
    g_assert_cmpuint(got->retry_cnt, ==, want->retry_cnt);
    g_assert_cmpuint(got->rnr_retry, ==, want->rnr_retry);
    g_assert_cmpuint(got->min_rnr_timer, ==, want->min_rnr_timer);
    g_assert_cmpuint(got->max_rd_atomic, ==, want->max_rd_atomic);
    g_assert_cmpuint(got->max_dest_rd_atomic, ==, want->max_dest_rd_atomic);
    g_assert_cmphex(got->magic, ==, want->magic);
    g_assert_cmphex(got->dest_magic, ==, want->dest_magic);
    g_assert_cmpuint(le16_to_cpu(got->pkey_index), ==,
                     le16_to_cpu(want->pkey_index));
    g_assert_cmpuint(got->dest_vf, ==, want->dest_vf);
    g_assert_cmphex(got->flags, ==, want->flags);
    g_assert_cmpuint(le32_to_cpu(got->sq_inflight), ==,
                     le32_to_cpu(want->sq_inflight));
    g_assert_cmpuint(got->sq_draining, ==, want->sq_draining);
    /*
     * en_sqd_async_notify reads 1 while the SQ_DRAINED event is requested
     * and not yet posted: never 1 unless the last RTS2SQD requested it.
     */
    g_assert_cmpuint(got->en_sqd_async_notify, <=,
                     want->en_sqd_async_notify);
    /* Then everything, reserved bytes and indexes included. */
    {
        struct chpp_qp_context w = *want;

        w.en_sqd_async_notify = got->en_sqd_async_notify;
        g_assert(memcmp(got, &w, sizeof(*got)) == 0);
    }
}

static void check_qp(QpTest *t, uint32_t qpn)
{
    struct chpp_qp_context got;

    g_assert_cmphex(chpp_query_qp(t->d, qpn, &got), ==, CHPP_STAT_OK);
    assert_ctx_eq(&got, &t->model[qpn]);
}

/* A modify that must succeed; the model follows and QUERY_QP agrees. */
static void modify_ok(QpTest *t, uint16_t opcode, uint32_t qpn, uint32_t mask,
                      const struct chpp_qp_context *c)
{
    struct chpp_qp_context zero = {};

    g_assert_cmphex(chpp_modify_qp(t->d, opcode, qpn, mask, c ? c : &zero),
                    ==, CHPP_STAT_OK);
    model_apply(&t->model[qpn], opcode, mask, c ? c : &zero);
    check_qp(t, qpn);
}

/* A modify that must fail with @status, count one error, change nothing. */
static void modify_fails(QpTest *t, uint8_t status, uint16_t opcode,
                         uint32_t qpn, uint32_t mask,
                         const struct chpp_qp_context *c)
{
    ChppDev *d = t->d;
    uint32_t errs = chpp_counter(d, CHPP_CNT_GUEST_ERRORS);
    uint32_t cmd_errs = chpp_counter(d, CHPP_CNT_CMD_ERRORS);
    struct chpp_qp_context zero = {};

    g_assert_cmphex(chpp_modify_qp(d, opcode, qpn, mask, c ? c : &zero), ==,
                    status);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, errs + 1);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_CMD_ERRORS), ==, cmd_errs + 1);
    if (qpn < NUM_QPS) {
        check_qp(t, qpn);
    }
}

/* Move QP @qpn (in RESET) to @state with the required attributes. */
static void qp_goto(QpTest *t, uint32_t qpn, uint8_t type, uint8_t state)
{
    struct chpp_qp_context c = full_ctx(t, type);
    static const uint16_t path[] = {
        CHPP_CMD_RST2INIT_QP, CHPP_CMD_INIT2RTR_QP, CHPP_CMD_RTR2RTS_QP,
        CHPP_CMD_RTS2SQD_QP,
    };
    uint8_t last = state == CHPP_QPS_ERR ? CHPP_QPS_RTS : state;
    size_t i;

    for (i = 0; i < ARRAY_SIZE(path) && t->model[qpn].state != last; i++) {
        modify_ok(t, path[i], qpn, rule_of(path[i])->req[type], &c);
    }
    g_assert_cmpuint(t->model[qpn].state, ==, last);
    if (state == CHPP_QPS_ERR) {
        modify_ok(t, CHPP_CMD_2ERR_QP, qpn, 0, NULL);
    }
}

/* ---- tests ------------------------------------------------------------- */

/* A QP that was never used: all zero, state RESET. */
static void test_query_reset(void)
{
    QpTest *t = qp_test_start();
    uint32_t qpn;

    for (qpn = 0; qpn < NUM_QPS; qpn++) {
        check_qp(t, qpn);
    }
    qp_test_stop(t);
}

static void test_qpn_range(void)
{
    QpTest *t = qp_test_start();
    struct chpp_qp_context c = full_ctx(t, CHPP_QPT_RC);
    uint32_t bad[] = { NUM_QPS, NUM_QPS + 1, 0x00ffffff, 0xffffffff };
    size_t i, j;

    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        uint32_t errs = chpp_counter(t->d, CHPP_CNT_GUEST_ERRORS);
        struct chpp_qp_context got;

        for (j = 0; j < ARRAY_SIZE(all_modify_ops); j++) {
            modify_fails(t, CHPP_STAT_BAD_INDEX, all_modify_ops[j], bad[i],
                         PKEY | PORT | ACCESS, &c);
        }
        g_assert_cmphex(chpp_query_qp(t->d, bad[i], &got), ==,
                        CHPP_STAT_BAD_INDEX);
        g_assert_cmpuint(chpp_counter(t->d, CHPP_CNT_GUEST_ERRORS), ==,
                         errs + ARRAY_SIZE(all_modify_ops) + 1);
    }
    /* Nothing was created. */
    for (i = 0; i < NUM_QPS; i++) {
        check_qp(t, i);
    }
    qp_test_stop(t);
}

/* Every allowed transition, per type; QUERY_QP after each. */
static void walk_transitions(uint8_t type)
{
    QpTest *t = qp_test_start();
    struct chpp_qp_context c = full_ctx(t, type);
    struct chpp_qp_context c2;
    const TransRule *r;
    uint32_t qpn = 3;

    /* RST2INIT with the required attributes. */
    modify_ok(t, CHPP_CMD_RST2INIT_QP, qpn,
              rule_of(CHPP_CMD_RST2INIT_QP)->req[type], &c);
    /* INIT2INIT: nothing, then every optional attribute. */
    modify_ok(t, CHPP_CMD_INIT2INIT_QP, qpn, 0, &c);
    c2 = c;
    c2.access_flags = cpu_to_le32(CHPP_ACCESS_REMOTE_ATOMIC);
    c2.qkey = cpu_to_le32(0x77778888);
    modify_ok(t, CHPP_CMD_INIT2INIT_QP, qpn,
              rule_of(CHPP_CMD_INIT2INIT_QP)->opt[type], &c2);
    /* INIT2RTR: required + optional (ALT_PATH is never supported). */
    r = rule_of(CHPP_CMD_INIT2RTR_QP);
    c2.qkey = cpu_to_le32(0x9999aaaa);
    c2.access_flags = cpu_to_le32(CHPP_ACCESS_REMOTE_WRITE);
    modify_ok(t, r->opcode, qpn, r->req[type] | (r->opt[type] & ~ALT), &c2);
    /* RTR2RTS: required + optional, CUR_STATE = RTR. */
    r = rule_of(CHPP_CMD_RTR2RTS_QP);
    c2 = c;
    c2.state = CHPP_QPS_RTR;
    c2.min_rnr_timer = 31;
    c2.access_flags = cpu_to_le32(0);
    modify_ok(t, r->opcode, qpn, r->req[type] | (r->opt[type] & ~ALT), &c2);
    /* RTS2RTS: empty, then the optional ones with CUR_STATE = RTS. */
    r = rule_of(CHPP_CMD_RTS2RTS_QP);
    modify_ok(t, r->opcode, qpn, 0, &c);
    c2.state = CHPP_QPS_RTS;
    c2.min_rnr_timer = 1;
    c2.qkey = cpu_to_le32(0x12345678);
    c2.access_flags = cpu_to_le32(CHPP_ACCESS_REMOTE_READ);
    modify_ok(t, r->opcode, qpn, r->opt[type] & ~ALT, &c2);
    /* RTS2SQD without notification, back with SQD2RTS. */
    modify_ok(t, CHPP_CMD_RTS2SQD_QP, qpn, 0, &c);
    modify_ok(t, CHPP_CMD_SQD2RTS_QP, qpn, 0, &c);
    /* RTS2SQD with notification requested. */
    c2 = c;
    c2.en_sqd_async_notify = 1;
    modify_ok(t, CHPP_CMD_RTS2SQD_QP, qpn, SQD_NTF, &c2);
    /* SQD2SQD: empty, then every optional attribute with new values. */
    r = rule_of(CHPP_CMD_SQD2SQD_QP);
    modify_ok(t, r->opcode, qpn, 0, &c);
    c2 = c;
    c2.dest_node = cpu_to_le32(9);
    c2.dest_vf = 7;
    c2.dest_magic = 0xee;
    c2.timeout = 0;
    c2.retry_cnt = 0;
    c2.rnr_retry = 0;
    c2.max_rd_atomic = CHPP_MAX_RD_ATOMIC;
    c2.max_dest_rd_atomic = CHPP_MAX_RD_ATOMIC;
    c2.access_flags = cpu_to_le32(CHPP_ACCESS_REMOTE_WRITE |
                                  CHPP_ACCESS_REMOTE_READ |
                                  CHPP_ACCESS_REMOTE_ATOMIC);
    c2.min_rnr_timer = 0;
    c2.qkey = cpu_to_le32(0xfedcba98);
    modify_ok(t, r->opcode, qpn, r->opt[type] & ~ALT, &c2);
    /* SQD2RTS with the optional attributes, CUR_STATE = SQD. */
    r = rule_of(CHPP_CMD_SQD2RTS_QP);
    c2.state = CHPP_QPS_SQD;
    c2.access_flags = cpu_to_le32(0);
    c2.min_rnr_timer = 20;
    c2.qkey = cpu_to_le32(1);
    modify_ok(t, r->opcode, qpn, r->opt[type] & ~ALT, &c2);
    /* 2ERR, ERR2ERR, 2RST, RST2RST, and the QP can be created again. */
    modify_ok(t, CHPP_CMD_2ERR_QP, qpn, 0, NULL);
    modify_ok(t, CHPP_CMD_2ERR_QP, qpn, 0, NULL);
    modify_ok(t, CHPP_CMD_2RST_QP, qpn, 0, NULL);
    modify_ok(t, CHPP_CMD_2RST_QP, qpn, 0, NULL);
    modify_ok(t, CHPP_CMD_RST2INIT_QP, qpn,
              rule_of(CHPP_CMD_RST2INIT_QP)->req[type], &c);
    /* Receive-only: RTR is a valid resting state; out via 2ERR. */
    modify_ok(t, CHPP_CMD_INIT2RTR_QP, qpn,
              rule_of(CHPP_CMD_INIT2RTR_QP)->req[type], &c);
    modify_ok(t, CHPP_CMD_2ERR_QP, qpn, 0, NULL);
    modify_ok(t, CHPP_CMD_2RST_QP, qpn, 0, NULL);
    /* No other QP was touched. */
    for (qpn = 0; qpn < NUM_QPS; qpn++) {
        check_qp(t, qpn);
    }
    qp_test_stop(t);
}

static void test_transitions_rc(void)
{
    walk_transitions(CHPP_QPT_RC);
}

static void test_transitions_uc(void)
{
    walk_transitions(CHPP_QPT_UC);
}

static void test_transitions_ud(void)
{
    walk_transitions(CHPP_QPT_UD);
}

/* Every opcode from every reachable state: refused ones change nothing. */
static void test_refused_transitions(void)
{
    QpTest *t = qp_test_start();
    size_t ti, si, oi;
    uint32_t qpn;

    for (ti = 0; ti < NUM_TYPES; ti++) {
        uint8_t type = types[ti];
        struct chpp_qp_context c = full_ctx(t, type);

        for (si = 0; si < ARRAY_SIZE(reachable_states); si++) {
            uint8_t state = reachable_states[si];

            qpn = si;
            qp_goto(t, qpn, type, state);
            for (oi = 0; oi < ARRAY_SIZE(all_modify_ops); oi++) {
                uint16_t op = all_modify_ops[oi];
                const TransRule *r = rule_of(op);
                uint32_t mask = r ? r->req[type] : 0;

                if (!op_allowed(op, state, type)) {
                    modify_fails(t, CHPP_STAT_BAD_QP_STATE, op, qpn, mask,
                                 &c);
                }
            }
        }
        for (qpn = 0; qpn < ARRAY_SIZE(reachable_states); qpn++) {
            modify_ok(t, CHPP_CMD_2RST_QP, qpn, 0, NULL);
        }
    }
    qp_test_stop(t);
}

/*
 * Per transition and type: each required attribute missing, each attribute
 * outside required | optional present, STATE, ALT_PATH and CAP: BAD_PARAM.
 */
static void check_masks(QpTest *t, uint32_t qpn, uint8_t type,
                        const TransRule *r, const struct chpp_qp_context *c)
{
    uint32_t req = r->req[type], opt = r->opt[type];
    unsigned bit;

    for (bit = 0; bit < ATTR_BITS; bit++) {
        uint32_t b = 1u << bit;

        if (req & b) {
            modify_fails(t, CHPP_STAT_BAD_PARAM, r->opcode, qpn, req & ~b, c);
        } else if (!(opt & b) || b == ALT || b == CAP) {
            modify_fails(t, CHPP_STAT_BAD_PARAM, r->opcode, qpn, req | b, c);
        }
    }
    /* Unknown bits above the last attribute. */
    modify_fails(t, CHPP_STAT_BAD_PARAM, r->opcode, qpn, req | 1u << 21, c);
    modify_fails(t, CHPP_STAT_BAD_PARAM, r->opcode, qpn, req | 1u << 31, c);
}

static void test_attr_masks(void)
{
    QpTest *t = qp_test_start();
    size_t ti;

    for (ti = 0; ti < NUM_TYPES; ti++) {
        uint8_t type = types[ti];
        uint32_t qpn = ti;
        struct chpp_qp_context c = full_ctx(t, type);
        static const uint16_t walk[] = {
            CHPP_CMD_RST2INIT_QP, CHPP_CMD_INIT2INIT_QP,
            CHPP_CMD_INIT2RTR_QP, CHPP_CMD_RTR2RTS_QP, CHPP_CMD_RTS2RTS_QP,
            CHPP_CMD_RTS2SQD_QP, CHPP_CMD_SQD2SQD_QP, CHPP_CMD_SQD2RTS_QP,
        };
        size_t i;

        /* CUR_STATE checks need the right state in the context. */
        for (i = 0; i < ARRAY_SIZE(walk); i++) {
            const TransRule *r = rule_of(walk[i]);

            c.state = r->from;
            check_masks(t, qpn, type, r, &c);
            modify_ok(t, r->opcode, qpn, r->req[type], &c);
        }
    }
    qp_test_stop(t);
}

/* CUR_STATE: where allowed it must name the current state. */
static void test_cur_state(void)
{
    QpTest *t = qp_test_start();
    struct chpp_qp_context c = full_ctx(t, CHPP_QPT_RC);
    uint32_t req = rule_of(CHPP_CMD_RTR2RTS_QP)->req[CHPP_QPT_RC];
    uint8_t s;

    qp_goto(t, 0, CHPP_QPT_RC, CHPP_QPS_RTR);
    for (s = 0; s < 8; s++) {
        if (s == CHPP_QPS_RTR) {
            continue;
        }
        c.state = s;
        modify_fails(t, CHPP_STAT_BAD_QP_STATE, CHPP_CMD_RTR2RTS_QP, 0,
                     req | CUR, &c);
    }
    c.state = CHPP_QPS_RTR;
    modify_ok(t, CHPP_CMD_RTR2RTS_QP, 0, req | CUR, &c);
    c.state = CHPP_QPS_RTR;
    modify_fails(t, CHPP_STAT_BAD_QP_STATE, CHPP_CMD_RTS2RTS_QP, 0, CUR, &c);
    c.state = CHPP_QPS_RTS;
    modify_ok(t, CHPP_CMD_RTS2RTS_QP, 0, CUR, &c);
    /* Without the bit, ctx.state is not looked at. */
    c.state = 0x77;
    modify_ok(t, CHPP_CMD_RTS2RTS_QP, 0, 0, &c);
    modify_ok(t, CHPP_CMD_RTS2SQD_QP, 0, 0, &c);
    c.state = CHPP_QPS_RTS;
    modify_fails(t, CHPP_STAT_BAD_QP_STATE, CHPP_CMD_SQD2RTS_QP, 0, CUR, &c);
    c.state = CHPP_QPS_SQD;
    modify_ok(t, CHPP_CMD_SQD2RTS_QP, 0, CUR, &c);
    qp_test_stop(t);
}

typedef struct BadValue {
    const char *what;
    uint16_t opcode;
    uint32_t attr;
    void (*set)(struct chpp_qp_context *c, unsigned variant);
    unsigned variants;
} BadValue;

static void bad_port(struct chpp_qp_context *c, unsigned v)
{
    c->port = v ? 2 : 0;
}

static void bad_pkey(struct chpp_qp_context *c, unsigned v)
{
    c->pkey_index = cpu_to_le16(v ? 0xffff : 1);
}

static void bad_access(struct chpp_qp_context *c, unsigned v)
{
    /* bits above REMOTE_ATOMIC are not QP rights */
    c->access_flags = cpu_to_le32(v ? 1u << 4 : 1u << 31);
}

static void bad_mtu(struct chpp_qp_context *c, unsigned v)
{
    c->path_mtu = v ? 6 : 0;
}

static void bad_timeout(struct chpp_qp_context *c, unsigned v)
{
    c->timeout = v ? 255 : 32;
}

static void bad_retry(struct chpp_qp_context *c, unsigned v)
{
    c->retry_cnt = v ? 255 : 8;
}

static void bad_rnr_retry(struct chpp_qp_context *c, unsigned v)
{
    c->rnr_retry = v ? 255 : 8;
}

static void bad_rnr_timer(struct chpp_qp_context *c, unsigned v)
{
    c->min_rnr_timer = v ? 255 : 32;
}

static void bad_rd_atomic(struct chpp_qp_context *c, unsigned v)
{
    c->max_rd_atomic = v ? 255 : CHPP_MAX_RD_ATOMIC + 1;
}

static void bad_dest_rd(struct chpp_qp_context *c, unsigned v)
{
    c->max_dest_rd_atomic = v ? 255 : CHPP_MAX_RD_ATOMIC + 1;
}

static void bad_sq_psn(struct chpp_qp_context *c, unsigned v)
{
    c->sq_psn = cpu_to_le32(v ? 0xffffffff : 0x1000000);
}

static void bad_rq_psn(struct chpp_qp_context *c, unsigned v)
{
    c->rq_psn = cpu_to_le32(v ? 0xffffffff : 0x1000000);
}

static void bad_dest_qpn(struct chpp_qp_context *c, unsigned v)
{
    c->dest_qpn = cpu_to_le32(v ? 0xffffffff : 0x1000000);
}

static void bad_dest_vf(struct chpp_qp_context *c, unsigned v)
{
    c->dest_vf = v ? 255 : 8;
}

static const BadValue bad_values[] = {
    { "port", CHPP_CMD_INIT2INIT_QP, PORT, bad_port, 2 },
    { "pkey_index", CHPP_CMD_INIT2INIT_QP, PKEY, bad_pkey, 2 },
    { "access_flags", CHPP_CMD_INIT2INIT_QP, ACCESS, bad_access, 2 },
    { "path_mtu", CHPP_CMD_INIT2RTR_QP, MTU, bad_mtu, 2 },
    { "rq_psn", CHPP_CMD_INIT2RTR_QP, RQ_PSN, bad_rq_psn, 2 },
    { "dest_qpn", CHPP_CMD_INIT2RTR_QP, DEST_QPN, bad_dest_qpn, 2 },
    { "dest_vf", CHPP_CMD_INIT2RTR_QP, AV, bad_dest_vf, 2 },
    { "max_dest_rd_atomic", CHPP_CMD_INIT2RTR_QP, DEST_RD, bad_dest_rd, 2 },
    { "min_rnr_timer", CHPP_CMD_INIT2RTR_QP, RNR_TMR, bad_rnr_timer, 2 },
    { "timeout", CHPP_CMD_RTR2RTS_QP, TIMEOUT, bad_timeout, 2 },
    { "retry_cnt", CHPP_CMD_RTR2RTS_QP, RETRY, bad_retry, 2 },
    { "rnr_retry", CHPP_CMD_RTR2RTS_QP, RNR_RETRY, bad_rnr_retry, 2 },
    { "sq_psn", CHPP_CMD_RTR2RTS_QP, SQ_PSN, bad_sq_psn, 2 },
    { "max_rd_atomic", CHPP_CMD_RTR2RTS_QP, RD_ATOM, bad_rd_atomic, 2 },
};

/* Each invalid value, with every other attribute valid: BAD_PARAM. */
static void test_bad_values(void)
{
    QpTest *t = qp_test_start();
    uint32_t qpn = 0;
    size_t i;
    unsigned v;

    qp_goto(t, 0, CHPP_QPT_RC, CHPP_QPS_INIT);
    qp_goto(t, 1, CHPP_QPT_RC, CHPP_QPS_RTR);
    for (i = 0; i < ARRAY_SIZE(bad_values); i++) {
        const BadValue *b = &bad_values[i];
        const TransRule *r = rule_of(b->opcode);

        qpn = r->from == CHPP_QPS_INIT ? 0 : 1;
        for (v = 0; v < b->variants; v++) {
            struct chpp_qp_context c = full_ctx(t, CHPP_QPT_RC);

            b->set(&c, v);
            g_test_message("%s variant %u", b->what, v);
            modify_fails(t, CHPP_STAT_BAD_PARAM, b->opcode, qpn,
                         r->req[CHPP_QPT_RC] | b->attr, &c);
            /* Not in the mask: the bad value is not read. */
            if (!(r->req[CHPP_QPT_RC] & b->attr)) {
                struct chpp_qp_context ok = full_ctx(t, CHPP_QPT_RC);

                b->set(&ok, v);
                if (b->opcode == CHPP_CMD_INIT2INIT_QP) {
                    modify_ok(t, b->opcode, qpn, 0, &ok);
                }
            }
        }
    }
    /* RST2INIT checks its attributes too (nothing created on failure). */
    for (v = 0; v < 2; v++) {
        struct chpp_qp_context c = full_ctx(t, CHPP_QPT_UC);

        bad_port(&c, v);
        modify_fails(t, CHPP_STAT_BAD_PARAM, CHPP_CMD_RST2INIT_QP, 2,
                     PKEY | PORT | ACCESS, &c);
        c = full_ctx(t, CHPP_QPT_UC);
        bad_access(&c, v);
        modify_fails(t, CHPP_STAT_BAD_PARAM, CHPP_CMD_RST2INIT_QP, 2,
                     PKEY | PORT | ACCESS, &c);
        c = full_ctx(t, CHPP_QPT_UD);
        bad_pkey(&c, v);
        modify_fails(t, CHPP_STAT_BAD_PARAM, CHPP_CMD_RST2INIT_QP, 2,
                     PKEY | PORT | QKEY, &c);
    }
    /* The limits themselves are accepted. */
    {
        struct chpp_qp_context c = full_ctx(t, CHPP_QPT_RC);

        c.sq_psn = cpu_to_le32(0xffffff);
        c.timeout = 31;
        c.retry_cnt = 7;
        c.rnr_retry = 7;
        c.max_rd_atomic = CHPP_MAX_RD_ATOMIC;
        modify_ok(t, CHPP_CMD_RTR2RTS_QP, 1,
                  rule_of(CHPP_CMD_RTR2RTS_QP)->req[CHPP_QPT_RC], &c);
    }
    qp_test_stop(t);
}

/* A failing RST2INIT: status, nothing created, no CQ reference taken. */
static void create_fails(QpTest *t, uint8_t status,
                         const struct chpp_qp_context *c)
{
    modify_fails(t, status, CHPP_CMD_RST2INIT_QP, 5,
                 rule_of(CHPP_CMD_RST2INIT_QP)->req[CHPP_QPT_RC], c);
}

static void test_create_errors(void)
{
    QpTest *t = qp_test_start();
    ChppDev *d = t->d;
    const struct chpp_qp_context good = full_ctx(t, CHPP_QPT_RC);
    struct chpp_qp_context c;
    uint64_t unmapped_mtt;

    /* type */
    c = good;
    c.type = 3;
    create_fails(t, CHPP_STAT_BAD_PARAM, &c);
    c.type = 0xff;
    create_fails(t, CHPP_STAT_BAD_PARAM, &c);
    /* pd */
    c = good;
    c.pd = cpu_to_le32(NUM_PDS);
    create_fails(t, CHPP_STAT_BAD_PARAM, &c);
    c.pd = cpu_to_le32(0xffffffff);
    create_fails(t, CHPP_STAT_BAD_PARAM, &c);
    /* CQs: not created, out of range */
    c = good;
    c.send_cqn = cpu_to_le32(5);
    create_fails(t, CHPP_STAT_BAD_RESOURCE, &c);
    c.send_cqn = cpu_to_le32(NUM_CQS);
    create_fails(t, CHPP_STAT_BAD_RESOURCE, &c);
    c = good;
    c.recv_cqn = cpu_to_le32(7);
    create_fails(t, CHPP_STAT_BAD_RESOURCE, &c);
    c.recv_cqn = cpu_to_le32(0xffffffff);
    create_fails(t, CHPP_STAT_BAD_RESOURCE, &c);
    /* sizes */
    c = good;
    c.log_sq_size = 16;
    create_fails(t, CHPP_STAT_BAD_SIZE, &c);
    c = good;
    c.log_rq_size = 255;
    create_fails(t, CHPP_STAT_BAD_SIZE, &c);
    /* strides */
    c = good;
    c.log_sq_stride = CHPP_MIN_WQE_SHIFT - 1;
    create_fails(t, CHPP_STAT_BAD_SIZE, &c);
    c = good;
    c.log_sq_stride = CHPP_MAX_WQE_SHIFT + 1;
    create_fails(t, CHPP_STAT_BAD_SIZE, &c);
    c = good;
    c.log_rq_stride = 0;
    create_fails(t, CHPP_STAT_BAD_SIZE, &c);
    c = good;
    c.log_rq_stride = CHPP_MAX_WQE_SHIFT + 1;
    create_fails(t, CHPP_STAT_BAD_SIZE, &c);
    /* rings: MTT entries never written, beyond the MTT, too small */
    unmapped_mtt = d->next_mtt + 100;
    c = good;
    c.sq_mtt_base = cpu_to_le32(unmapped_mtt);
    create_fails(t, CHPP_STAT_BAD_PARAM, &c);
    c = good;
    c.rq_mtt_base = cpu_to_le32(unmapped_mtt);
    create_fails(t, CHPP_STAT_BAD_PARAM, &c);
    c = good;
    c.sq_mtt_base = cpu_to_le32(0xffffffff);
    create_fails(t, CHPP_STAT_BAD_PARAM, &c);
    c = good;
    c.rq_log_page_size = 0;
    create_fails(t, CHPP_STAT_BAD_PARAM, &c);
    c = good;
    c.sq_log_page_size = 31;
    create_fails(t, CHPP_STAT_BAD_PARAM, &c);
    c = good;
    /* Only the last mapped page is valid; 2^15 * 128 B needs 1024. */
    c.log_sq_size = 15;
    c.sq_mtt_base = cpu_to_le32(d->next_mtt - 1);
    create_fails(t, CHPP_STAT_BAD_PARAM, &c);
    /* uar */
    c = good;
    c.uar = cpu_to_le16(NUM_UARS);
    create_fails(t, CHPP_STAT_BAD_PARAM, &c);
    c.uar = cpu_to_le16(0xffff);
    create_fails(t, CHPP_STAT_BAD_PARAM, &c);
    /* flags */
    c = good;
    /* 0x02 is CHPP_QP_FLAG_SRQ since ABI 1.5 (chpp-hca-srq-test). */
    c.flags = 0x04;
    create_fails(t, CHPP_STAT_BAD_PARAM, &c);
    c.flags = 0xff;
    create_fails(t, CHPP_STAT_BAD_PARAM, &c);

    /* None took a CQ reference: the CQs can go. */
    g_assert_cmphex(chpp_hw2sw_cq(d, 0), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_hw2sw_cq(d, 1), ==, CHPP_STAT_OK);
    /* ... and now the good context fails on its CQ. */
    create_fails(t, CHPP_STAT_BAD_RESOURCE, &good);
    qp_test_stop(t);
}

/* Boundary sizes: one-entry RQ, 2 KiB strides, the largest queues. */
static void test_create_limits(void)
{
    QpTest *t = qp_test_start();
    struct chpp_qp_context c = full_ctx(t, CHPP_QPT_UD);
    uint32_t req = rule_of(CHPP_CMD_RST2INIT_QP)->req[CHPP_QPT_UD];

    c.log_sq_size = 0;
    c.log_sq_stride = CHPP_MAX_WQE_SHIFT;
    c.log_rq_size = 0;
    c.log_rq_stride = CHPP_MIN_WQE_SHIFT;
    chpp_qp_alloc_rings(t->d, &c, NULL, NULL);
    modify_ok(t, CHPP_CMD_RST2INIT_QP, 0, req, &c);

    c = full_ctx(t, CHPP_QPT_UD);
    c.log_sq_size = 15;
    c.log_sq_stride = CHPP_MIN_WQE_SHIFT;
    c.log_rq_size = 15;
    c.log_rq_stride = CHPP_MIN_WQE_SHIFT;
    c.uar = cpu_to_le16(NUM_UARS - 1);
    c.pd = cpu_to_le32(NUM_PDS - 1);
    c.flags = 0;
    c.magic = 0xff;
    c.send_cqn = cpu_to_le32(2);
    c.recv_cqn = cpu_to_le32(2);
    chpp_qp_alloc_rings(t->d, &c, NULL, NULL);
    modify_ok(t, CHPP_CMD_RST2INIT_QP, 1, req, &c);
    qp_test_stop(t);
}

/* QPs hold references on their CQs until 2RST. */
static void test_cq_refs(void)
{
    QpTest *t = qp_test_start();
    ChppDev *d = t->d;
    struct chpp_qp_context c = full_ctx(t, CHPP_QPT_RC);
    uint32_t req = rule_of(CHPP_CMD_RST2INIT_QP)->req[CHPP_QPT_RC];
    uint32_t errs;

    /* QP 0: send CQ 0, receive CQ 1.  QPs 1 and 2: CQ 2 for both. */
    modify_ok(t, CHPP_CMD_RST2INIT_QP, 0, req, &c);
    c.send_cqn = c.recv_cqn = cpu_to_le32(2);
    modify_ok(t, CHPP_CMD_RST2INIT_QP, 1, req, &c);
    modify_ok(t, CHPP_CMD_RST2INIT_QP, 2, req, &c);

    errs = chpp_counter(d, CHPP_CNT_GUEST_ERRORS);
    g_assert_cmphex(chpp_hw2sw_cq(d, 0), ==, CHPP_STAT_RESOURCE_BUSY);
    g_assert_cmphex(chpp_hw2sw_cq(d, 1), ==, CHPP_STAT_RESOURCE_BUSY);
    g_assert_cmphex(chpp_hw2sw_cq(d, 2), ==, CHPP_STAT_RESOURCE_BUSY);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, errs + 3);

    /* ERR keeps the references. */
    modify_ok(t, CHPP_CMD_2ERR_QP, 0, 0, NULL);
    g_assert_cmphex(chpp_hw2sw_cq(d, 0), ==, CHPP_STAT_RESOURCE_BUSY);
    modify_ok(t, CHPP_CMD_2RST_QP, 0, 0, NULL);
    g_assert_cmphex(chpp_hw2sw_cq(d, 0), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_hw2sw_cq(d, 1), ==, CHPP_STAT_OK);

    /* CQ 2 is held twice by each of two QPs. */
    modify_ok(t, CHPP_CMD_2RST_QP, 1, 0, NULL);
    g_assert_cmphex(chpp_hw2sw_cq(d, 2), ==, CHPP_STAT_RESOURCE_BUSY);
    /* RST2RST of a QP in RESET does not release anything. */
    modify_ok(t, CHPP_CMD_2RST_QP, 1, 0, NULL);
    g_assert_cmphex(chpp_hw2sw_cq(d, 2), ==, CHPP_STAT_RESOURCE_BUSY);
    modify_ok(t, CHPP_CMD_2RST_QP, 2, 0, NULL);
    g_assert_cmphex(chpp_hw2sw_cq(d, 2), ==, CHPP_STAT_OK);
    qp_test_stop(t);
}

/* 2ERR (not from RESET) and 2RST from every reachable state and type. */
static void test_err_rst_everywhere(void)
{
    QpTest *t = qp_test_start();
    size_t ti, si;

    for (ti = 0; ti < NUM_TYPES; ti++) {
        for (si = 0; si < ARRAY_SIZE(reachable_states); si++) {
            uint8_t state = reachable_states[si];

            qp_goto(t, 4, types[ti], state);
            if (state == CHPP_QPS_RESET) {
                modify_fails(t, CHPP_STAT_BAD_QP_STATE, CHPP_CMD_2ERR_QP, 4,
                             0, NULL);
            } else {
                modify_ok(t, CHPP_CMD_2ERR_QP, 4, 0, NULL);
            }
            modify_ok(t, CHPP_CMD_2RST_QP, 4, 0, NULL);

            qp_goto(t, 5, types[ti], state);
            modify_ok(t, CHPP_CMD_2RST_QP, 5, 0, NULL);
        }
    }
    /* The CQs are free again. */
    g_assert_cmphex(chpp_hw2sw_cq(t->d, 0), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_hw2sw_cq(t->d, 1), ==, CHPP_STAT_OK);
    qp_test_stop(t);
}

/* 2ERR and 2RST take no mailbox: in_param is not even read. */
static void test_no_mailbox(void)
{
    QpTest *t = qp_test_start();

    qp_goto(t, 0, CHPP_QPT_UC, CHPP_QPS_RTS);
    g_assert_cmphex(chpp_cmd(t->d, CHPP_CMD_2ERR_QP, 0x123, 0, 0), ==,
                    CHPP_STAT_OK);
    t->model[0].state = CHPP_QPS_ERR;
    check_qp(t, 0);
    g_assert_cmphex(chpp_cmd(t->d, CHPP_CMD_2RST_QP, 0xdead0001, 0, 0), ==,
                    CHPP_STAT_OK);
    memset(&t->model[0], 0, sizeof(t->model[0]));
    check_qp(t, 0);
    /* The others need one: unaligned mailbox. */
    modify_fails(t, CHPP_STAT_BAD_QP_STATE, CHPP_CMD_INIT2RTR_QP, 0, 0, NULL);
    g_assert_cmphex(chpp_cmd(t->d, CHPP_CMD_RST2INIT_QP, t->d->mbox_in + 8,
                             0, 0), ==, CHPP_STAT_BAD_MAILBOX);
    check_qp(t, 0);
    /* A mailbox outside guest memory: DMA error, nothing changes. */
    qp_goto(t, 1, CHPP_QPT_RC, CHPP_QPS_INIT);
    chpp_assert_cmd_fails(t->d, CHPP_STAT_DMA_ERR, CHPP_CMD_INIT2RTR_QP,
                          0x7ff000000000ull, 1, 0);
    chpp_assert_cmd_fails(t->d, CHPP_STAT_DMA_ERR, CHPP_CMD_RST2INIT_QP,
                          0x7ff000000000ull, 2, 0);
    check_qp(t, 1);
    check_qp(t, 2);
    /* QUERY_QP to an unaligned mailbox, or one outside memory. */
    chpp_assert_cmd_fails(t->d, CHPP_STAT_BAD_MAILBOX, CHPP_CMD_QUERY_QP, 0,
                          0, t->d->mbox_out + 4);
    chpp_assert_cmd_fails(t->d, CHPP_STAT_DMA_ERR, CHPP_CMD_QUERY_QP, 0, 1,
                          0x7ff000000000ull);
    qp_test_stop(t);
}

/*
 * Make the next send WQE of @qpn (in RTS) fail: an unknown opcode.  Needs
 * the engine; returns the state the QP ends in (RTS if nothing happened)
 * and takes the context the engine left as the model.
 */
static uint8_t qp_fail_send(QpTest *t, uint32_t qpn)
{
    struct chpp_wqe_ctrl ctrl = {
        .opcode = 0x7f,
        .flags = CHPP_WQE_SIGNALED,
        .wr_id = cpu_to_le64(0x5151),
    };
    uint32_t stride = 1u << t->create.log_sq_stride;
    uint32_t nwqe = 1u << t->create.log_sq_size;
    struct chpp_qp_context got;
    uint32_t pi;
    int i;

    g_assert_cmphex(chpp_query_qp(t->d, qpn, &got), ==, CHPP_STAT_OK);
    g_assert_cmpuint(got.state, ==, CHPP_QPS_RTS);
    pi = le32_to_cpu(got.sq_pi);
    qtest_memset(t->d->qts, t->sq_ring + (pi % nwqe) * stride, 0, stride);
    qtest_memwrite(t->d->qts, t->sq_ring + (pi % nwqe) * stride, &ctrl,
                   sizeof(ctrl));
    chpp_sq_db(t->d, le16_to_cpu(got.uar), qpn, pi + 1);
    for (i = 0; i < 100 && got.state == CHPP_QPS_RTS; i++) {
        qtest_clock_step(t->d->qts, 100000);
        g_assert_cmphex(chpp_query_qp(t->d, qpn, &got), ==, CHPP_STAT_OK);
    }
    t->model[qpn] = got;
    return got.state;
}

/* SQ_DRAINED events for @qpn on EQ 0 so far. */
static unsigned sq_drained_events(QpTest *t, uint32_t qpn)
{
    struct chpp_eq_context eq;
    struct chpp_eqe eqe;
    unsigned n = 0;
    uint32_t i;

    g_assert_cmphex(chpp_query_eq(t->d, 0, &eq), ==, CHPP_STAT_OK);
    for (i = 0; i < le32_to_cpu(eq.producer_index); i++) {
        chpp_read_eqe(t->d, t->eq_ring, i % 64, &eqe);
        if (eqe.type == CHPP_EVENT_SQ_DRAINED &&
            le32_to_cpu(eqe.event.qp.qpn) == qpn) {
            n++;
        }
    }
    return n;
}

static unsigned query_sqd_notify(QpTest *t, uint32_t qpn)
{
    struct chpp_qp_context got;

    g_assert_cmphex(chpp_query_qp(t->d, qpn, &got), ==, CHPP_STAT_OK);
    g_assert_cmpuint(got.sq_draining, ==, 0);
    g_assert_cmpuint(got.en_sqd_async_notify, <=, 1);
    return got.en_sqd_async_notify;
}

/* RTS2SQD: the drain notification is requested only with its bit. */
static void test_sqd_notify(void)
{
    QpTest *t = qp_test_start();
    struct chpp_qp_context c = full_ctx(t, CHPP_QPT_RC);

    qp_goto(t, 0, CHPP_QPT_RC, CHPP_QPS_RTS);
    c.en_sqd_async_notify = 1;
    /* The value without the bit is ignored: no event, none pending. */
    modify_ok(t, CHPP_CMD_RTS2SQD_QP, 0, 0, &c);
    g_assert_cmpuint(sq_drained_events(t, 0), ==, 0);
    modify_ok(t, CHPP_CMD_SQD2RTS_QP, 0, 0, &c);
    /* Bit and value 0: likewise. */
    c.en_sqd_async_notify = 0;
    modify_ok(t, CHPP_CMD_RTS2SQD_QP, 0, SQD_NTF, &c);
    g_assert_cmpuint(sq_drained_events(t, 0), ==, 0);
    modify_ok(t, CHPP_CMD_SQD2RTS_QP, 0, 0, &c);
    /*
     * Requested, nothing in flight (not draining): the event is either
     * still pending (en_sqd_async_notify = 1) or posted, never both.
     */
    c.en_sqd_async_notify = 0x80;
    modify_ok(t, CHPP_CMD_RTS2SQD_QP, 0, SQD_NTF, &c);
    g_assert_cmpuint(query_sqd_notify(t, 0) + sq_drained_events(t, 0), ==,
                     1);
    qp_test_stop(t);
}

/*
 * SQE, entered when a send WQE fails (UC, UD; RC goes to ERR): the
 * transitions out of it, SQERR2RTS masks and CUR_STATE.
 */
static void test_sqe(void)
{
    QpTest *t = qp_test_start();
    uint8_t st;
    size_t ti, oi;

    qp_goto(t, 0, CHPP_QPT_RC, CHPP_QPS_RTS);
    st = qp_fail_send(t, 0);
    g_assert_cmpuint(st, ==, CHPP_QPS_ERR);

    for (ti = 1; ti < NUM_TYPES; ti++) {
        uint8_t type = types[ti];
        const TransRule *r = rule_of(CHPP_CMD_SQERR2RTS_QP);
        struct chpp_qp_context c = full_ctx(t, type);
        uint32_t qpn = ti;

        qp_goto(t, qpn, type, CHPP_QPS_RTS);
        g_assert_cmpuint(qp_fail_send(t, qpn), ==, CHPP_QPS_SQE);
        for (oi = 0; oi < ARRAY_SIZE(all_modify_ops); oi++) {
            uint16_t op = all_modify_ops[oi];
            const TransRule *ro = rule_of(op);

            if (!op_allowed(op, CHPP_QPS_SQE, type)) {
                modify_fails(t, CHPP_STAT_BAD_QP_STATE, op, qpn,
                             ro ? ro->req[type] : 0, &c);
            }
        }
        c.state = CHPP_QPS_SQE;
        check_masks(t, qpn, type, r, &c);
        c.state = CHPP_QPS_RTS;
        modify_fails(t, CHPP_STAT_BAD_QP_STATE, r->opcode, qpn, CUR, &c);
        c.state = CHPP_QPS_SQE;
        c.qkey = cpu_to_le32(0x31313131);
        c.access_flags = cpu_to_le32(CHPP_ACCESS_REMOTE_WRITE);
        modify_ok(t, r->opcode, qpn, r->opt[type], &c);
        /* SQE to ERR, then RESET. */
        g_assert_cmpuint(qp_fail_send(t, qpn), ==, CHPP_QPS_SQE);
        modify_ok(t, CHPP_CMD_2ERR_QP, qpn, 0, NULL);
        modify_ok(t, CHPP_CMD_2RST_QP, qpn, 0, NULL);
        /* SQE to RESET. */
        qp_goto(t, qpn, type, CHPP_QPS_RTS);
        g_assert_cmpuint(qp_fail_send(t, qpn), ==, CHPP_QPS_SQE);
        modify_ok(t, CHPP_CMD_2RST_QP, qpn, 0, NULL);
        /* An empty SQERR2RTS. */
        qp_goto(t, qpn, type, CHPP_QPS_RTS);
        g_assert_cmpuint(qp_fail_send(t, qpn), ==, CHPP_QPS_SQE);
        modify_ok(t, r->opcode, qpn, 0, &c);
    }
    qp_test_stop(t);
}

static void test_migration(void)
{
    g_autofree char *tmpdir = g_dir_make_tmp("chpp-hca-qp-test-XXXXXX", NULL);
    g_autofree char *uri = g_strdup_printf("unix:%s/migsock", tmpdir);
    g_autofree char *sock = g_strdup_printf("%s/migsock", tmpdir);
    QpTest *t = qp_test_start();
    struct chpp_qp_context c = full_ctx(t, CHPP_QPT_RC);
    struct chpp_qp_context src_ctx[NUM_QPS], got;
    ChppDev *dst;
    uint32_t qpn;

    g_assert(tmpdir);
    qp_goto(t, 0, CHPP_QPT_RC, CHPP_QPS_RTS);
    qp_goto(t, 1, CHPP_QPT_UD, CHPP_QPS_SQD);
    qp_goto(t, 2, CHPP_QPT_UC, CHPP_QPS_ERR);
    c.send_cqn = c.recv_cqn = cpu_to_le32(2);
    modify_ok(t, CHPP_CMD_RST2INIT_QP, 3,
              rule_of(CHPP_CMD_RST2INIT_QP)->req[CHPP_QPT_RC], &c);
    for (qpn = 0; qpn < NUM_QPS; qpn++) {
        g_assert_cmphex(chpp_query_qp(t->d, qpn, &src_ctx[qpn]), ==,
                        CHPP_STAT_OK);
    }

    dst = chpp_start_incoming(PROPS, uri);
    migrate(t->d->qs, dst->qs, uri);
    chpp_adopt_migrated(dst, t->d);
    for (qpn = 0; qpn < NUM_QPS; qpn++) {
        g_assert_cmphex(chpp_query_qp(dst, qpn, &got), ==, CHPP_STAT_OK);
        assert_ctx_eq(&got, &src_ctx[qpn]);
    }
    /* The CQ references were rebuilt. */
    g_assert_cmphex(chpp_hw2sw_cq(dst, 2), ==, CHPP_STAT_RESOURCE_BUSY);
    g_assert_cmphex(chpp_hw2sw_cq(dst, 0), ==, CHPP_STAT_RESOURCE_BUSY);
    /* And the state machine goes on. */
    chpp_stop(t->d);
    t->d = dst;
    modify_ok(t, CHPP_CMD_RTS2SQD_QP, 0, 0, &c);
    modify_ok(t, CHPP_CMD_2RST_QP, 0, 0, NULL);
    modify_ok(t, CHPP_CMD_2RST_QP, 1, 0, NULL);
    modify_ok(t, CHPP_CMD_2RST_QP, 2, 0, NULL);
    g_assert_cmphex(chpp_hw2sw_cq(dst, 0), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_hw2sw_cq(dst, 2), ==, CHPP_STAT_RESOURCE_BUSY);
    modify_ok(t, CHPP_CMD_2RST_QP, 3, 0, NULL);
    g_assert_cmphex(chpp_hw2sw_cq(dst, 2), ==, CHPP_STAT_OK);
    qp_test_stop(t);
    unlink(sock);
    rmdir(tmpdir);
}

/* Device reset (register) returns every QP to RESET. */
static void test_reset(void)
{
    QpTest *t = qp_test_start();
    uint32_t qpn;

    qp_goto(t, 0, CHPP_QPT_RC, CHPP_QPS_RTS);
    qp_goto(t, 1, CHPP_QPT_UD, CHPP_QPS_INIT);
    chpp_wr(t->d, CHPP_REG_RESET, CHPP_RESET_MAGIC);
    chpp_init_hca(t->d);
    memset(t->model, 0, sizeof(t->model));
    for (qpn = 0; qpn < NUM_QPS; qpn++) {
        check_qp(t, qpn);
    }
    qp_test_stop(t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    if (!qtest_has_machine("q35")) {
        g_test_message("q35 machine missing: this QEMU cannot run chpp-hca");
        return 1;
    }
    qtest_add_func("/chpp-hca/qp/query-reset", test_query_reset);
    qtest_add_func("/chpp-hca/qp/qpn-range", test_qpn_range);
    qtest_add_func("/chpp-hca/qp/transitions/rc", test_transitions_rc);
    qtest_add_func("/chpp-hca/qp/transitions/uc", test_transitions_uc);
    qtest_add_func("/chpp-hca/qp/transitions/ud", test_transitions_ud);
    qtest_add_func("/chpp-hca/qp/refused-transitions",
                   test_refused_transitions);
    qtest_add_func("/chpp-hca/qp/attr-masks", test_attr_masks);
    qtest_add_func("/chpp-hca/qp/cur-state", test_cur_state);
    qtest_add_func("/chpp-hca/qp/bad-values", test_bad_values);
    qtest_add_func("/chpp-hca/qp/create-errors", test_create_errors);
    qtest_add_func("/chpp-hca/qp/create-limits", test_create_limits);
    qtest_add_func("/chpp-hca/qp/cq-refs", test_cq_refs);
    qtest_add_func("/chpp-hca/qp/err-rst-everywhere",
                   test_err_rst_everywhere);
    qtest_add_func("/chpp-hca/qp/no-mailbox", test_no_mailbox);
    qtest_add_func("/chpp-hca/qp/sqd-notify", test_sqd_notify);
    qtest_add_func("/chpp-hca/qp/sqe", test_sqe);
    qtest_add_func("/chpp-hca/qp/migration", test_migration);
    qtest_add_func("/chpp-hca/qp/reset", test_reset);
    return g_test_run();
}
