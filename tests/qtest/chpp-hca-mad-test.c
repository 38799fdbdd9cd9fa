/*
 * chpp-hca MAD tests (ABI 1.6, docs/management-datagrams.md): the SMA and
 * PMA behind MAD_IFC (every attribute, bad MADs and methods, Set of the
 * LID and of the port state as a subnet manager drives it), and the
 * special QPs 0 (SMI) and 1 (GSI) carrying MADs over a link.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "chpp-hca-qtest.h"
#include "libqos/libqos.h"

#define PD          CHPP_NODE_PD
#define MR_ALL      (CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ | \
                     CHPP_MPT_REMOTE_WRITE)

/* SMP and PMA classes, methods, attributes (IBA 13, 14, 16.1). */
#define SUBN_LID    0x01
#define PERF        0x04
#define SUBN_DR     0x81
#define GET         0x01
#define SET         0x02
#define TRAP        0x05
#define TRAP_REPRESS 0x07
#define GET_RESP    0x81
#define A_CPI       0x0001
#define A_NODE_DESC 0x0010
#define A_NODE_INFO 0x0011
#define A_SM_INFO   0x0020
#define A_GUID_INFO 0x0014
#define A_PORT_INFO 0x0015
#define A_PKEY      0x0016
#define A_SL2VL     0x0017
#define A_VLARB     0x0018
#define A_PORT_CNT  0x0012
#define ST_VERSION  0x0004
#define ST_METHOD   0x0008
#define ST_ATTR     0x000c
#define ST_FIELD    0x001c
#define ST_DIR      0x8000

static char *tmpdir;

typedef struct Mad {
    uint8_t b[CHPP_MAD_SIZE];
} Mad;

static Mad mad_new(uint8_t cls, uint8_t method, uint16_t attr, uint32_t mod)
{
    Mad m = {};

    m.b[0] = 1;
    m.b[1] = cls;
    m.b[2] = 1;
    m.b[3] = method;
    stq_be_p(m.b + 8, 0x1122334455667788ull);
    stw_be_p(m.b + 16, attr);
    stl_be_p(m.b + 20, mod);
    return m;
}

/* MAD_IFC of @in; the response in @out, returns the command status. */
static uint8_t mad_ifc(ChppDev *d, uint32_t mod, const Mad *in,
                       struct chpp_mad_ifc_out *out)
{
    uint8_t st;

    qtest_memwrite(d->qts, d->mbox_in, in->b, sizeof(in->b));
    qtest_memset(d->qts, d->mbox_out, 0xee, sizeof(*out));
    st = chpp_cmd(d, CHPP_CMD_MAD_IFC, d->mbox_in, mod, d->mbox_out);
    qtest_memread(d->qts, d->mbox_out, out, sizeof(*out));
    return st;
}

/* A MAD answered with @status (flags returned); its data at @data. */
static uint32_t mad_expect(ChppDev *d, uint32_t mod, const Mad *in,
                           uint16_t status, uint8_t **data,
                           struct chpp_mad_ifc_out *out)
{
    g_assert_cmphex(mad_ifc(d, mod, in, out), ==, CHPP_STAT_OK);
    g_assert_cmphex(le32_to_cpu(out->flags) & CHPP_MAD_IFC_REPLY, ==,
                    CHPP_MAD_IFC_REPLY);
    g_assert_cmphex(out->mad[3], ==, GET_RESP);
    g_assert_cmphex(lduw_be_p(out->mad + 4), ==, status);
    /* Same transaction, attribute and modifier. */
    g_assert(!memcmp(out->mad + 8, in->b + 8, 16));
    if (data) {
        *data = out->mad + 64;
    }
    return le32_to_cpu(out->flags);
}

static ChppDev *sma_start(uint16_t node, uint32_t init_port_mod)
{
    g_autofree char *props = g_strdup_printf("node-id=%u", node);
    ChppDev *d = chpp_start(props, NULL);

    chpp_init_hca(d);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_INIT_PORT, 0, init_port_mod, 0), ==,
                    CHPP_STAT_OK);
    return d;
}

static void query_port(ChppDev *d, struct chpp_port_info *pi)
{
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_QUERY_PORT, 0, 1, d->mbox_out), ==,
                    CHPP_STAT_OK);
    qtest_memread(d->qts, d->mbox_out, pi, sizeof(*pi));
}

