/*
 * chpp-hca: management datagrams the device answers itself, through the
 * MAD_IFC command: the subnet management agent (SMA) of each function's
 * port (SMPs, classes 0x01 and 0x81) and its performance management agent
 * (PMA, class 0x04).  The driver's process_mad hands every SMP and PMA
 * MAD addressed to the port to MAD_IFC and sends back the response the
 * device writes (docs/management-datagrams.md).
 *
 * MADs are big-endian, as on the wire; a MAD is untrusted guest data:
 * every field is checked and a bad one is answered with a MAD status.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "chpp-hca.h"
#include "trace.h"

/* The MAD header and the classes, methods and attributes the agents use. */
#define MAD_BASE_VERSION        0
#define MAD_CLASS               1
#define MAD_CLASS_VERSION       2
#define MAD_METHOD              3
#define MAD_STATUS              4
#define MAD_ATTR_ID             16
#define MAD_ATTR_MOD            20
#define MAD_SMP_DATA            64      /* SMPs, LID-routed and DR */
#define MAD_SMP_DATA_LEN        64
#define MAD_PMA_DATA            64
#define MAD_PMA_DATA_LEN        192

#define CLASS_SUBN_LID          0x01
#define CLASS_PERF              0x04
#define CLASS_SUBN_DR           0x81

#define METHOD_GET              0x01
#define METHOD_SET              0x02
#define METHOD_GET_RESP         0x81
#define METHOD_TRAP_REPRESS     0x07
#define METHOD_RESP             0x80

#define STATUS_BAD_VERSION      0x0004
#define STATUS_UNSUP_METHOD     0x0008
#define STATUS_UNSUP_ATTR       0x000c
#define STATUS_INVALID_FIELD    0x001c
#define STATUS_DR_DIRECTION     0x8000  /* DR SMP: D bit of the response */

#define ATTR_CLASS_PORT_INFO    0x0001
#define ATTR_NODE_DESC          0x0010
#define ATTR_NODE_INFO          0x0011
#define ATTR_GUID_INFO          0x0014
#define ATTR_PORT_INFO          0x0015
#define ATTR_PKEY_TABLE         0x0016
#define ATTR_SL_TO_VL           0x0017
#define ATTR_VL_ARB             0x0018
#define ATTR_PORT_COUNTERS      0x0012

#define PORT_CAP_IS_SM          (1u << 1)
#define RESP_TIME_VALUE         18      /* 4.096 us * 2^18: about 1 s */
#define VL_ARB_ENTRIES          32      /* per block of the table */

/* PortInfo offsets (IBA 14.2.5.6) inside the SMP data. */
#define PI_MKEY                 0
#define PI_GID_PREFIX           8
#define PI_LID                  16
#define PI_SM_LID               18
#define PI_CAP_MASK             20
#define PI_MKEY_LEASE           26
#define PI_LOCAL_PORT           28
#define PI_WIDTH_ENABLED        29
#define PI_WIDTH_SUPPORTED      30
#define PI_WIDTH_ACTIVE         31
#define PI_SPEED_STATE          32      /* LinkSpeedSupported | PortState */
#define PI_PHYS_DOWNDEF         33      /* PhysState | LinkDownDefault */
#define PI_PROTECT_LMC          34      /* M_KeyProtectBits, LMC */
#define PI_SPEED_ACT_EN         35      /* LinkSpeedActive | Enabled */
#define PI_NMTU_SMSL            36      /* NeighborMTU | MasterSMSL */
#define PI_VLCAP_INIT           37
#define PI_VL_HIGH_LIMIT        38
#define PI_MTUCAP               41      /* InitTypeReply | MTUCap */
#define PI_STALL_HOQ            42
#define PI_OPVLS                43
#define PI_GUID_CAP             50
#define PI_REREG_TIMEOUT        51      /* ClientReregister | SubnetTimeOut */
#define PI_RESP_TIME            52

typedef struct ChppMad {
    uint8_t in[CHPP_MAD_SIZE];
    struct chpp_mad_ifc_out out;
    uint8_t *data;              /* the response's attribute data */
    uint16_t status;            /* MAD status of the response */
    uint32_t flags;             /* CHPP_MAD_IFC_* */
    bool local;                 /* CHPP_MAD_IFC_LOCAL */
} ChppMad;

static uint64_t chpp_mad_node_guid(ChppHcaState *s)
{
    return CHPP_NODE_GUID(s->params.node_id, s->func);
}