/* Every attribute the SMA and PMA answer, LID-routed and directed. */
static void test_sma_get(void)
{
    ChppDev *d = sma_start(3, 1);
    uint64_t guid = CHPP_PORT_GUID(3, 0);
    struct chpp_mad_ifc_out out;
    Mad m;
    uint8_t *p;

    m = mad_new(SUBN_LID, GET, A_NODE_INFO, 0);
    mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmpuint(p[0], ==, 1);
    g_assert_cmpuint(p[2], ==, 1);                      /* CA */
    g_assert_cmpuint(p[3], ==, 1);                      /* one port */
    g_assert_cmphex(ldq_be_p(p + 4), ==, guid);         /* system image */
    g_assert_cmphex(ldq_be_p(p + 12), ==, guid);        /* node */
    g_assert_cmphex(ldq_be_p(p + 20), ==, guid);        /* port */
    g_assert_cmphex(lduw_be_p(p + 28), ==, 1);
    g_assert_cmphex(lduw_be_p(p + 30), ==, CHPP_PCI_DEVICE_ID_PF);
    g_assert_cmpuint(p[36], ==, 1);
    g_assert_cmphex(p[37] << 16 | p[38] << 8 | p[39], ==, CHPP_IB_VENDOR_ID);

    m = mad_new(SUBN_LID, GET, A_NODE_DESC, 0);
    mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmpstr((char *)p, ==, "chpp-hca node 3 fn 0");

    m = mad_new(SUBN_LID, GET, A_PORT_INFO, 1);
    mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmphex(ldq_be_p(p + 8), ==, 0xfe80000000000000ull);
    g_assert_cmphex(lduw_be_p(p + 16), ==, CHPP_LID(3, 0));
    g_assert_cmphex(lduw_be_p(p + 18), ==, 0);          /* no SM yet */
    g_assert_cmphex(ldl_be_p(p + 20) & (1u << 16), ==, 1u << 16); /* CM */
    g_assert_cmphex(ldl_be_p(p + 20) & (1u << 25), ==, 1u << 25);
    g_assert_cmphex(ldl_be_p(p + 20) & (1u << 1), ==, 0); /* not an SM */
    g_assert_cmpuint(p[28], ==, 1);                     /* LocalPortNum */
    g_assert_cmpuint(p[32] & 0xf, ==, CHPP_PORT_ACTIVE);
    g_assert_cmpuint(p[33] >> 4, ==, CHPP_PORT_PHYS_LINK_UP);
    g_assert_cmpuint(p[34] & 7, ==, 0);                 /* LMC */
    g_assert_cmpuint(p[41] & 0xf, ==, CHPP_MTU_4096);   /* MTUCap */
    g_assert_cmpuint(p[37] >> 4, ==, 1);                /* VLCap: VL0 */
    g_assert_cmpuint(p[50], ==, 1);                     /* GUIDCap */
    /* Port 0 is the port the SMP arrived on. */
    m = mad_new(SUBN_LID, GET, A_PORT_INFO, 0);
    mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmphex(lduw_be_p(p + 16), ==, CHPP_LID(3, 0));

    m = mad_new(SUBN_LID, GET, A_GUID_INFO, 0);
    mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmphex(ldq_be_p(p), ==, guid);
    g_assert_cmphex(ldq_be_p(p + 8), ==, 0);

    m = mad_new(SUBN_LID, GET, A_PKEY, 0);
    mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmphex(lduw_be_p(p), ==, 0xffff);
    g_assert_cmphex(lduw_be_p(p + 2), ==, 0);

    m = mad_new(SUBN_LID, GET, A_SL2VL, 0);
    mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmphex(ldq_be_p(p), ==, 0);
    m = mad_new(SUBN_LID, SET, A_SL2VL, 0);
    memset(m.b + 64, 0xff, 8);
    mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmphex(ldq_be_p(p), ==, UINT64_MAX);
    m = mad_new(SUBN_LID, SET, A_SL2VL, 0);
    m.b[64] = 0x10;                                     /* SL0 to VL1 */
    mad_expect(d, 1, &m, ST_FIELD, &p, &out);
    g_assert_cmphex(ldq_be_p(p), ==, UINT64_MAX);       /* unchanged */

    m = mad_new(SUBN_LID, SET, A_VLARB, 2u << 16 | 1);
    m.b[64] = 0;
    m.b[65] = 7;
    mad_expect(d, 1, &m, 0, &p, &out);
    m = mad_new(SUBN_LID, GET, A_VLARB, 2u << 16 | 1);
    mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmpuint(p[1], ==, 7);

    /* Directed route: same data, the D bit set in the response. */
    m = mad_new(SUBN_DR, GET, A_PORT_INFO, 0);
    stw_be_p(m.b + 32, CHPP_LID_PERMISSIVE);
    stw_be_p(m.b + 34, CHPP_LID_PERMISSIVE);
    m.b[128 + 1] = 1;                                   /* initial path */
    mad_expect(d, 1, &m, ST_DIR, &p, &out);
    g_assert_cmphex(lduw_be_p(p + 16), ==, CHPP_LID(3, 0));
    g_assert(!memcmp(out.mad + 128, m.b + 128, 128));   /* paths kept */
    g_assert(!memcmp(out.mad + 32, m.b + 32, 4));       /* DrSLID, DrDLID */

    /* PMA. */
    m = mad_new(PERF, GET, A_CPI, 0);
    mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmpuint(p[0], ==, 1);
    m = mad_new(PERF, GET, A_PORT_CNT, 0);
    m.b[65] = 1;
    mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmpuint(p[1], ==, 1);
    g_assert_cmpuint(ldl_be_p(p + 32), ==,
                     chpp_counter(d, CHPP_CNT_PKTS_TX));
    chpp_stop(d);
}