static void chpp_sma_node_info(ChppHcaState *s, uint8_t *d)
{
    d[0] = 1;                                   /* BaseVersion */
    d[1] = 1;                                   /* ClassVersion */
    d[2] = 1;                                   /* NodeType: CA */
    d[3] = CHPP_NUM_PORTS;
    stq_be_p(d + 4, CHPP_NODE_GUID(s->params.node_id, 0));
    stq_be_p(d + 12, chpp_mad_node_guid(s));
    stq_be_p(d + 20, CHPP_PORT_GUID(s->params.node_id, s->func));
    stw_be_p(d + 28, 1);                        /* PartitionCap */
    stw_be_p(d + 30, s->func ? s->params.vf_device_id : s->params.device_id);
    stl_be_p(d + 32, CHPP_PCI_REVISION);
    d[36] = 1;                                  /* LocalPortNum */
    d[37] = (CHPP_IB_VENDOR_ID >> 16) & 0xff;
    d[38] = (CHPP_IB_VENDOR_ID >> 8) & 0xff;
    d[39] = CHPP_IB_VENDOR_ID & 0xff;
}

static void chpp_sma_port_info(ChppHcaState *s, const ChppSma *sma,
                               uint8_t *d)
{
    memset(d, 0, MAD_SMP_DATA_LEN);
    stq_be_p(d + PI_MKEY, sma->mkey);
    stq_be_p(d + PI_GID_PREFIX, sma->gid_prefix);
    stw_be_p(d + PI_LID, sma->lid);
    stw_be_p(d + PI_SM_LID, sma->sm_lid);
    stl_be_p(d + PI_CAP_MASK, sma->cap_mask);
    stw_be_p(d + PI_MKEY_LEASE, sma->mkey_lease);
    d[PI_LOCAL_PORT] = 1;
    d[PI_WIDTH_ENABLED] = sma->width_enabled;
    d[PI_WIDTH_SUPPORTED] = 1;                  /* 1x */
    d[PI_WIDTH_ACTIVE] = 1;
    d[PI_SPEED_STATE] = 1 << 4 | s->port_state[0];  /* SDR */
    d[PI_PHYS_DOWNDEF] = (chpp_port_phys_up(s) ? CHPP_PORT_PHYS_LINK_UP :
                          CHPP_PORT_PHYS_POLLING) << 4 | 2;
    d[PI_PROTECT_LMC] = sma->mkey_protect << 6 | sma->lmc;
    d[PI_SPEED_ACT_EN] = 1 << 4 | sma->speed_enabled;
    d[PI_NMTU_SMSL] = sma->neighbor_mtu << 4 | sma->sm_sl;
    d[PI_VLCAP_INIT] = 1 << 4;                  /* VLCap: VL0 */
    d[PI_VL_HIGH_LIMIT] = sma->vl_high_limit;
    d[PI_MTUCAP] = CHPP_MTU_4096;
    d[PI_STALL_HOQ] = sma->stall_hoq;
    d[PI_OPVLS] = sma->op_vls << 4;
    d[PI_GUID_CAP] = 1;
    d[PI_REREG_TIMEOUT] = sma->subnet_timeout;
    d[PI_RESP_TIME] = RESP_TIME_VALUE;
}

/*
 * Set PortInfo: every field is checked before any is taken (IBA 14.2.5.6:
 * an invalid field changes nothing).  The port state moves as an SM
 * drives it: INIT -> ARMED -> ACTIVE; DOWN retrains the link, which
 * comes back in INIT.
 */