/* Bad MADs are answered with a MAD status, or fail the command. */
static void test_sma_bad(void)
{
    ChppDev *d = sma_start(3, 1);
    struct chpp_mad_ifc_out out;
    uint32_t errs;
    Mad m;
    uint8_t *p;

    m = mad_new(SUBN_LID, GET, A_NODE_INFO, 0);
    m.b[0] = 2;                                         /* BaseVersion */
    mad_expect(d, 1, &m, ST_VERSION, NULL, &out);
    m = mad_new(SUBN_LID, GET, A_NODE_INFO, 0);
    m.b[2] = 2;                                         /* ClassVersion */
    mad_expect(d, 1, &m, ST_VERSION, NULL, &out);
    m = mad_new(SUBN_LID, TRAP, A_NODE_INFO, 0);
    mad_expect(d, 1, &m, ST_METHOD, NULL, &out);
    m = mad_new(SUBN_DR, 0x7f, A_NODE_INFO, 0);
    mad_expect(d, 1, &m, ST_METHOD | ST_DIR, NULL, &out);
    m = mad_new(SUBN_LID, GET, A_SM_INFO, 0);           /* the SM's */
    mad_expect(d, 1, &m, ST_ATTR, NULL, &out);
    m = mad_new(SUBN_LID, GET, 0xff00, 0);
    mad_expect(d, 1, &m, ST_ATTR, NULL, &out);
    m = mad_new(SUBN_LID, SET, A_NODE_INFO, 0);
    mad_expect(d, 1, &m, ST_ATTR, NULL, &out);
    m = mad_new(SUBN_LID, GET, A_GUID_INFO, 1);
    mad_expect(d, 1, &m, ST_FIELD, NULL, &out);
    m = mad_new(SUBN_LID, GET, A_PORT_INFO, 2);
    mad_expect(d, 1, &m, ST_FIELD, NULL, &out);
    m = mad_new(SUBN_LID, GET, A_PKEY, 1);
    mad_expect(d, 1, &m, ST_FIELD, NULL, &out);
    m = mad_new(SUBN_LID, GET, A_VLARB, 5u << 16);
    mad_expect(d, 1, &m, ST_FIELD, NULL, &out);
    m = mad_new(SUBN_LID, SET, A_PKEY, 0);              /* P_Key 0 */
    mad_expect(d, 1, &m, ST_FIELD, &p, &out);
    g_assert_cmphex(lduw_be_p(p), ==, 0xffff);
    m = mad_new(PERF, SET, A_PORT_CNT, 0);
    mad_expect(d, 1, &m, ST_ATTR, NULL, &out);
    m = mad_new(PERF, GET, 0x0010, 0);
    mad_expect(d, 1, &m, ST_ATTR, NULL, &out);

    /* NodeDescription is the driver's: Set only with CHPP_MAD_IFC_LOCAL. */
    m = mad_new(SUBN_LID, SET, A_NODE_DESC, 0);
    pstrcpy((char *)m.b + 64, 64, "guest says");
    mad_expect(d, 1, &m, ST_ATTR, NULL, &out);
    mad_expect(d, 1 | CHPP_MAD_IFC_LOCAL, &m, 0, &p, &out);
    g_assert_cmpstr((char *)p, ==, "guest says");

    /* Responses and trap represses are consumed: no reply. */
    m = mad_new(SUBN_LID, GET_RESP, A_NODE_INFO, 0);
    g_assert_cmphex(mad_ifc(d, 1, &m, &out), ==, CHPP_STAT_OK);
    g_assert_cmphex(le32_to_cpu(out.flags), ==, 0);
    m = mad_new(SUBN_LID, TRAP_REPRESS, A_NODE_INFO, 0);
    g_assert_cmphex(mad_ifc(d, 1, &m, &out), ==, CHPP_STAT_OK);
    g_assert_cmphex(le32_to_cpu(out.flags), ==, 0);

    /* No agent for the class, no such port, bad modifier and mailboxes. */
    errs = chpp_counter(d, CHPP_CNT_GUEST_ERRORS);
    m = mad_new(0x07, GET, 0x0010, 0);                  /* CM */
    qtest_memwrite(d->qts, d->mbox_in, m.b, sizeof(m.b));
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_PARAM, CHPP_CMD_MAD_IFC,
                          d->mbox_in, 1, d->mbox_out);
    m = mad_new(SUBN_LID, GET, A_NODE_INFO, 0);
    qtest_memwrite(d->qts, d->mbox_in, m.b, sizeof(m.b));
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_MAD_IFC,
                          d->mbox_in, 2, d->mbox_out);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_MAD_IFC,
                          d->mbox_in, 0, d->mbox_out);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_PARAM, CHPP_CMD_MAD_IFC,
                          d->mbox_in, 1 | 1u << 20, d->mbox_out);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_MAILBOX, CHPP_CMD_MAD_IFC,
                          d->mbox_in + 8, 1, d->mbox_out);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_MAILBOX, CHPP_CMD_MAD_IFC,
                          d->mbox_in, 1, d->mbox_out + 8);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, errs + 6);
    /* Still answers. */
    mad_expect(d, 1, &m, 0, NULL, &out);
    chpp_stop(d);
}

/* Fill @m's PortInfo data from the port's current PortInfo. */
static Mad port_info_set(ChppDev *d)
{
    struct chpp_mad_ifc_out out;
    Mad m = mad_new(SUBN_LID, GET, A_PORT_INFO, 1);
    uint8_t *p;

    mad_expect(d, 1, &m, 0, &p, &out);
    m = mad_new(SUBN_LID, SET, A_PORT_INFO, 1);
    memcpy(m.b + 64, p, 64);
    m.b[64 + 32] &= 0xf0;                               /* state: no change */
    return m;
}

static uint8_t next_port_event(ChppDev *d, uint64_t eq, uint32_t *ci)
{
    struct chpp_eqe eqe;

    chpp_read_eqe(d, eq, *ci, &eqe);
    g_assert(le32_to_cpu(eqe.owner) & CHPP_EQE_OWNER);
    g_assert_cmpuint(eqe.type, ==, CHPP_EVENT_PORT_CHANGE);
    (*ci)++;
    return eqe.subtype;
}