static void chpp_sma_set_port_info(ChppHcaState *s, ChppMad *m)
{
    const uint8_t *d = m->in + MAD_SMP_DATA;
    ChppSma *sma = &s->sma[0], n = *sma;
    uint8_t cur = s->port_state[0], state = d[PI_SPEED_STATE] & 0xf;
    uint8_t mtu = d[PI_NMTU_SMSL] >> 4, vls = d[PI_OPVLS] >> 4;
    uint8_t width = d[PI_WIDTH_ENABLED], speed = d[PI_SPEED_ACT_EN] & 0xf;
    const char *bad = NULL;

    n.mkey = ldq_be_p(d + PI_MKEY);
    n.gid_prefix = ldq_be_p(d + PI_GID_PREFIX);
    n.lid = lduw_be_p(d + PI_LID);
    n.sm_lid = lduw_be_p(d + PI_SM_LID);
    n.mkey_lease = lduw_be_p(d + PI_MKEY_LEASE);
    n.mkey_protect = d[PI_PROTECT_LMC] >> 6;
    n.lmc = d[PI_PROTECT_LMC] & 7;
    n.sm_sl = d[PI_NMTU_SMSL] & 0xf;
    n.vl_high_limit = d[PI_VL_HIGH_LIMIT];
    n.stall_hoq = d[PI_STALL_HOQ];
    n.subnet_timeout = d[PI_REREG_TIMEOUT] & 0x1f;
    if (m->local) {
        n.cap_mask = ldl_be_p(d + PI_CAP_MASK);
    }
    if (!n.lid || n.lid >= 0xc000) {
        bad = "LID";
    } else if (n.sm_lid >= 0xc000) {
        bad = "MasterSMLID";
    } else if (n.lmc) {
        bad = "LMC (only 0)";
    } else if (mtu && mtu > CHPP_MTU_4096) {
        bad = "NeighborMTU";
    } else if (vls > 1) {
        bad = "OperationalVLs (VL0 only)";
    } else if (width && width != 1 && width != 0xff) {
        bad = "LinkWidthEnabled";
    } else if (speed && speed != 1 && speed != 0xf) {
        bad = "LinkSpeedEnabled";
    } else if (state == CHPP_PORT_INIT || state > CHPP_PORT_ACTIVE) {
        bad = "PortState";
    } else if (state && cur == CHPP_PORT_DOWN) {
        bad = "PortState of a port that is down";
    } else if (state == CHPP_PORT_ARMED && cur != CHPP_PORT_INIT &&
               cur != CHPP_PORT_ARMED) {
        bad = "PortState ARMED but not from INIT";
    } else if (state == CHPP_PORT_ACTIVE && cur != CHPP_PORT_ARMED &&
               cur != CHPP_PORT_ACTIVE) {
        bad = "PortState ACTIVE but not from ARMED";
    }
    if (bad) {
        chpp_guest_note(s, "SMA: Set PortInfo: invalid %s", bad);
        m->status = STATUS_INVALID_FIELD;
        return;
    }
    if (mtu) {
        n.neighbor_mtu = mtu;
    }
    if (vls) {
        n.op_vls = vls;
    }
    if (width) {
        n.width_enabled = 1;
    }
    if (speed) {
        n.speed_enabled = 1;
    }
    if (n.lid != sma->lid || n.lmc != sma->lmc) {
        m->flags |= CHPP_MAD_IFC_LID_CHANGE;
    }
    if (n.sm_lid != sma->sm_lid || n.sm_sl != sma->sm_sl) {
        m->flags |= CHPP_MAD_IFC_SM_CHANGE;
    }
    if (n.gid_prefix != sma->gid_prefix) {
        m->flags |= CHPP_MAD_IFC_GID_CHANGE;
    }
    if (n.cap_mask != sma->cap_mask) {
        m->flags |= CHPP_MAD_IFC_CAP_CHANGE;
    }
    if (d[PI_REREG_TIMEOUT] & 0x80) {
        m->flags |= CHPP_MAD_IFC_CLIENT_REREG;
    }
    trace_chpp_hca_sma_port_info(s->func, n.lid, n.sm_lid, state);
    *sma = n;
    if (state == CHPP_PORT_DOWN) {
        /* The link retrains: the port comes back up in INIT. */
        chpp_port_set_state(s, 1, CHPP_PORT_DOWN);
        chpp_port_set_state(s, 1, CHPP_PORT_INIT);
    } else if (state) {
        chpp_port_set_state(s, 1, state);
    }
}

static void chpp_sma_set_pkey(ChppHcaState *s, ChppMad *m)
{
    uint16_t pkey = lduw_be_p(m->in + MAD_SMP_DATA);

    if (!(pkey & 0x7fff)) {
        chpp_guest_note(s, "SMA: Set PKeyTable: invalid P_Key 0x%04x", pkey);
        m->status = STATUS_INVALID_FIELD;
        return;
    }
    if (pkey != s->sma[0].pkey) {
        m->flags |= CHPP_MAD_IFC_PKEY_CHANGE;
    }
    s->sma[0].pkey = pkey;
}