/* A subnet manager sets the LID and SM LID and walks the port to ACTIVE. */
static void test_sma_set_port(void)
{
    ChppDev *d;
    struct chpp_mad_ifc_out out;
    struct chpp_port_info pi;
    uint64_t eq;
    uint32_t ci = 0, flags;
    Mad m;
    uint8_t *p;

    d = chpp_start("node-id=5", NULL);
    chpp_init_hca(d);
    eq = chpp_create_eq(d, 0, 64, 0, false);
    g_assert_cmphex(chpp_map_eq(d, 0, 1ull << CHPP_EVENT_PORT_CHANGE, false),
                    ==, CHPP_STAT_OK);
    /* Without a link the port loops back: up, and INIT until the SM. */
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_INIT_PORT, 0,
                             1 | CHPP_INIT_PORT_WAIT_SM, 0), ==, CHPP_STAT_OK);
    g_assert_cmpuint(next_port_event(d, eq, &ci), ==, CHPP_PORT_INIT);
    query_port(d, &pi);
    g_assert_cmpuint(pi.state, ==, CHPP_PORT_INIT);
    g_assert_cmphex(le16_to_cpu(pi.lid), ==, CHPP_LID(5, 0));

    /* ACTIVE straight from INIT is refused, and nothing changes. */
    m = port_info_set(d);
    stw_be_p(m.b + 64 + 16, 0x20);
    m.b[64 + 32] |= CHPP_PORT_ACTIVE;
    mad_expect(d, 1, &m, ST_FIELD, &p, &out);
    g_assert_cmphex(lduw_be_p(p + 16), ==, CHPP_LID(5, 0));
    g_assert_cmpuint(p[32] & 0xf, ==, CHPP_PORT_INIT);

    /* Invalid LIDs and LMC change nothing either. */
    m = port_info_set(d);
    stw_be_p(m.b + 64 + 16, 0);
    mad_expect(d, 1, &m, ST_FIELD, NULL, &out);
    stw_be_p(m.b + 64 + 16, 0xc000);
    mad_expect(d, 1, &m, ST_FIELD, NULL, &out);
    m = port_info_set(d);
    m.b[64 + 34] |= 1;
    mad_expect(d, 1, &m, ST_FIELD, NULL, &out);
    m = port_info_set(d);
    m.b[64 + 32] |= CHPP_PORT_INIT;
    mad_expect(d, 1, &m, ST_FIELD, NULL, &out);

    /* LID, SM LID, ARMED. */
    m = port_info_set(d);
    stw_be_p(m.b + 64 + 16, 0x20);
    stw_be_p(m.b + 64 + 18, 0x21);
    m.b[64 + 36] = (m.b[64 + 36] & 0xf0) | 3;           /* SM SL 3 */
    m.b[64 + 32] |= CHPP_PORT_ARMED;
    flags = mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmphex(flags, ==, CHPP_MAD_IFC_REPLY | CHPP_MAD_IFC_LID_CHANGE |
                    CHPP_MAD_IFC_SM_CHANGE);
    g_assert_cmphex(lduw_be_p(p + 16), ==, 0x20);
    g_assert_cmpuint(p[32] & 0xf, ==, CHPP_PORT_ARMED);
    g_assert_cmpuint(next_port_event(d, eq, &ci), ==, CHPP_PORT_ARMED);
    query_port(d, &pi);
    g_assert_cmpuint(pi.state, ==, CHPP_PORT_ARMED);
    g_assert_cmphex(le16_to_cpu(pi.lid), ==, 0x20);
    g_assert_cmphex(le16_to_cpu(pi.sm_lid), ==, 0x21);
    g_assert_cmpuint(pi.sm_sl, ==, 3);

    /* ACTIVE, with a client re-registration request. */
    m = port_info_set(d);
    m.b[64 + 32] |= CHPP_PORT_ACTIVE;
    m.b[64 + 51] |= 0x80;
    flags = mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmphex(flags, ==, CHPP_MAD_IFC_REPLY |
                    CHPP_MAD_IFC_CLIENT_REREG);
    g_assert_cmpuint(p[51] & 0x80, ==, 0);              /* reads 0 */
    g_assert_cmpuint(next_port_event(d, eq, &ci), ==, CHPP_PORT_ACTIVE);

    /* The capability mask is the driver's (IsSM): LOCAL only. */
    m = port_info_set(d);
    stl_be_p(m.b + 64 + 20, ldl_be_p(m.b + 64 + 20) | 2);
    flags = mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmphex(ldl_be_p(p + 20) & 2, ==, 0);
    flags = mad_expect(d, 1 | CHPP_MAD_IFC_LOCAL, &m, 0, &p, &out);
    g_assert_cmphex(flags, ==, CHPP_MAD_IFC_REPLY | CHPP_MAD_IFC_CAP_CHANGE);
    g_assert_cmphex(ldl_be_p(p + 20) & 2, ==, 2);
    query_port(d, &pi);
    g_assert_cmphex(le32_to_cpu(pi.cap_mask) & 2, ==, 2);

    /* P_Key table and GID prefix. */
    m = mad_new(SUBN_LID, SET, A_PKEY, 0);
    stw_be_p(m.b + 64, 0x7fff);
    flags = mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmphex(flags, ==, CHPP_MAD_IFC_REPLY | CHPP_MAD_IFC_PKEY_CHANGE);
    m = port_info_set(d);
    stq_be_p(m.b + 64 + 8, 0xfec0000000000001ull);
    flags = mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmphex(flags, ==, CHPP_MAD_IFC_REPLY | CHPP_MAD_IFC_GID_CHANGE);
    query_port(d, &pi);
    g_assert_cmphex(le16_to_cpu(pi.pkey), ==, 0x7fff);
    g_assert_cmphex(le64_to_cpu(pi.gid_prefix), ==, 0xfec0000000000001ull);

    /* DOWN retrains the link: the port comes back in INIT. */
    m = port_info_set(d);
    m.b[64 + 32] |= CHPP_PORT_DOWN;
    mad_expect(d, 1, &m, 0, &p, &out);
    g_assert_cmpuint(p[32] & 0xf, ==, CHPP_PORT_INIT);
    g_assert_cmpuint(next_port_event(d, eq, &ci), ==, CHPP_PORT_DOWN);
    g_assert_cmpuint(next_port_event(d, eq, &ci), ==, CHPP_PORT_INIT);

    /* CLOSE_PORT, then no state can be set; CLOSE_HCA forgets the SM. */
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_CLOSE_PORT, 0, 1, 0), ==,
                    CHPP_STAT_OK);
    m = port_info_set(d);
    m.b[64 + 32] |= CHPP_PORT_ARMED;
    mad_expect(d, 1, &m, ST_FIELD, NULL, &out);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_CLOSE_HCA, 0, 0, 0), ==,
                    CHPP_STAT_OK);
    chpp_init_hca(d);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_INIT_PORT, 0, 1, 0), ==,
                    CHPP_STAT_OK);
    query_port(d, &pi);
    g_assert_cmpuint(pi.state, ==, CHPP_PORT_ACTIVE);
    g_assert_cmphex(le16_to_cpu(pi.lid), ==, CHPP_LID(5, 0));
    g_assert_cmphex(le16_to_cpu(pi.sm_lid), ==, 0);
    g_assert_cmphex(le16_to_cpu(pi.pkey), ==, 0xffff);
    chpp_stop(d);
}

/* ---- QP0 and QP1 over a link ------------------------------------------ */

typedef ChppNode Node;

static void special_qp(Node *n, ChppTQp *q, uint32_t qpn, uint8_t type,
                       uint8_t expect)
{
    struct chpp_qp_context c = {
        .type = type, .port = 1, .pd = cpu_to_le32(PD),
        .send_cqn = cpu_to_le32(0), .recv_cqn = cpu_to_le32(1),
        .log_sq_size = 4, .log_sq_stride = 7,
        .log_rq_size = 4, .log_rq_stride = 7,
        .uar = cpu_to_le16(CHPP_NODE_UAR),
        .qkey = cpu_to_le32(type == CHPP_QPT_GSI ? CHPP_QP1_QKEY : 0),
    };
    uint8_t st;

    *q = (ChppTQp) {
        .qpn = qpn, .type = type, .log_sq = 4, .log_rq = 4, .stride = 7,
        .uar = CHPP_NODE_UAR,
    };
    chpp_qp_alloc_rings(n->d, &c, &q->sq, &q->rq);
    /* As ib_modify_qp_is_ok() has it: no PORT attribute. */
    if (expect == CHPP_STAT_OK) {
        g_assert_cmphex(chpp_modify_qp(n->d, CHPP_CMD_RST2INIT_QP, qpn,
                                       CHPP_QP_ATTR_PKEY_INDEX |
                                       CHPP_QP_ATTR_PORT | CHPP_QP_ATTR_QKEY,
                                       &c), ==, CHPP_STAT_BAD_PARAM);
    }
    st = chpp_modify_qp(n->d, CHPP_CMD_RST2INIT_QP, qpn,
                        CHPP_QP_ATTR_PKEY_INDEX | CHPP_QP_ATTR_QKEY, &c);
    g_assert_cmphex(st, ==, expect);
    if (st) {
        return;
    }
    g_assert_cmphex(chpp_modify_qp(n->d, CHPP_CMD_INIT2RTR_QP, qpn, 0, &c), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_modify_qp(n->d, CHPP_CMD_RTR2RTS_QP, qpn,
                                   CHPP_QP_ATTR_SQ_PSN, &c), ==, CHPP_STAT_OK);
}

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

/* Wait for a CQE of @n's CQ @cqn, stepping both clocks. */
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

static uint64_t node_buf(Node *n, size_t len, uint32_t *key)
{
    uint64_t addr = guest_alloc(&n->d->qs->alloc, len);

    qtest_memset(n->d->qts, addr, 0, len);
    *key = chpp_create_mr(n->d, n->next_mr++, PD, addr, len, MR_ALL);
    return addr;
}

/* Post a MAD-sized send of @len bytes from @buf on @q. */
static void mad_send(Node *n, ChppTQp *q, uint64_t wr_id, uint32_t dnode,
                     uint32_t dqpn, uint32_t qkey, uint8_t ud_flags,
                     uint8_t op, uint64_t buf, uint32_t len, uint32_t key)
{
    ChppWqeBuf *w = chpp_wqe_new(op, CHPP_WQE_SIGNALED, wr_id, 0);

    chpp_wqe_ud(w, dnode, dqpn, qkey, 0);
    w->buf[w->pos - sizeof(struct chpp_wqe_ud) + 14] = ud_flags;
    chpp_wqe_sge(w, buf, len, key);
    chpp_post_send(n->d, q, w, true);
}

static void expect_send(Node *n, Node *o, uint64_t wr_id, uint8_t status)
{
    struct chpp_cqe cqe;

    poll2(n, o, 0, &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
}

static void expect_mad(Node *n, Node *o, uint32_t qpn, uint64_t wr_id,
                       uint16_t src_node, uint32_t src_qp, uint64_t buf,
                       uint8_t seed)
{
    struct chpp_cqe cqe;

    poll2(n, o, 1, &cqe);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, qpn);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==,
                     CHPP_UD_GRH_SIZE + CHPP_MAD_SIZE);
    g_assert_cmpuint(le16_to_cpu(cqe.src_node), ==, src_node);
    g_assert_cmpuint(le32_to_cpu(cqe.src_qp), ==, src_qp);
    chpp_check(n->d, buf + CHPP_UD_GRH_SIZE, CHPP_MAD_SIZE, seed);
}

static void test_special_qps_link(void)
{
    Node a, b;
    ChppTQp a0, a1, b0, b1, x;
    uint32_t ka, kb, drops;
    uint64_t ba, bb;
    ChppTSge sa, sb;

    pair_start(&a, &b, "mad");
    /* SMI is QP 0's type only, GSI QP 1's. */
    special_qp(&a, &x, 2, CHPP_QPT_SMI, CHPP_STAT_BAD_PARAM);
    special_qp(&a, &x, 0, CHPP_QPT_GSI, CHPP_STAT_BAD_PARAM);
    special_qp(&a, &x, 3, 0x12, CHPP_STAT_BAD_PARAM);
    special_qp(&a, &a0, 0, CHPP_QPT_SMI, CHPP_STAT_OK);
    special_qp(&a, &a1, 1, CHPP_QPT_GSI, CHPP_STAT_OK);
    special_qp(&b, &b0, 0, CHPP_QPT_SMI, CHPP_STAT_OK);
    special_qp(&b, &b1, 1, CHPP_QPT_GSI, CHPP_STAT_OK);

    ba = node_buf(&a, 8192, &ka);
    bb = node_buf(&b, 8192, &kb);
    /* Receive buffers: GRH area + MAD, from offset 4096. */
    sa = (ChppTSge) { ba + 4096, CHPP_UD_GRH_SIZE + CHPP_MAD_SIZE, ka };
    sb = (ChppTSge) { bb + 4096, CHPP_UD_GRH_SIZE + CHPP_MAD_SIZE, kb };
    chpp_post_recvs(a.d, &a0, 100, &sa, 1, 1);
    chpp_post_recvs(b.d, &b0, 200, &sb, 1, 1);
    chpp_post_recvs(b.d, &b1, 300, &sb, 1, 4);

    /* GSI to GSI, LID-routed: node 1 -> node 2. */
    chpp_fill(a.d, ba, CHPP_MAD_SIZE, 11);
    mad_send(&a, &a1, 1, 2, 1, CHPP_QP1_QKEY, 0, CHPP_WQE_SEND, ba,
             CHPP_MAD_SIZE, ka);
    expect_send(&a, &b, 1, CHPP_WC_SUCCESS);
    expect_mad(&b, &a, 1, 300, 1, 1, bb + 4096, 11);

    /* SMI, directed route: the permissive LID reaches the peer's PF. */
    chpp_fill(b.d, bb, CHPP_MAD_SIZE, 22);
    mad_send(&b, &b0, 2, 77, 0, 0, CHPP_WQE_UD_PEER, CHPP_WQE_SEND, bb,
             CHPP_MAD_SIZE, kb);
    expect_send(&b, &a, 2, CHPP_WC_SUCCESS);
    expect_mad(&a, &b, 0, 100, 2, 0, ba + 4096, 22);

    /* A GSI datagram with another Q_Key is dropped and counted. */
    drops = chpp_counter(b.d, CHPP_CNT_PKTS_DROPPED);
    mad_send(&a, &a1, 3, 2, 1, 0x1234, 0, CHPP_WQE_SEND, ba, CHPP_MAD_SIZE,
             ka);
    expect_send(&a, &b, 3, CHPP_WC_SUCCESS);
    /* ... and one that is no MAD (100 bytes). */
    mad_send(&a, &a1, 4, 2, 1, CHPP_QP1_QKEY, 0, CHPP_WQE_SEND, ba, 100, ka);
    expect_send(&a, &b, 4, CHPP_WC_SUCCESS);
    /* The next good MAD still lands in the next receive. */
    chpp_fill(a.d, ba, CHPP_MAD_SIZE, 33);
    mad_send(&a, &a1, 5, 2, 1, CHPP_QP1_QKEY, 0, CHPP_WQE_SEND, ba,
             CHPP_MAD_SIZE, ka);
    expect_send(&a, &b, 5, CHPP_WC_SUCCESS);
    expect_mad(&b, &a, 1, 301, 1, 1, bb + 4096, 33);
    g_assert_cmpuint(chpp_counter(b.d, CHPP_CNT_PKTS_DROPPED), ==, drops + 2);

    /* A MAD longer than 256 bytes, and a PUT, fail on the sender. */
    mad_send(&a, &a1, 6, 2, 1, CHPP_QP1_QKEY, 0, CHPP_WQE_SEND, ba,
             CHPP_MAD_SIZE + 1, ka);
    expect_send(&a, &b, 6, CHPP_WC_LOC_LEN_ERR);
    chpp_stop(a.d);
    chpp_stop(b.d);
}