static void chpp_sma_set_sl2vl(ChppHcaState *s, ChppMad *m)
{
    const uint8_t *d = m->in + MAD_SMP_DATA;
    unsigned i;

    /* Each SL's VL: VL0, or VL15 (drop), the only VLs the port has. */
    for (i = 0; i < 16; i++) {
        uint8_t vl = (d[i / 2] >> (i % 2 ? 0 : 4)) & 0xf;

        if (vl != 0 && vl != 15) {
            chpp_guest_note(s, "SMA: Set SLtoVL: SL %u to VL %u", i, vl);
            m->status = STATUS_INVALID_FIELD;
            return;
        }
    }
    memcpy(s->sma[0].sl2vl, d, sizeof(s->sma[0].sl2vl));
}

/* One SMP attribute: the Set (if any) first, then the Get's data. */
static void chpp_sma_attr(ChppHcaState *s, ChppMad *m, uint8_t method,
                          uint16_t attr, uint32_t mod)
{
    bool set = method == METHOD_SET;
    ChppSma *sma = &s->sma[0];
    uint8_t *d = m->data;
    unsigned block;

    switch (attr) {
    case ATTR_NODE_DESC:
        if (set && !m->local) {
            break;
        }
        if (set) {
            memcpy(sma->node_desc, m->in + MAD_SMP_DATA,
                   CHPP_SMA_NODE_DESC_LEN - 1);
            sma->node_desc[CHPP_SMA_NODE_DESC_LEN - 1] = 0;
        }
        memcpy(d, sma->node_desc, CHPP_SMA_NODE_DESC_LEN);
        return;
    case ATTR_NODE_INFO:
        if (set) {
            break;
        }
        chpp_sma_node_info(s, d);
        return;
    case ATTR_GUID_INFO:
        /* One block; GUID 0, the port GUID, is read-only. */
        if (mod) {
            m->status = STATUS_INVALID_FIELD;
            return;
        }
        stq_be_p(d, CHPP_PORT_GUID(s->params.node_id, s->func));
        return;
    case ATTR_PORT_INFO:
        /* A CA's port: its number, or 0 for the port it arrived on. */
        if (mod > CHPP_NUM_PORTS) {
            m->status = STATUS_INVALID_FIELD;
            chpp_sma_port_info(s, sma, d);
            return;
        }
        if (set) {
            chpp_sma_set_port_info(s, m);
        }
        chpp_sma_port_info(s, sma, d);
        return;
    case ATTR_PKEY_TABLE:
        if (mod & 0xffff) {
            m->status = STATUS_INVALID_FIELD;
            return;
        }
        if (set) {
            chpp_sma_set_pkey(s, m);
        }
        stw_be_p(d, sma->pkey);
        return;
    case ATTR_SL_TO_VL:
        if (mod) {
            m->status = STATUS_INVALID_FIELD;
            return;
        }
        if (set) {
            chpp_sma_set_sl2vl(s, m);
        }
        memcpy(d, sma->sl2vl, sizeof(sma->sl2vl));
        return;
    case ATTR_VL_ARB:
        /* Blocks 1..4: low, low (32..63), high, high; port in bits 7:0. */
        block = mod >> 16;
        if (block < 1 || block > 4 || (mod & 0xffff) > CHPP_NUM_PORTS) {
            m->status = STATUS_INVALID_FIELD;
            return;
        }
        block--;
        if (set) {
            memcpy(sma->vlarb + block * 64, m->in + MAD_SMP_DATA, 64);
        }
        memcpy(d, sma->vlarb + block * 64, 64);
        return;
    }
    m->status = STATUS_UNSUP_ATTR;
}

static void chpp_pma_attr(ChppHcaState *s, ChppMad *m, uint8_t method,
                          uint16_t attr)
{
    uint8_t *d = m->data;
    uint32_t *c = s->counters;

    if (method != METHOD_GET) {
        m->status = STATUS_UNSUP_ATTR;
        return;
    }
    switch (attr) {
    case ATTR_CLASS_PORT_INFO:
        d[0] = 1;                                   /* BaseVersion */
        d[1] = 1;                                   /* ClassVersion */
        stl_be_p(d + 4, RESP_TIME_VALUE);
        return;
    case ATTR_PORT_COUNTERS:
        d[1] = m->in[MAD_PMA_DATA + 1];             /* PortSelect */
        d[7] = MIN(c[CHPP_CNT_LINK_DOWNS], 0xff);   /* LinkDownedCounter */
        stw_be_p(d + 8, MIN(c[CHPP_CNT_PKTS_MALFORMED], 0xffff));
        stw_be_p(d + 14, MIN(c[CHPP_CNT_LINK_DOWN_DROPS], 0xffff));
        stl_be_p(d + 32, c[CHPP_CNT_PKTS_TX]);      /* PortXmitPkts */
        stl_be_p(d + 36, c[CHPP_CNT_PKTS_RX]);      /* PortRcvPkts */
        return;
    }
    m->status = STATUS_UNSUP_ATTR;
}