/* Special QP sends the device refuses: a PUT, the PEER flag on UD. */
static void test_special_qp_errors(void)
{
    Node a;
    ChppTQp q1;
    ChppWqeBuf *w;
    struct chpp_cqe cqe;
    uint32_t k;
    uint64_t buf;

    chpp_node_setup(&a, chpp_start("node-id=1", NULL), 1, 0);
    special_qp(&a, &q1, 1, CHPP_QPT_GSI, CHPP_STAT_OK);
    buf = node_buf(&a, 4096, &k);
    w = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED, 9, 0);
    chpp_wqe_ud(w, 1, 1, CHPP_QP1_QKEY, 0);
    chpp_wqe_raddr(w, buf, k);
    chpp_wqe_sge(w, buf, 8, k);
    chpp_post_send(a.d, &q1, w, true);
    chpp_poll_cq(a.d, &a.cq[0], &cqe);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(cqe.vendor_err, ==, CHPP_VERR_BAD_OPCODE);
    chpp_stop(a.d);
}

/* A GSI QP on a single node: loopback, and the PEER flag without a link. */
static void test_special_qp_loopback(void)
{
    Node a;
    ChppTQp q1;
    struct chpp_cqe cqe;
    ChppTSge sg;
    uint32_t k, drops;
    uint64_t buf;

    chpp_node_setup(&a, chpp_start("node-id=1", NULL), 1, 0);
    special_qp(&a, &q1, 1, CHPP_QPT_GSI, CHPP_STAT_OK);
    buf = node_buf(&a, 8192, &k);
    sg = (ChppTSge) { buf + 4096, CHPP_UD_GRH_SIZE + CHPP_MAD_SIZE, k };
    chpp_post_recvs(a.d, &q1, 50, &sg, 1, 1);
    chpp_fill(a.d, buf, CHPP_MAD_SIZE, 44);
    mad_send(&a, &q1, 1, 1, 1, CHPP_QP1_QKEY, 0, CHPP_WQE_SEND, buf,
             CHPP_MAD_SIZE, k);
    chpp_poll_cq(a.d, &a.cq[0], &cqe);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    chpp_poll_cq(a.d, &a.cq[1], &cqe);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.src_qp), ==, 1);
    chpp_check(a.d, buf + 4096 + CHPP_UD_GRH_SIZE, CHPP_MAD_SIZE, 44);
    /* No link: a directed-route MAD is lost, its WQE completes. */
    drops = chpp_counter(a.d, CHPP_CNT_PKTS_DROPPED);
    mad_send(&a, &q1, 2, 1, 1, CHPP_QP1_QKEY, CHPP_WQE_UD_PEER,
             CHPP_WQE_SEND, buf, CHPP_MAD_SIZE, k);
    chpp_poll_cq(a.d, &a.cq[0], &cqe);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    g_assert_cmpuint(chpp_counter(a.d, CHPP_CNT_PKTS_DROPPED), ==, drops + 1);
    g_assert(!chpp_cqe_valid(a.d, &a.cq[1], &cqe));
    chpp_stop(a.d);
}

/* ---- multicast groups (ATTACH_MCG, DETACH_MCG) ------------------------ */

#define QKEY    0x1234
#define MLID    0xc001

static uint8_t mcg(ChppDev *d, bool attach, uint32_t qpn, uint8_t g,
                   uint16_t mlid)
{
    struct chpp_mcg_attach m = { .mlid = cpu_to_le16(mlid) };

    m.mgid[0] = 0xff;
    m.mgid[1] = 0x12;
    m.mgid[15] = g;
    qtest_memwrite(d->qts, d->mbox_in, &m, sizeof(m));
    return chpp_cmd(d, attach ? CHPP_CMD_ATTACH_MCG : CHPP_CMD_DETACH_MCG,
                    d->mbox_in, qpn, 0);
}

/* UD QP @qpn in RTS with Q_Key QKEY and @nrecv 2 KiB receives. */
static void ud_qp(Node *n, ChppTQp *q, uint32_t qpn, uint32_t nrecv)
{
    struct chpp_qp_context c = {
        .type = CHPP_QPT_UD, .port = 1, .pd = cpu_to_le32(PD),
        .send_cqn = cpu_to_le32(0), .recv_cqn = cpu_to_le32(1),
        .log_sq_size = 4, .log_sq_stride = 7,
        .log_rq_size = 4, .log_rq_stride = 7,
        .uar = cpu_to_le16(CHPP_NODE_UAR), .qkey = cpu_to_le32(QKEY),
        .magic = 1,
    };
    uint32_t k;
    uint64_t buf;
    ChppTSge sg;

    *q = (ChppTQp) {
        .qpn = qpn, .type = CHPP_QPT_UD, .log_sq = 4, .log_rq = 4,
        .stride = 7, .uar = CHPP_NODE_UAR, .magic = 1,
    };
    chpp_qp_alloc_rings(n->d, &c, &q->sq, &q->rq);
    g_assert_cmphex(chpp_modify_qp(n->d, CHPP_CMD_RST2INIT_QP, qpn,
                                   CHPP_QP_ATTR_PKEY_INDEX |
                                   CHPP_QP_ATTR_PORT | CHPP_QP_ATTR_QKEY,
                                   &c), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_modify_qp(n->d, CHPP_CMD_INIT2RTR_QP, qpn, 0, &c), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_modify_qp(n->d, CHPP_CMD_RTR2RTS_QP, qpn,
                                   CHPP_QP_ATTR_SQ_PSN, &c), ==, CHPP_STAT_OK);
    if (nrecv) {
        buf = node_buf(n, 2048 * nrecv, &k);
        sg = (ChppTSge) { buf, 2048, k };
        chpp_post_recvs(n->d, q, qpn << 8, &sg, 1, nrecv);
    }
}

/* The next receive CQE of @n is a @len-byte datagram on QP @qpn. */
static void expect_recv(Node *n, Node *o, uint32_t qpn, uint32_t len,
                        uint16_t src_node, uint32_t src_qp)
{
    struct chpp_cqe cqe;

    poll2(n, o, 1, &cqe);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, qpn);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, CHPP_UD_GRH_SIZE + len);
    g_assert_cmpuint(le16_to_cpu(cqe.src_node), ==, src_node);
    g_assert_cmpuint(le32_to_cpu(cqe.src_qp), ==, src_qp);
}

/*
 * A datagram to a multicast LID reaches every attached QP on both nodes,
 * the sender's own QP included; the table's errors; 2RST leaves groups.
 */
static void test_mcast_link(void)
{
    Node a, b;
    ChppTQp a2, a3, b2, rc;
    struct chpp_qp_context zero = {};
    struct chpp_cqe cqe;
    uint32_t k, drops;
    uint64_t buf;
    ChppWqeBuf *w;

    pair_start(&a, &b, "mcast");
    ud_qp(&a, &a2, 2, 4);
    ud_qp(&a, &a3, 3, 4);
    ud_qp(&b, &b2, 2, 4);
    /* Errors: QP range, RESET, not UD, MLID, reserved, detach unknown. */
    chpp_assert_cmd_fails(a.d, CHPP_STAT_BAD_INDEX, CHPP_CMD_ATTACH_MCG,
                          a.d->mbox_in, 99, 0);
    g_assert_cmphex(mcg(a.d, true, 1, 1, MLID), ==, CHPP_STAT_BAD_RES_STATE);
    chpp_node_qp(&a, 0, 0x10, 4, 7);                    /* RC QP 0 */
    rc = a.qp;
    g_assert_cmphex(mcg(a.d, true, rc.qpn, 1, MLID), ==,
                    CHPP_STAT_BAD_RES_STATE);
    g_assert_cmphex(mcg(a.d, true, 2, 1, 0x10), ==, CHPP_STAT_BAD_PARAM);
    g_assert_cmphex(mcg(a.d, true, 2, 1, 0xffff), ==, CHPP_STAT_BAD_PARAM);
    g_assert_cmphex(mcg(a.d, false, 2, 1, MLID), ==, CHPP_STAT_BAD_RESOURCE);
    /* Attach; twice is refused, another MLID for the MGID too. */
    g_assert_cmphex(mcg(a.d, true, 2, 1, MLID), ==, CHPP_STAT_OK);
    g_assert_cmphex(mcg(a.d, true, 2, 1, MLID), ==, CHPP_STAT_BAD_RES_STATE);
    g_assert_cmphex(mcg(a.d, true, 3, 1, 0xc002), ==, CHPP_STAT_BAD_PARAM);
    g_assert_cmphex(mcg(a.d, true, 3, 1, MLID), ==, CHPP_STAT_OK);
    g_assert_cmphex(mcg(b.d, true, 2, 1, MLID), ==, CHPP_STAT_OK);

    /* One send from node 1's QP 2: three receives. */
    buf = node_buf(&a, 4096, &k);
    chpp_fill(a.d, buf, 1000, 5);
    w = chpp_wqe_new(CHPP_WQE_SEND, CHPP_WQE_SIGNALED, 1, 0);
    chpp_wqe_ud(w, MLID, 0, QKEY, 0);
    w->buf[w->pos - sizeof(struct chpp_wqe_ud) + 14] = CHPP_WQE_UD_MCAST;
    chpp_wqe_sge(w, buf, 1000, k);
    chpp_post_send(a.d, &a2, w, true);
    expect_send(&a, &b, 1, CHPP_WC_SUCCESS);
    expect_recv(&b, &a, 2, 1000, 1, 2);
    expect_recv(&a, &b, 2, 1000, 1, 2);                 /* loopback, itself */
    expect_recv(&a, &b, 3, 1000, 1, 2);

    /* Node 2 answers to the group; 2RST of QP 3 left the group. */
    g_assert_cmphex(chpp_modify_qp(a.d, CHPP_CMD_2RST_QP, 3, 0, &zero), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(mcg(a.d, false, 3, 1, MLID), ==, CHPP_STAT_BAD_RESOURCE);
    buf = node_buf(&b, 4096, &k);
    w = chpp_wqe_new(CHPP_WQE_SEND, CHPP_WQE_SIGNALED, 2, 0);
    chpp_wqe_ud(w, MLID, 0, QKEY, 0);
    w->buf[w->pos - sizeof(struct chpp_wqe_ud) + 14] = CHPP_WQE_UD_MCAST;
    chpp_wqe_sge(w, buf, 100, k);
    chpp_post_send(b.d, &b2, w, true);
    expect_send(&b, &a, 2, CHPP_WC_SUCCESS);
    expect_recv(&a, &b, 2, 100, 2, 2);
    expect_recv(&b, &a, 2, 100, 2, 2);
    g_assert(!chpp_cqe_valid(a.d, &a.cq[1], &cqe));

    /* Detached: a multicast finds no member, dropped and counted. */
    g_assert_cmphex(mcg(b.d, false, 2, 1, MLID), ==, CHPP_STAT_OK);
    drops = chpp_counter(b.d, CHPP_CNT_PKTS_DROPPED);
    w = chpp_wqe_new(CHPP_WQE_SEND, CHPP_WQE_SIGNALED, 3, 0);
    chpp_wqe_ud(w, MLID, 0, QKEY, 0);
    w->buf[w->pos - sizeof(struct chpp_wqe_ud) + 14] = CHPP_WQE_UD_MCAST;
    chpp_wqe_sge(w, buf, 100, k);
    chpp_post_send(b.d, &b2, w, true);
    expect_send(&b, &a, 3, CHPP_WC_SUCCESS);
    expect_recv(&a, &b, 2, 100, 2, 2);
    g_assert_cmpuint(chpp_counter(b.d, CHPP_CNT_PKTS_DROPPED), ==, drops + 1);

    /* A unicast MLID in a multicast WQE is a bad WQE. */
    w = chpp_wqe_new(CHPP_WQE_SEND, CHPP_WQE_SIGNALED, 4, 0);
    chpp_wqe_ud(w, 5, 0, QKEY, 0);
    w->buf[w->pos - sizeof(struct chpp_wqe_ud) + 14] = CHPP_WQE_UD_MCAST;
    chpp_wqe_sge(w, buf, 100, k);
    chpp_post_send(b.d, &b2, w, true);
    expect_send(&b, &a, 4, CHPP_WC_LOC_QP_OP_ERR);
    chpp_stop(a.d);
    chpp_stop(b.d);
}

/*
 * Migration: what an SM set through the SMA (LID, SM LID, port state,
 * node description) and the multicast table ("chpp-hca/sma" and
 * "chpp-hca/mcg" subsections) arrive; multicast still reaches the QP.
 */
static void test_migrate_sma_mcg(void)
{
    g_autofree char *uri = g_strdup_printf("unix:%s/mig", tmpdir);
    struct chpp_mad_ifc_out out;
    struct chpp_port_info pi;
    struct chpp_cqe cqe;
    ChppTQp q2;
    ChppDev *dst;
    Node a;
    Mad m;
    uint8_t *p;
    uint32_t k;
    uint64_t buf;
    ChppWqeBuf *w;

    chpp_node_setup(&a, chpp_start("node-id=5", NULL), 5, 0);
    g_assert_cmphex(chpp_cmd(a.d, CHPP_CMD_CLOSE_PORT, 0, 1, 0), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_cmd(a.d, CHPP_CMD_INIT_PORT, 0,
                             1 | CHPP_INIT_PORT_WAIT_SM, 0), ==, CHPP_STAT_OK);
    m = port_info_set(a.d);
    stw_be_p(m.b + 64 + 16, 0x20);
    stw_be_p(m.b + 64 + 18, 0x21);
    m.b[64 + 32] |= CHPP_PORT_ARMED;
    mad_expect(a.d, 1, &m, 0, NULL, &out);
    m = mad_new(SUBN_LID, SET, A_NODE_DESC, 0);
    pstrcpy((char *)m.b + 64, 64, "before migration");
    mad_expect(a.d, 1 | CHPP_MAD_IFC_LOCAL, &m, 0, NULL, &out);
    ud_qp(&a, &q2, 2, 4);
    g_assert_cmphex(mcg(a.d, true, 2, 7, 0xc003), ==, CHPP_STAT_OK);
    buf = node_buf(&a, 4096, &k);

    dst = chpp_start_incoming("node-id=5", uri);
    migrate(a.d->qs, dst->qs, uri);
    chpp_adopt_migrated(dst, a.d);
    chpp_stop(a.d);
    a.d = dst;

    query_port(a.d, &pi);
    g_assert_cmpuint(pi.state, ==, CHPP_PORT_ARMED);
    g_assert_cmphex(le16_to_cpu(pi.lid), ==, 0x20);
    g_assert_cmphex(le16_to_cpu(pi.sm_lid), ==, 0x21);
    m = mad_new(SUBN_LID, GET, A_NODE_DESC, 0);
    mad_expect(a.d, 1, &m, 0, &p, &out);
    g_assert_cmpstr((char *)p, ==, "before migration");
    /* The SM goes on: ACTIVE. */
    m = port_info_set(a.d);
    m.b[64 + 32] |= CHPP_PORT_ACTIVE;
    mad_expect(a.d, 1, &m, 0, &p, &out);
    g_assert_cmpuint(p[32] & 0xf, ==, CHPP_PORT_ACTIVE);
    /* The group is there: a multicast from QP 2 reaches QP 2. */
    w = chpp_wqe_new(CHPP_WQE_SEND, CHPP_WQE_SIGNALED, 1, 0);
    chpp_wqe_ud(w, 0xc003, 0, QKEY, 0);
    w->buf[w->pos - sizeof(struct chpp_wqe_ud) + 14] = CHPP_WQE_UD_MCAST;
    chpp_wqe_sge(w, buf, 64, k);
    chpp_post_send(a.d, &q2, w, true);
    chpp_poll_cq(a.d, &a.cq[0], &cqe);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    chpp_poll_cq(a.d, &a.cq[1], &cqe);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, 2);
    g_assert_cmphex(mcg(a.d, false, 2, 7, 0xc003), ==, CHPP_STAT_OK);
    chpp_stop(a.d);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    if (!qtest_has_machine("q35")) {
        return 1;
    }
    tmpdir = g_dir_make_tmp("chpp-mad-XXXXXX", NULL);
    g_assert(tmpdir);
    qtest_add_func("/chpp-hca/mad/sma-get", test_sma_get);
    qtest_add_func("/chpp-hca/mad/sma-bad", test_sma_bad);
    qtest_add_func("/chpp-hca/mad/sma-set-port", test_sma_set_port);
    qtest_add_func("/chpp-hca/mad/special-qps-link", test_special_qps_link);
    qtest_add_func("/chpp-hca/mad/special-qp-errors", test_special_qp_errors);
    qtest_add_func("/chpp-hca/mad/special-qp-loopback",
                   test_special_qp_loopback);
    qtest_add_func("/chpp-hca/mad/mcast-link", test_mcast_link);
    qtest_add_func("/chpp-hca/mad/migrate-sma-mcg", test_migrate_sma_mcg);
    ret = g_test_run();
    rmdir(tmpdir);
    g_free(tmpdir);
    return ret;
}