/* Process @m->in; false if there is nothing to answer. */
static bool chpp_mad_process(ChppHcaState *s, ChppMad *m)
{
    uint8_t *in = m->in, *out = m->out.mad;
    uint8_t cls = in[MAD_CLASS], method = in[MAD_METHOD];
    uint16_t attr = lduw_be_p(in + MAD_ATTR_ID);
    uint32_t mod = ldl_be_p(in + MAD_ATTR_MOD);
    bool smp = cls == CLASS_SUBN_LID || cls == CLASS_SUBN_DR;

    /* Responses and trap represses are consumed: nothing goes back. */
    if ((method & METHOD_RESP) || method == METHOD_TRAP_REPRESS) {
        return false;
    }
    /* The response: the request's header and, for SMPs, its DR fields. */
    memcpy(out, in, smp ? MAD_SMP_DATA : MAD_PMA_DATA);
    out[MAD_METHOD] = METHOD_GET_RESP;
    m->data = out + (smp ? MAD_SMP_DATA : MAD_PMA_DATA);
    if (smp) {
        /* A DR SMP keeps its paths (offsets 128..255). */
        memcpy(out + 128, in + 128, CHPP_MAD_SIZE - 128);
    }
    if (in[MAD_BASE_VERSION] != 1 || in[MAD_CLASS_VERSION] != 1) {
        m->status = STATUS_BAD_VERSION;
    } else if (method != METHOD_GET && method != METHOD_SET) {
        m->status = STATUS_UNSUP_METHOD;
    } else if (smp) {
        chpp_sma_attr(s, m, method, attr, mod);
    } else {
        chpp_pma_attr(s, m, method, attr);
    }
    if (m->status) {
        chpp_guest_note(s, "MAD class 0x%02x method 0x%02x attribute 0x%04x "
                        "modifier 0x%x: status 0x%04x", cls, method, attr, mod,
                        m->status);
    }
    if (cls == CLASS_SUBN_DR) {
        m->status |= STATUS_DR_DIRECTION;
    }
    stw_be_p(out + MAD_STATUS, m->status);
    return true;
}

uint8_t chpp_cmd_mad_ifc(ChppHcaState *s, uint32_t in_mod, uint64_t in_mb,
                         uint64_t out_mb)
{
    g_autofree ChppMad *m = g_new0(ChppMad, 1);
    uint32_t port = in_mod & CHPP_MAD_IFC_PORT_MASK;
    uint8_t status = CHPP_STAT_OK;
    uint8_t cls;

    if (in_mod & ~(CHPP_MAD_IFC_PORT_MASK | CHPP_MAD_IFC_LOCAL)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "MAD_IFC: in_modifier 0x%x", in_mod);
    }
    if (port < 1 || port > CHPP_NUM_PORTS) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX,
                             "MAD_IFC: port %u does not exist", port);
    }
    if (!chpp_mailbox_read(s, in_mb, m->in, sizeof(m->in), &status)) {
        return status;
    }
    cls = m->in[MAD_CLASS];
    if (cls != CLASS_SUBN_LID && cls != CLASS_SUBN_DR && cls != CLASS_PERF) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "MAD_IFC: class 0x%02x "
                             "has no agent in the device", cls);
    }
    m->local = in_mod & CHPP_MAD_IFC_LOCAL;
    if (chpp_mad_process(s, m)) {
        m->flags |= CHPP_MAD_IFC_REPLY;
    }
    trace_chpp_hca_mad_ifc(s->func, cls, m->in[MAD_METHOD],
                           lduw_be_p(m->in + MAD_ATTR_ID), m->status, m->flags);
    m->out.flags = cpu_to_le32(m->flags);
    chpp_mailbox_write(s, out_mb, &m->out, sizeof(m->out), &status);
    return status;
}
