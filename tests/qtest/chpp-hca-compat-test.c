/*
 * chpp-hca migration streams across builds: a stream saved by an earlier
 * build, committed under tests/qtest/data/, still loads into this one, and
 * the device then works on what it loaded (docs/observability.md,
 * "Streams of earlier builds").
 *
 * Loader (the normal run): for each committed stream, one QEMU per case
 * is started with the generator's command line and -incoming defer, loads
 * the stream with migrate-incoming exec:gzip -dc, reads back the layout
 * record the generator left in guest memory and checks one aspect: the
 * state as saved, the work that was in progress, new traffic, the VFs.
 * The stream is found through CHPP_SOURCE_ROOT (set by scripts/qtest.sh);
 * CHPP_COMPAT_LOAD=<file.gz> loads that file instead of the committed ones.
 *
 * Generator (CHPP_COMPAT_GENERATE=<file.gz>): a PF with two VFs is brought
 * to the state below, the layout record is written at LAYOUT_GPA and the
 * VM's state is saved to <file.gz>; then the loader cases run on it with
 * the same build.  The committed streams were made that way by the build
 * named in streams[] (docs/build.md, "Migration compatibility streams").
 *
 * The state (PF: num-qps=8, 8 CQs on EQ 0; the QPs' numbers are their
 * indexes, RC QPs connected with path MTU 1024):
 *   PF QP 0 <-> QP 1 (RC, CQs 0 and 1): a PUT, a GET and a SEND completed;
 *     a PUT completed whose CQE is not polled; a SEND from QP 1 waiting out
 *     RNR NAKs (QP 0 has no receive); a PUT written on QP 0's SQ but not
 *     rung; two receives posted on QP 1.  EQ 0 armed, MSI-X vector 0 routed,
 *     CQ 1 armed (ARM_NEXT).
 *   PF QP 2 (UD, CQs 2 and 3): a SEND to itself completed, one receive left.
 *   PF QP 3 <-> VF 1 QP 0 (RC, PF CQs 4 and 5, VF CQs 0 and 1): a PUT from
 *     the VF and a GET by the PF completed; a receive posted on each side.
 *   PF QP 4 <-> QP 5 (RC, CQs 6 and 7, QP 4's PSNs start just below the
 *     24-bit wrap): PUT, GET, fetch-and-add and SEND completed.
 *   VF 1 created with its own quotas (SET_VF_RES), VF 2 with the defaults
 *     and no QP; every function has an EQ, CQs, an open port, a registered
 *     buffer and its SCRATCH register set.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "standard-headers/linux/pci_regs.h"
#include "chpp-hca-qtest.h"

/*
 * The command line of generator and loader: the stream depends on it.
 * The BIOS is BIOS_SIZE zero bytes (the CPU never runs): the stream holds
 * no firmware, and does not depend on the machine's SeaBIOS package.
 */
#define PROPS       "num-qps=8"
#define MEM         "32M"
#define BIOS_SIZE   65536

/* The layout record: below libqos's allocator (it starts at 1 MiB). */
#define LAYOUT_GPA      0x70000ull
#define LAYOUT_MAGIC    0x504d4f4350504843ull     /* "CHPPCOMP" */
#define LAYOUT_VERSION  1
#define ALLOC_START     (1ull << 20)

#define NFN         3           /* PF, VF 1, VF 2 */
#define NCQ         8
#define NQP         6
#define NCNT        128         /* room for CHPP_CNT_NUM counters */

#define UAR         1
#define PD          2
#define QKEY        0x11111111u
#define LOG_Q       4
#define STRIDE      8
#define EQ_NENT     64
#define CQ_NENT     64
#define MTU_1024    3           /* InfiniBand MTU enum */
#define ACCESS_ALL  (CHPP_ACCESS_REMOTE_WRITE | CHPP_ACCESS_REMOTE_READ | \
                     CHPP_ACCESS_REMOTE_ATOMIC)
#define MR_ALL      (CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ | \
                     CHPP_MPT_REMOTE_WRITE | CHPP_MPT_REMOTE_ATOMIC)
#define SCRATCH(fn) (0xc0ffee00u + (fn))

/* PF QPs (number = index) and CQs. */
enum { QA, QB, QUD, QPV, QC, QD };
enum { CQ_AB_S, CQ_AB_R, CQ_UD_S, CQ_UD_R, CQ_PV_S, CQ_PV_R, CQ_CD_S,
       CQ_CD_R };
/* VF 1: QP 0 (to the PF's QP 3) on CQs 0 and 1. */
enum { QVP = 0 };
enum { CQ_V_S, CQ_V_R };

/* Buffer sizes and the generator's offsets in them. */
#define PF_BUF      0x20000u
#define VF1_BUF     0x10000u
#define VF2_BUF     0x4000u
enum {
    G1_SRC = 0x0000, G1_DST = 0x2000,   /* PUT QP 0 -> QP 1, 4 KiB */
    G2_DST = 0x4000,                    /* GET by QP 1 of G1_SRC, 4 KiB */
    G3_SRC = 0x5000,                    /* SEND QP 0 -> QP 1, into R100 */
    R100 = 0x6000, R101 = 0x7000, R102 = 0x8000,   /* QP 1's receives */
    G4_SRC = 0x9000, G4_DST = 0x9800,   /* PUT, CQE not polled */
    G5_SRC = 0xa000,                    /* SEND QP 1 -> QP 0, RNR */
    G6_SRC = 0xb000, G6_DST = 0xc000,   /* PUT on QP 0, not rung */
    V1_DST = 0xd000, V2_DST = 0xd800,   /* VF 1's PUT, QP 3's GET */
    R300 = 0xe000,                      /* QP 3's receive */
    R400 = 0xf000, R401 = 0xf400,       /* UD receives */
    U1_SRC = 0xf800,                    /* UD SEND to itself */
    G7_SRC = 0x10000, G7_DST = 0x12000, /* PUT QP 4 -> QP 5, 4 KiB */
    G8_DST = 0x14000,                   /* GET by QP 5 of G7_SRC, 4 KiB */
    ATOM = 0x15000,                     /* fetch-and-add target, results */
    R600 = 0x16000, G10_SRC = 0x17000,  /* SEND QP 5 -> QP 4 */
    LOADER = 0x18000,                   /* up to PF_BUF: the loader's */
};
/* In VF 1's buffer. */
enum { V1_SRC = 0x0000, V2_SRC = 0x1000, R200 = 0x4000, VLOADER = 0x8000 };

#define G_LEN       4096
#define G4_LEN      1024
#define G5_LEN      3000
#define G6_LEN      1500
#define U1_LEN      500
#define V_LEN       2048

/*
 * The layout record: what the loader needs of the generator's test state,
 * as 64-bit little-endian words (no padding, the same on every host).
 * Never change it for an existing stream: add fields at the end of
 * CompatLayout and bump LAYOUT_VERSION, keeping version 1 readable.
 */
typedef struct CompatCq {
    uint64_t cqn, ring, nent, ci, uar;
    uint64_t pi_dev, ci_dev, arm;               /* QUERY_CQ */
} CompatCq;

typedef struct CompatQp {
    uint64_t qpn, type, sq, rq, sq_pi, rq_pi, log_sq, log_rq, stride, magic;
    uint64_t uar;
    uint64_t state, sq_psn, rq_psn, dev_sq_pi, dev_sq_ci, dev_rq_pi;
    uint64_t dev_rq_ci, sq_inflight;            /* QUERY_QP */
} CompatQp;

typedef struct CompatFn {
    uint64_t bar0, bar2, msix_table_off, msix_pba_off;
    uint64_t mbox_in, mbox_out, msi_page, toggle, next_mtt, next_mr;
    uint64_t scratch;
    uint64_t eq, eq_nent, eq_ci, eq_pi_dev, eq_state;
    uint64_t buf, buf_len, key;
    uint64_t ncq, nqp;
    CompatCq cq[NCQ];
    CompatQp qp[NQP];
    uint64_t ncounters;
    uint64_t counters[NCNT];
} CompatFn;

typedef struct CompatLayout {
    uint64_t magic, version, size;
    uint64_t abi_version;       /* CHPP_REG_ABI_VERSION of the generator */
    uint64_t alloc_top;         /* libqos's allocator used below this */
    CompatFn fn[NFN];
} CompatLayout;

QEMU_BUILD_BUG_ON(CHPP_CNT_NUM > NCNT);

/* A function as the test drives it. */
typedef struct Fn {
    ChppDev *d;
    uint8_t fn;
    uint64_t eq;
    uint32_t eq_ci;
    uint32_t ncq, nqp;
    ChppTCq cq[NCQ];
    ChppTQp qp[NQP];
    uint64_t buf;
    uint32_t buf_len;
    uint32_t key;
    uint32_t next_mr;
} Fn;

typedef struct Compat {
    ChppPf *p;
    Fn fn[NFN];
    CompatLayout lay;           /* as written (generator) or read (loader) */
    uint32_t cmds[NFN];         /* loader: commands it ran per function */
} Compat;

/* A committed stream. */
typedef struct Stream {
    const char *name;           /* test path component */
    const char *file;           /* in tests/qtest/data/ */
    /*
     * NULL: the stream loads and the cases run on it.  Otherwise it was
     * made incompatible on purpose (the note says by what): the test
     * checks that it is refused cleanly.
     */
    const char *refused;
    /*
     * The versioned machine type "q35" stood for in the build that saved
     * it: a later QEMU loads the stream into that machine (its promise of
     * migration from older versions), so that the QEMU core's sections
     * load too and the test checks the device's (docs/build.md, "QEMU
     * 10.0").  NULL: this build's q35.
     */
    const char *machine;
} Stream;

static const Stream streams[] = {
    /* Made by the build of commit f611fc1 (ABI 1.4, section version 2). */
    { "abi-1.4", "chpp-hca-abi-1.4.stream.gz", NULL, "pc-q35-7.2" },
};

/* The stream a case loads: the generated one, or committed ones. */
static const char *generated;

/* ---- command line ---------------------------------------------------- */

/*
 * "-m MEM -bios <a file of BIOS_SIZE zero bytes>".  QEMU reads the BIOS
 * when it starts: call extra_args_free() once it runs.
 */
/* @machine overrides the helpers' "-machine q35" (the later one wins). */
static char *extra_args_new(const char *machine)
{
    g_autofree char *dir = g_dir_make_tmp("chpp-compat-XXXXXX", NULL);
    g_autofree char *bios = NULL;
    g_autofree char *zero = g_malloc0(BIOS_SIZE);

    g_assert(dir);
    bios = g_build_filename(dir, "bios.bin", NULL);
    g_assert(g_file_set_contents(bios, zero, BIOS_SIZE, NULL));
    return g_strdup_printf("-m " MEM " %s%s -bios %s",
                           machine ? "-machine " : "", machine ? machine : "",
                           bios);
}

static void extra_args_free(char *args)
{
    const char *bios = strstr(args, "-bios ") + strlen("-bios ");
    g_autofree char *dir = g_path_get_dirname(bios);

    unlink(bios);
    rmdir(dir);
    g_free(args);
}

/* ---- layout record --------------------------------------------------- */

static void layout_write(QTestState *qts, const CompatLayout *l)
{
    const uint64_t *w = (const uint64_t *)l;
    g_autofree uint64_t *le = g_new(uint64_t, sizeof(*l) / 8);
    size_t i;

    for (i = 0; i < sizeof(*l) / 8; i++) {
        le[i] = cpu_to_le64(w[i]);
    }
    qtest_memwrite(qts, LAYOUT_GPA, le, sizeof(*l));
}

static void layout_read(QTestState *qts, CompatLayout *l)
{
    uint64_t *w = (uint64_t *)l;
    size_t i;

    qtest_memread(qts, LAYOUT_GPA, l, sizeof(*l));
    for (i = 0; i < sizeof(*l) / 8; i++) {
        w[i] = le64_to_cpu(w[i]);
    }
    g_assert_cmphex(l->magic, ==, LAYOUT_MAGIC);
    g_assert_cmpuint(l->version, ==, LAYOUT_VERSION);
    g_assert_cmpuint(l->size, ==, sizeof(*l));
}

/* ---- setting up ------------------------------------------------------ */

static uint32_t psn_of(uint8_t fn, uint32_t qpn)
{
    /* QP 4 starts just below the wrap: its traffic crosses PSN 0. */
    if (fn == 0 && qpn == QC) {
        return 0xfffff4;
    }
    return 0x100000 * (qpn + 1) + 0x1000 * fn + 0x123;
}

/* INIT_HCA, EQ 0, @ncq CQs on it, port 1, a buffer of @len as MR 0. */
static void fn_setup(Fn *f, ChppDev *d, uint8_t fn, uint32_t ncq,
                     uint32_t len)
{
    uint32_t i;

    memset(f, 0, sizeof(*f));
    f->d = d;
    f->fn = fn;
    f->ncq = ncq;
    chpp_init_hca(d);
    f->eq = chpp_create_eq(d, 0, EQ_NENT, 0, false);
    g_assert_cmphex(chpp_map_eq(d, 0, CHPP_EVENT_MAPPABLE_MASK &
                                ~(1ull << CHPP_EVENT_CMD), false), ==,
                    CHPP_STAT_OK);
    for (i = 0; i < ncq; i++) {
        f->cq[i] = (ChppTCq) {
            .cqn = i, .nent = CQ_NENT, .uar = UAR,
            .ring = chpp_create_cq(d, i, CQ_NENT, 0, UAR),
        };
    }
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_INIT_PORT, 0, 1, 0), ==,
                    CHPP_STAT_OK);
    f->buf_len = len;
    f->buf = guest_alloc(&d->qs->alloc, len);
    qtest_memset(d->qts, f->buf, 0, len);
    f->key = chpp_create_mr(d, f->next_mr++, PD, f->buf, len, MR_ALL);
}

/* QP @qpn (= its index) of @type in INIT; a UD QP goes on to RTS. */
static void make_qp(Fn *f, uint32_t qpn, uint8_t type, uint32_t scq,
                    uint32_t rcq, uint8_t magic)
{
    ChppTQp *q = &f->qp[qpn];
    struct chpp_qp_context c = {
        .type = type, .port = 1,
        .pd = cpu_to_le32(PD),
        .send_cqn = cpu_to_le32(scq), .recv_cqn = cpu_to_le32(rcq),
        .log_sq_size = LOG_Q, .log_sq_stride = STRIDE,
        .log_rq_size = LOG_Q, .log_rq_stride = STRIDE,
        .uar = cpu_to_le16(UAR),
        .access_flags = cpu_to_le32(ACCESS_ALL),
        .qkey = cpu_to_le32(QKEY),
        .magic = magic,
        .sq_psn = cpu_to_le32(psn_of(f->fn, qpn)),
    };
    uint32_t mask = CHPP_QP_ATTR_PKEY_INDEX | CHPP_QP_ATTR_PORT |
                    (type == CHPP_QPT_UD ? CHPP_QP_ATTR_QKEY
                                         : CHPP_QP_ATTR_ACCESS_FLAGS);

    *q = (ChppTQp) {
        .qpn = qpn, .type = type, .log_sq = LOG_Q, .log_rq = LOG_Q,
        .stride = STRIDE, .magic = magic, .uar = UAR,
    };
    f->nqp = MAX(f->nqp, qpn + 1);
    chpp_qp_alloc_rings(f->d, &c, &q->sq, &q->rq);
    g_assert_cmphex(chpp_modify_qp(f->d, CHPP_CMD_RST2INIT_QP, qpn, mask,
                                   &c), ==, CHPP_STAT_OK);
    if (type == CHPP_QPT_UD) {
        g_assert_cmphex(chpp_modify_qp(f->d, CHPP_CMD_INIT2RTR_QP, qpn, 0,
                                       &c), ==, CHPP_STAT_OK);
        g_assert_cmphex(chpp_modify_qp(f->d, CHPP_CMD_RTR2RTS_QP, qpn,
                                       CHPP_QP_ATTR_SQ_PSN, &c), ==,
                        CHPP_STAT_OK);
    }
}

/* RC QP @qpn of @f: INIT -> RTR -> RTS towards QP @pqpn of @peer. */
static void connect_rc(Fn *f, uint32_t qpn, const Fn *peer, uint32_t pqpn)
{
    const ChppTQp *p = &peer->qp[pqpn];
    struct chpp_qp_context c = {
        .path_mtu = MTU_1024,
        .dest_qpn = cpu_to_le32(p->qpn),
        .dest_magic = p->magic,
        .dest_vf = peer->fn,
        .rq_psn = cpu_to_le32(psn_of(peer->fn, pqpn)),
        .sq_psn = cpu_to_le32(psn_of(f->fn, qpn)),
        .max_dest_rd_atomic = 4, .max_rd_atomic = 4,
        .min_rnr_timer = 1, .timeout = 14, .retry_cnt = 3, .rnr_retry = 7,
    };

    chpp_rc_qp_connect(f->d, qpn, &c);
}

static void set_vf1_res(ChppPf *p)
{
    struct chpp_vf_res r = {
        .num_qps = cpu_to_le32(2), .num_cqs = cpu_to_le32(4),
        .num_eqs = cpu_to_le32(2), .num_mpts = cpu_to_le32(16),
        .num_pds = cpu_to_le32(4), .num_mtts = cpu_to_le32(1024),
        .msix_vectors = cpu_to_le32(2), .weight = 3, .priority = 1,
    };

    qtest_memwrite(p->d->qts, p->d->mbox_in, &r, sizeof(r));
    g_assert_cmphex(chpp_cmd(p->d, CHPP_CMD_SET_VF_RES, p->d->mbox_in, 1,
                             0), ==, CHPP_STAT_OK);
}

/* ---- work requests and completions ----------------------------------- */

/* A signaled @op of @len bytes at @off of @f's buffer (@roff of @peer's). */
static void post_wr(Fn *f, uint32_t qpn, uint8_t op, uint64_t wr_id,
                    uint32_t off, uint32_t len, const Fn *peer, uint32_t roff,
                    bool ring)
{
    ChppWqeBuf *w = chpp_wqe_new(op, CHPP_WQE_SIGNALED, wr_id, 0);

    if (op != CHPP_WQE_SEND) {
        chpp_wqe_raddr(w, peer->buf + roff, peer->key);
    }
    chpp_wqe_sge(w, f->buf + off, len, f->key);
    chpp_post_send(f->d, &f->qp[qpn], w, ring);
}

/* A fetch-and-add (@compare unused) or compare-and-swap at @peer's @roff. */
static void post_atomic(Fn *f, uint32_t qpn, uint8_t op, uint64_t wr_id,
                        uint32_t off, const Fn *peer, uint32_t roff,
                        uint64_t swap_add, uint64_t compare)
{
    ChppWqeBuf *w = chpp_wqe_new(op, CHPP_WQE_SIGNALED, wr_id, 0);

    chpp_wqe_raddr(w, peer->buf + roff, peer->key);
    chpp_wqe_atomic(w, swap_add, compare);
    chpp_wqe_sge(w, f->buf + off, 8, f->key);
    chpp_post_send(f->d, &f->qp[qpn], w, true);
}

/* A UD SEND of @len bytes at @off from QP @qpn to itself. */
static void post_ud_self(Fn *f, uint32_t qpn, uint64_t wr_id, uint32_t off,
                         uint32_t len)
{
    ChppWqeBuf *w = chpp_wqe_new(CHPP_WQE_SEND, CHPP_WQE_SIGNALED, wr_id, 0);

    chpp_wqe_ud(w, 0, qpn, QKEY, f->qp[qpn].magic);
    chpp_wqe_sge(w, f->buf + off, len, f->key);
    chpp_post_send(f->d, &f->qp[qpn], w, true);
}

static void post_recv(Fn *f, uint32_t qpn, uint64_t wr_id, uint32_t off,
                      uint32_t len)
{
    ChppTSge sge = { f->buf + off, len, f->key };

    chpp_post_recv_sges(f->d, &f->qp[qpn], wr_id, &sge, 1);
}

/* The next CQE of CQ @cqn: a success for @wr_id of QP @qpn. */
static void expect_cqe(Fn *f, uint32_t cqn, uint64_t wr_id, uint8_t opcode,
                       uint32_t len, uint32_t qpn)
{
    struct chpp_cqe cqe;

    chpp_poll_cq(f->d, &f->cq[cqn], &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, opcode);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, len);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, qpn);
}

/* A receive completion, from QP @src_qp of function @src_vf. */
static void expect_recv(Fn *f, uint32_t cqn, uint64_t wr_id, uint32_t len,
                        uint32_t qpn, uint32_t src_qp, uint8_t src_vf)
{
    struct chpp_cqe cqe;

    chpp_poll_cq(f->d, &f->cq[cqn], &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, CHPP_CQE_OP_RECV);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, len);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, qpn);
    g_assert_cmpuint(le32_to_cpu(cqe.src_qp), ==, src_qp);
    g_assert_cmpuint(cqe.src_vf, ==, src_vf);
}

/* Nothing more on CQ @cqn after 10 ms of virtual time. */
static void expect_none(Fn *f, uint32_t cqn)
{
    struct chpp_cqe cqe;

    qtest_clock_step(f->d->qts, 10 * 1000 * 1000);
    g_assert_false(chpp_cqe_valid(f->d, &f->cq[cqn], &cqe));
}

static bool eqe_next(Fn *f, struct chpp_eqe *eqe)
{
    bool want = !((f->eq_ci / EQ_NENT) & 1);

    chpp_read_eqe(f->d, f->eq, f->eq_ci % EQ_NENT, eqe);
    if (!!(le32_to_cpu(eqe->owner) & CHPP_EQE_OWNER) != want) {
        return false;
    }
    f->eq_ci++;
    return true;
}

/* ---- generator ------------------------------------------------------- */

/* PF QPs 0 and 1: completed work, then work left in every stage. */
static void gen_pf_ab(Fn *pf)
{
    struct chpp_cqe cqe;
    uint32_t i;

    chpp_fill(pf->d, pf->buf + G1_SRC, G_LEN, 1);
    post_wr(pf, QA, CHPP_WQE_PUT, 1, G1_SRC, G_LEN, pf, G1_DST, true);
    expect_cqe(pf, CQ_AB_S, 1, CHPP_CQE_OP_RDMA_WRITE, G_LEN, QA);
    chpp_check(pf->d, pf->buf + G1_DST, G_LEN, 1);
    post_wr(pf, QB, CHPP_WQE_GET, 2, G2_DST, 4096, pf, G1_SRC, true);
    expect_cqe(pf, CQ_AB_S, 2, CHPP_CQE_OP_RDMA_READ, 4096, QB);
    chpp_check(pf->d, pf->buf + G2_DST, 4096, 1);
    for (i = 0; i < 3; i++) {
        post_recv(pf, QB, 100 + i, R100 + i * 0x1000, 4096);
    }
    chpp_fill(pf->d, pf->buf + G3_SRC, 2000, 3);
    post_wr(pf, QA, CHPP_WQE_SEND, 3, G3_SRC, 2000, NULL, 0, true);
    expect_cqe(pf, CQ_AB_S, 3, CHPP_CQE_OP_SEND, 2000, QA);
    expect_recv(pf, CQ_AB_R, 100, 2000, QB, QA, 0);
    chpp_check(pf->d, pf->buf + R100, 2000, 3);

    /* Left for the loader: a CQE not polled, ... */
    chpp_fill(pf->d, pf->buf + G4_SRC, G4_LEN, 4);
    post_wr(pf, QA, CHPP_WQE_PUT, 4, G4_SRC, G4_LEN, pf, G4_DST, true);
    for (i = 0; i < 100 && !chpp_cqe_valid(pf->d, &pf->cq[CQ_AB_S], &cqe);
         i++) {
        qtest_clock_step(pf->d->qts, 100000);
    }
    g_assert(chpp_cqe_valid(pf->d, &pf->cq[CQ_AB_S], &cqe));
    /* ... a SEND waiting out RNR NAKs, ... */
    chpp_fill(pf->d, pf->buf + G5_SRC, G5_LEN, 5);
    post_wr(pf, QB, CHPP_WQE_SEND, 5, G5_SRC, G5_LEN, NULL, 0, true);
    for (i = 0; i < 20 && !chpp_counter(pf->d, CHPP_CNT_RNR_NAKS); i++) {
        qtest_clock_step(pf->d->qts, 100000);
    }
    g_assert_cmpuint(chpp_counter(pf->d, CHPP_CNT_RNR_NAKS), >=, 1);
    /* ... and a PUT written but not rung. */
    chpp_fill(pf->d, pf->buf + G6_SRC, G6_LEN, 6);
    post_wr(pf, QA, CHPP_WQE_PUT, 6, G6_SRC, G6_LEN, pf, G6_DST, false);
}

/* PF QPs 4 and 5: completed work only. */
static void gen_pf_cd(Fn *pf)
{
    chpp_fill(pf->d, pf->buf + G7_SRC, G_LEN, 9);
    post_wr(pf, QC, CHPP_WQE_PUT, 7, G7_SRC, G_LEN, pf, G7_DST, true);
    expect_cqe(pf, CQ_CD_S, 7, CHPP_CQE_OP_RDMA_WRITE, G_LEN, QC);
    chpp_check(pf->d, pf->buf + G7_DST, G_LEN, 9);
    post_wr(pf, QD, CHPP_WQE_GET, 8, G8_DST, 4096, pf, G7_SRC, true);
    expect_cqe(pf, CQ_CD_S, 8, CHPP_CQE_OP_RDMA_READ, 4096, QD);
    chpp_check(pf->d, pf->buf + G8_DST, 4096, 9);
    qtest_writeq(pf->d->qts, pf->buf + ATOM, 1000);
    post_atomic(pf, QC, CHPP_WQE_ATOMIC_FA, 9, ATOM + 8, pf, ATOM, 234, 0);
    expect_cqe(pf, CQ_CD_S, 9, CHPP_CQE_OP_FETCH_ADD, 8, QC);
    g_assert_cmpuint(qtest_readq(pf->d->qts, pf->buf + ATOM), ==, 1234);
    g_assert_cmpuint(qtest_readq(pf->d->qts, pf->buf + ATOM + 8), ==, 1000);
    post_recv(pf, QC, 600, R600, 4096);
    chpp_fill(pf->d, pf->buf + G10_SRC, 1000, 10);
    post_wr(pf, QD, CHPP_WQE_SEND, 10, G10_SRC, 1000, NULL, 0, true);
    expect_cqe(pf, CQ_CD_S, 10, CHPP_CQE_OP_SEND, 1000, QD);
    expect_recv(pf, CQ_CD_R, 600, 1000, QC, QD, 0);
    chpp_check(pf->d, pf->buf + R600, 1000, 10);
}

/* UD QP 2: one SEND to itself done, one receive left. */
static void gen_pf_ud(Fn *pf)
{
    post_recv(pf, QUD, 400, R400, 1024);
    post_recv(pf, QUD, 401, R401, 1024);
    chpp_fill(pf->d, pf->buf + U1_SRC, U1_LEN, 8);
    post_ud_self(pf, QUD, 402, U1_SRC, U1_LEN);
    expect_cqe(pf, CQ_UD_S, 402, CHPP_CQE_OP_SEND, U1_LEN, QUD);
    expect_recv(pf, CQ_UD_R, 400, U1_LEN + CHPP_UD_GRH_SIZE, QUD, QUD, 0);
    chpp_check(pf->d, pf->buf + R400 + CHPP_UD_GRH_SIZE, U1_LEN, 8);
}

/* PF QP 3 <-> VF 1 QP 0. */
static void gen_pf_vf(Fn *pf, Fn *vf)
{
    chpp_fill(vf->d, vf->buf + V1_SRC, V_LEN, 11);
    post_wr(vf, QVP, CHPP_WQE_PUT, 11, V1_SRC, V_LEN, pf, V1_DST, true);
    expect_cqe(vf, CQ_V_S, 11, CHPP_CQE_OP_RDMA_WRITE, V_LEN, QVP);
    chpp_check(pf->d, pf->buf + V1_DST, V_LEN, 11);
    chpp_fill(vf->d, vf->buf + V2_SRC, V_LEN, 12);
    post_wr(pf, QPV, CHPP_WQE_GET, 12, V2_DST, V_LEN, vf, V2_SRC, true);
    expect_cqe(pf, CQ_PV_S, 12, CHPP_CQE_OP_RDMA_READ, V_LEN, QPV);
    chpp_check(pf->d, pf->buf + V2_DST, V_LEN, 12);
    post_recv(vf, QVP, 200, R200, 4096);
    post_recv(pf, QPV, 300, R300, 4096);
}

/* Everything the loader needs of @f, with the device's view of it. */
static void gen_record(Fn *f, CompatFn *r)
{
    ChppDev *d = f->d;
    struct chpp_qp_context qc;
    struct chpp_cq_context cc;
    struct chpp_eq_context ec;
    uint32_t i;

    *r = (CompatFn) {
        .bar0 = d->bar0.addr, .bar2 = d->bar2.addr,
        .msix_table_off = d->pdev->msix_table_off,
        .msix_pba_off = d->pdev->msix_pba_off,
        .mbox_in = d->mbox_in, .mbox_out = d->mbox_out,
        .msi_page = d->msi_page,
        .next_mtt = d->next_mtt, .next_mr = f->next_mr,
        .scratch = SCRATCH(f->fn),
        .eq = f->eq, .eq_nent = EQ_NENT, .eq_ci = f->eq_ci,
        .buf = f->buf, .buf_len = f->buf_len, .key = f->key,
        .ncq = f->ncq, .nqp = f->nqp,
    };
    g_assert(!d->bar0.is_io && !d->bar2.is_io);
    g_assert_cmphex(chpp_query_eq(d, 0, &ec), ==, CHPP_STAT_OK);
    r->eq_pi_dev = le32_to_cpu(ec.producer_index);
    r->eq_state = ec.state;
    for (i = 0; i < f->ncq; i++) {
        const ChppTCq *c = &f->cq[i];

        g_assert_cmphex(chpp_query_cq(d, i, &cc), ==, CHPP_STAT_OK);
        r->cq[i] = (CompatCq) {
            .cqn = c->cqn, .ring = c->ring, .nent = c->nent, .ci = c->ci,
            .uar = c->uar,
            .pi_dev = le32_to_cpu(cc.producer_index),
            .ci_dev = le32_to_cpu(cc.consumer_index),
            .arm = cc.arm,
        };
    }
    for (i = 0; i < f->nqp; i++) {
        const ChppTQp *q = &f->qp[i];

        g_assert_cmphex(chpp_query_qp(d, i, &qc), ==, CHPP_STAT_OK);
        r->qp[i] = (CompatQp) {
            .qpn = q->qpn, .type = q->type, .sq = q->sq, .rq = q->rq,
            .sq_pi = q->sq_pi, .rq_pi = q->rq_pi, .log_sq = q->log_sq,
            .log_rq = q->log_rq, .stride = q->stride, .magic = q->magic,
            .uar = q->uar,
            .state = qc.state,
            .sq_psn = le32_to_cpu(qc.sq_psn),
            .rq_psn = le32_to_cpu(qc.rq_psn),
            .dev_sq_pi = le32_to_cpu(qc.sq_pi),
            .dev_sq_ci = le32_to_cpu(qc.sq_ci),
            .dev_rq_pi = le32_to_cpu(qc.rq_pi),
            .dev_rq_ci = le32_to_cpu(qc.rq_ci),
            .sq_inflight = le32_to_cpu(qc.sq_inflight),
        };
    }
}

/* Save the running VM's state, gzipped, into @path (the VM stops). */
static void save_gz(QTestState *qts, const char *path)
{
    g_autofree char *quoted = g_shell_quote(path);
    g_autofree char *uri = g_strdup_printf("exec:gzip -9 -n -c > %s",
                                           quoted);
    g_autofree char *check = g_strdup_printf("gzip -t %s", quoted);
    int status;

    qtest_qmp_assert_success(qts, "{ 'execute': 'migrate', 'arguments': "
                             "{ 'uri': %s } }", uri);
    for (;;) {
        QDict *rsp = qtest_qmp(qts, "{ 'execute': 'query-migrate' }");
        const char *st = qdict_get_str(qdict_get_qdict(rsp, "return"),
                                       "status");

        if (!strcmp(st, "completed")) {
            qobject_unref(rsp);
            break;
        }
        g_assert(strcmp(st, "failed") && strcmp(st, "cancelled"));
        qobject_unref(rsp);
        g_usleep(5000);
    }
    g_assert(g_spawn_command_line_sync(check, NULL, NULL, &status, NULL));
    g_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_generate(const void *opaque)
{
    const char *path = opaque;
    char *extra = extra_args_new(NULL);
    ChppPf *p = chpp_pf_start(PROPS, extra);
    Compat c = { .p = p };
    Fn *pf = &c.fn[0], *vf1 = &c.fn[1], *vf2 = &c.fn[2];
    struct chpp_eqe eqe;
    uint32_t i, n;

    extra_args_free(extra);
    set_vf1_res(p);
    chpp_pf_vfs_set(p, 2);
    fn_setup(pf, p->d, 0, NCQ, PF_BUF);
    fn_setup(vf1, p->vf[1], 1, 2, VF1_BUF);
    fn_setup(vf2, p->vf[2], 2, 2, VF2_BUF);
    for (i = 0; i < NFN; i++) {
        chpp_wr(c.fn[i].d, CHPP_REG_SCRATCH, SCRATCH(i));
    }
    chpp_msix_route(pf->d, 0);

    make_qp(pf, QA, CHPP_QPT_RC, CQ_AB_S, CQ_AB_R, 0xa0);
    make_qp(pf, QB, CHPP_QPT_RC, CQ_AB_S, CQ_AB_R, 0xb1);
    make_qp(pf, QUD, CHPP_QPT_UD, CQ_UD_S, CQ_UD_R, 0x42);
    make_qp(pf, QPV, CHPP_QPT_RC, CQ_PV_S, CQ_PV_R, 0xc3);
    make_qp(pf, QC, CHPP_QPT_RC, CQ_CD_S, CQ_CD_R, 0xd4);
    make_qp(pf, QD, CHPP_QPT_RC, CQ_CD_S, CQ_CD_R, 0xe5);
    make_qp(vf1, QVP, CHPP_QPT_RC, CQ_V_S, CQ_V_R, 0x71);
    connect_rc(pf, QA, pf, QB);
    connect_rc(pf, QB, pf, QA);
    connect_rc(pf, QC, pf, QD);
    connect_rc(pf, QD, pf, QC);
    connect_rc(pf, QPV, vf1, QVP);
    connect_rc(vf1, QVP, pf, QPV);

    gen_pf_cd(pf);
    gen_pf_ud(pf);
    gen_pf_vf(pf, vf1);
    gen_pf_ab(pf);

    /* Events so far consumed; EQ 0 and CQ 1 armed for the next. */
    for (i = 0; i < NFN; i++) {
        for (n = 0; eqe_next(&c.fn[i], &eqe); n++) {
            g_assert_cmpuint(n, <, EQ_NENT);
        }
        chpp_eq_db(c.fn[i].d, 0, c.fn[i].eq_ci, i == 0);
    }
    chpp_msix_fired(pf->d, 0);
    chpp_cq_db(pf->d, UAR, CQ_AB_R, CHPP_CQ_DB_ARM_NEXT,
               pf->cq[CQ_AB_R].ci);

    /* Counters last: recording queries the device. */
    c.lay = (CompatLayout) {
        .magic = LAYOUT_MAGIC, .version = LAYOUT_VERSION,
        .size = sizeof(CompatLayout),
        .abi_version = chpp_rd(pf->d, CHPP_REG_ABI_VERSION),
        .alloc_top = guest_alloc(&p->d->qs->alloc, 4096),
    };
    for (i = 0; i < NFN; i++) {
        gen_record(&c.fn[i], &c.lay.fn[i]);
    }
    for (i = 0; i < NFN; i++) {
        CompatFn *r = &c.lay.fn[i];

        r->ncounters = CHPP_CNT_NUM;
        for (n = 0; n < CHPP_CNT_NUM; n++) {
            r->counters[n] = chpp_counter(c.fn[i].d, n);
        }
        r->toggle = c.fn[i].d->toggle;
    }
    g_assert_cmpuint(c.lay.fn[0].qp[QB].sq_inflight, ==, 1);
    g_assert_cmpuint(c.lay.fn[0].cq[CQ_AB_R].arm, ==, CHPP_CQ_DB_ARM_NEXT);
    g_assert_cmpuint(c.lay.fn[0].eq_state, ==, CHPP_EQ_STATE_ARMED);
    layout_write(p->d->qts, &c.lay);
    save_gz(p->d->qts, path);
    chpp_pf_stop(p);
    g_test_message("stream saved to %s", path);
}

/* ---- loader ---------------------------------------------------------- */

static char *stream_path(const Stream *s)
{
    const char *root = g_getenv("CHPP_SOURCE_ROOT");
    const char *load = g_getenv("CHPP_COMPAT_LOAD");
    char *path;

    if (generated) {
        return g_strdup(generated);
    }
    if (load) {
        return g_strdup(load);
    }
    if (!root) {
        g_error("CHPP_SOURCE_ROOT is not set: run the test through "
                "scripts/qtest.sh, or set it to the repository's root");
    }
    path = g_build_filename(root, "tests", "qtest", "data", s->file, NULL);
    if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
        g_error("no stream %s", path);
    }
    return path;
}

/* Start a destination and have it load @s's stream from @path. */
static ChppDev *load_start(const char *path, const Stream *s)
{
    g_autofree char *quoted = g_shell_quote(path);
    g_autofree char *uri = g_strdup_printf("exec:gzip -dc %s", quoted);
    char *extra = extra_args_new(s->machine);
    ChppDev *d = chpp_start_incoming_extra(PROPS, extra, "defer");

    extra_args_free(extra);
    qtest_qmp_assert_success(d->qts, "{ 'execute': 'migrate-incoming', "
                             "'arguments': { 'uri': %s } }", uri);
    return d;
}

/* Build a function's handle and state from its record. */
static void fn_adopt(Fn *f, ChppDev *d, uint8_t fn, const CompatFn *r)
{
    QPCIDevice pdev = {
        .msix_enabled = true,
        .msix_table_bar = { .addr = r->bar0 },
        .msix_pba_bar = { .addr = r->bar0 },
        .msix_table_off = r->msix_table_off,
        .msix_pba_off = r->msix_pba_off,
    };
    ChppDev src = {
        .pdev = &pdev,
        .bar0 = { .addr = r->bar0 }, .bar2 = { .addr = r->bar2 },
        .mbox_in = r->mbox_in, .mbox_out = r->mbox_out,
        .msi_page = r->msi_page, .toggle = r->toggle,
    };
    uint32_t i;

    chpp_adopt_migrated(d, &src);
    d->next_mtt = r->next_mtt;
    *f = (Fn) {
        .d = d, .fn = fn, .eq = r->eq, .eq_ci = r->eq_ci,
        .ncq = r->ncq, .nqp = r->nqp,
        .buf = r->buf, .buf_len = r->buf_len, .key = r->key,
        .next_mr = r->next_mr,
    };
    g_assert_cmpuint(r->eq_nent, ==, EQ_NENT);
    g_assert_cmpuint(f->ncq, <=, NCQ);
    g_assert_cmpuint(f->nqp, <=, NQP);
    for (i = 0; i < f->ncq; i++) {
        const CompatCq *c = &r->cq[i];

        f->cq[i] = (ChppTCq) {
            .cqn = c->cqn, .ring = c->ring, .nent = c->nent, .ci = c->ci,
            .uar = c->uar,
        };
    }
    for (i = 0; i < f->nqp; i++) {
        const CompatQp *q = &r->qp[i];

        f->qp[i] = (ChppTQp) {
            .qpn = q->qpn, .type = q->type, .sq = q->sq, .rq = q->rq,
            .sq_pi = q->sq_pi, .rq_pi = q->rq_pi, .log_sq = q->log_sq,
            .log_rq = q->log_rq, .stride = q->stride, .magic = q->magic,
            .uar = q->uar,
        };
    }
}

/* A handle for VF @fn of @pf's device (its config space is the stream's). */
static ChppDev *vf_handle(ChppDev *pf, int fn)
{
    ChppDev *vf = g_new0(ChppDev, 1);

    vf->qs = pf->qs;
    vf->qts = pf->qts;
    vf->pdev = g_new0(QPCIDevice, 1);
    vf->pdev->bus = pf->pdev->bus;
    vf->pdev->devfn = CHPP_TEST_DEVFN + fn;
    return vf;
}

/*
 * Load stream @s into a new QEMU and wait until it runs; the test's
 * handles, queues and buffers are then the generator's.
 */
static void compat_load(Compat *c, const Stream *s)
{
    g_autofree char *path = stream_path(s);
    ChppDev *d = load_start(path, s);
    int64_t end = g_get_monotonic_time() + 120 * G_USEC_PER_SEC;
    uint64_t skip;
    int i;

    memset(c, 0, sizeof(*c));
    for (;;) {
        QDict *rsp;
        g_autofree char *st = NULL;

        if (!qtest_probe_child(d->qts)) {
            g_error("QEMU exited while loading %s: the stream no longer "
                    "loads (QEMU's reason is printed above)", path);
        }
        rsp = qtest_qmp(d->qts, "{ 'execute': 'query-status' }");
        st = g_strdup(qdict_get_str(qdict_get_qdict(rsp, "return"),
                                    "status"));
        qobject_unref(rsp);
        if (!strcmp(st, "running")) {
            break;
        }
        g_assert_cmpstr(st, ==, "inmigrate");
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(10000);
    }
    layout_read(d->qts, &c->lay);
    g_test_message("%s: made by ABI %u.%u", path,
                   (unsigned)(c->lay.abi_version >> 16),
                   (unsigned)(c->lay.abi_version & 0xffff));
    /* libqos's allocator: past what the generator's allocated. */
    skip = guest_alloc(&d->qs->alloc, c->lay.alloc_top - ALLOC_START);
    g_assert_cmphex(skip, ==, ALLOC_START);

    c->p = g_new0(ChppPf, 1);
    c->p->d = d;
    fn_adopt(&c->fn[0], d, 0, &c->lay.fn[0]);
    for (i = 1; i < NFN; i++) {
        c->p->vf[i] = vf_handle(d, i);
        fn_adopt(&c->fn[i], c->p->vf[i], i, &c->lay.fn[i]);
    }
}

/* QUERY_QP of QP @qpn of @f is what the generator saw. */
static void check_qp(Compat *c, Fn *f, uint32_t qpn)
{
    const CompatQp *r = &c->lay.fn[f->fn].qp[qpn];
    struct chpp_qp_context q;

    g_assert_cmphex(chpp_query_qp(f->d, qpn, &q), ==, CHPP_STAT_OK);
    c->cmds[f->fn]++;
    g_test_message("fn %u QP %u: %s, sq_psn 0x%x rq_psn 0x%x", f->fn, qpn,
                   chpp_qp_state_name(q.state), le32_to_cpu(q.sq_psn),
                   le32_to_cpu(q.rq_psn));
    g_assert_cmpuint(q.state, ==, r->state);
    g_assert_cmpuint(q.type, ==, r->type);
    g_assert_cmpuint(q.magic, ==, r->magic);
    g_assert_cmpuint(q.log_sq_size, ==, r->log_sq);
    g_assert_cmpuint(q.log_rq_stride, ==, r->stride);
    g_assert_cmpuint(le16_to_cpu(q.uar), ==, r->uar);
    g_assert_cmphex(le32_to_cpu(q.sq_psn), ==, r->sq_psn);
    g_assert_cmphex(le32_to_cpu(q.rq_psn), ==, r->rq_psn);
    g_assert_cmphex(le32_to_cpu(q.sq_pi), ==, r->dev_sq_pi);
    g_assert_cmphex(le32_to_cpu(q.sq_ci), ==, r->dev_sq_ci);
    g_assert_cmphex(le32_to_cpu(q.rq_pi), ==, r->dev_rq_pi);
    g_assert_cmphex(le32_to_cpu(q.rq_ci), ==, r->dev_rq_ci);
    g_assert_cmpuint(le32_to_cpu(q.sq_inflight), ==, r->sq_inflight);
}

static void check_cq(Compat *c, Fn *f, uint32_t cqn)
{
    const CompatCq *r = &c->lay.fn[f->fn].cq[cqn];
    struct chpp_cq_context q;

    g_assert_cmphex(chpp_query_cq(f->d, cqn, &q), ==, CHPP_STAT_OK);
    c->cmds[f->fn]++;
    g_assert_cmpuint(q.state, ==, CHPP_RES_HW);
    g_assert_cmpuint(le32_to_cpu(q.num_entries), ==, r->nent);
    g_assert_cmpuint(le32_to_cpu(q.eqn), ==, 0);
    g_assert_cmpuint(le16_to_cpu(q.uar), ==, r->uar);
    g_assert_cmphex(le32_to_cpu(q.producer_index), ==, r->pi_dev);
    g_assert_cmphex(le32_to_cpu(q.consumer_index), ==, r->ci_dev);
    g_assert_cmpuint(q.arm, ==, r->arm);
}

static void check_fn_tables(Compat *c, Fn *f)
{
    const CompatFn *r = &c->lay.fn[f->fn];
    struct chpp_eq_context e;
    struct chpp_mpt_context m;
    uint32_t i;

    g_assert_cmphex(chpp_query_eq(f->d, 0, &e), ==, CHPP_STAT_OK);
    c->cmds[f->fn]++;
    g_assert_cmphex(le64_to_cpu(e.base_addr), ==, r->eq);
    g_assert_cmpuint(le32_to_cpu(e.num_entries), ==, EQ_NENT);
    g_assert_cmpuint(e.state, ==, r->eq_state);
    g_assert_cmphex(le32_to_cpu(e.producer_index), ==, r->eq_pi_dev);
    g_assert_cmphex(le32_to_cpu(e.consumer_index), ==, r->eq_ci);
    g_assert_cmphex(chpp_query_mpt(f->d, 0, &m), ==, CHPP_STAT_OK);
    c->cmds[f->fn]++;
    g_assert_cmpuint(m.state, ==, CHPP_RES_HW);
    g_assert_cmphex(le32_to_cpu(m.key), ==, r->key);
    g_assert_cmphex(le64_to_cpu(m.start), ==, r->buf);
    g_assert_cmphex(le64_to_cpu(m.length), ==, r->buf_len);
    g_assert_cmphex(le32_to_cpu(m.flags), ==, MR_ALL);
    for (i = 0; i < f->ncq; i++) {
        check_cq(c, f, i);
    }
    for (i = 0; i < f->nqp; i++) {
        check_qp(c, f, i);
    }
}

/* The address of the 64-bit memory BAR at config offset @reg. */
static uint64_t bar_addr(ChppDev *d, int reg)
{
    uint32_t lo = qpci_config_readl(d->pdev, reg);

    g_assert_cmphex(lo & PCI_BASE_ADDRESS_MEM_TYPE_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64);
    return (uint64_t)qpci_config_readl(d->pdev, reg + 4) << 32 |
           (lo & PCI_BASE_ADDRESS_MEM_MASK);
}

/* Counter @n of @f minus the generator's value. */
static uint32_t cnt_delta(Compat *c, Fn *f, enum chpp_counter n)
{
    g_assert_cmpuint(n, <, c->lay.fn[f->fn].ncounters);
    return chpp_counter(f->d, n) - c->lay.fn[f->fn].counters[n];
}

static void compat_end(Compat *c)
{
    chpp_pf_stop(c->p);
}

/*
 * The state as the generator left it: counters (before any command),
 * registers, config space, SR-IOV, VF quotas, and the EQ, MR, CQ and QP
 * contexts of every function.
 */
static void test_state(const void *opaque)
{
    Compat c;
    struct chpp_vf_res res;
    struct chpp_dev_cap cap;
    ChppDev *pf;
    uint32_t i, n;

    compat_load(&c, opaque);
    pf = c.p->d;
    for (i = 0; i < NFN; i++) {
        const CompatFn *r = &c.lay.fn[i];

        g_assert_cmpuint(r->ncounters, <=, CHPP_CNT_NUM);
        for (n = 0; n < r->ncounters; n++) {
            if (chpp_counter(c.fn[i].d, n) != r->counters[n]) {
                g_error("function %u counter %u: %u, saved as %" PRIu64, i,
                        n, chpp_counter(c.fn[i].d, n), r->counters[n]);
            }
        }
        g_assert_cmphex(chpp_rd(c.fn[i].d, CHPP_REG_MAGIC), ==, CHPP_MAGIC);
        g_assert_cmpuint(chpp_rd(c.fn[i].d, CHPP_REG_FUNC), ==, i);
        g_assert_cmphex(chpp_rd(c.fn[i].d, CHPP_REG_SCRATCH), ==,
                        r->scratch);
    }

    /* The BARs the generator's libqos assigned, SR-IOV with 2 VFs. */
    g_assert_cmphex(bar_addr(pf, PCI_BASE_ADDRESS_0), ==, c.lay.fn[0].bar0);
    g_assert_cmphex(bar_addr(pf, PCI_BASE_ADDRESS_2), ==, c.lay.fn[0].bar2);
    g_assert_cmpuint(chpp_pf_cfg_rd(c.p, 0, CHPP_PCI_EXT_CAP_SRIOV +
                                    PCI_SRIOV_NUM_VF) & 0xffff, ==, 2);
    g_assert(chpp_pf_cfg_rd(c.p, 0, CHPP_PCI_EXT_CAP_SRIOV +
                            PCI_SRIOV_CTRL) & PCI_SRIOV_CTRL_VFE);
    for (i = 1; i <= NFN; i++) {
        /* VFs read 0xffff as their IDs; VF 3 has no PCIe capability. */
        g_assert_cmpuint(chpp_pf_cfg_rd(c.p, i, CHPP_PCI_CAP_EXP) ==
                         0xffffffff, ==, i == NFN);
    }

    /* VF 1's quotas, as SET_VF_RES gave them; VF 2's the defaults. */
    g_assert_cmphex(chpp_cmd(pf, CHPP_CMD_QUERY_VF_RES, 0, 1, pf->mbox_out),
                    ==, CHPP_STAT_OK);
    c.cmds[0]++;
    qtest_memread(pf->qts, pf->mbox_out, &res, sizeof(res));
    g_assert_cmpuint(le32_to_cpu(res.num_qps), ==, 2);
    g_assert_cmpuint(le32_to_cpu(res.num_cqs), ==, 4);
    g_assert_cmpuint(le32_to_cpu(res.num_eqs), ==, 2);
    g_assert_cmpuint(le32_to_cpu(res.num_mpts), ==, 16);
    g_assert_cmpuint(le32_to_cpu(res.num_pds), ==, 4);
    g_assert_cmpuint(le32_to_cpu(res.num_mtts), ==, 1024);
    g_assert_cmpuint(le32_to_cpu(res.msix_vectors), ==, 2);
    g_assert_cmpuint(res.weight, ==, 3);
    g_assert_cmpuint(res.priority, ==, 1);
    for (i = 1; i < NFN; i++) {
        ChppDev *vf = c.fn[i].d;

        g_assert_cmphex(chpp_cmd(vf, CHPP_CMD_QUERY_DEV_CAP, 0, 0,
                                 vf->mbox_out), ==, CHPP_STAT_OK);
        c.cmds[i]++;
        qtest_memread(vf->qts, vf->mbox_out, &cap, sizeof(cap));
        g_assert_cmpuint(le16_to_cpu(cap.func), ==, i);
        g_assert_cmpuint(le32_to_cpu(cap.max_qps), ==,
                         i == 1 ? 2 : CHPP_VF_DEFAULT_QPS);
        g_assert_cmpuint(le32_to_cpu(cap.max_cqs), ==,
                         i == 1 ? 4 : CHPP_VF_DEFAULT_CQS);
    }

    for (i = 0; i < NFN; i++) {
        check_fn_tables(&c, &c.fn[i]);
    }
    /* What the queries added: commands, all fine. */
    for (i = 0; i < NFN; i++) {
        g_assert_cmpuint(cnt_delta(&c, &c.fn[i], CHPP_CNT_CMDS), ==,
                         c.cmds[i]);
        g_assert_cmpuint(cnt_delta(&c, &c.fn[i], CHPP_CNT_CMD_ERRORS), ==, 0);
        g_assert_cmpuint(cnt_delta(&c, &c.fn[i], CHPP_CNT_GUEST_ERRORS), ==,
                         0);
    }
    compat_end(&c);
}

/*
 * The work that was in progress on PF QPs 0 and 1: the CQE not polled is
 * there once, the SEND waiting out RNR NAKs completes into a receive
 * posted now (with a completion event on the armed EQ and its MSI-X
 * message), the PUT written but not rung starts at its doorbell, and the
 * receives posted on QP 1 take new SENDs in order.
 */
static void test_work_in_flight(const void *opaque)
{
    Compat c;
    Fn *pf;
    struct chpp_eqe eqe;
    struct chpp_qp_context q;
    uint32_t i, wqes, cqes;

    compat_load(&c, opaque);
    pf = &c.fn[0];
    wqes = chpp_counter(pf->d, CHPP_CNT_WQES);
    cqes = chpp_counter(pf->d, CHPP_CNT_CQES);

    expect_cqe(pf, CQ_AB_S, 4, CHPP_CQE_OP_RDMA_WRITE, G4_LEN, QA);
    chpp_check(pf->d, pf->buf + G4_DST, G4_LEN, 4);
    g_assert_false(chpp_msix_fired(pf->d, 0));

    post_recv(pf, QA, 500, LOADER, 4096);
    expect_cqe(pf, CQ_AB_S, 5, CHPP_CQE_OP_SEND, G5_LEN, QB);
    expect_recv(pf, CQ_AB_R, 500, G5_LEN, QA, QB, 0);
    chpp_check(pf->d, pf->buf + LOADER, G5_LEN, 5);
    g_assert(eqe_next(pf, &eqe));
    g_assert_cmpuint(eqe.type, ==, CHPP_EVENT_COMP);
    g_assert_cmpuint(le32_to_cpu(eqe.event.cq.cqn), ==, CQ_AB_R);
    g_assert_false(eqe_next(pf, &eqe));
    g_assert(chpp_msix_fired(pf->d, 0));
    chpp_eq_db(pf->d, 0, pf->eq_ci, true);

    chpp_sq_db(pf->d, UAR, QA, pf->qp[QA].sq_pi);
    expect_cqe(pf, CQ_AB_S, 6, CHPP_CQE_OP_RDMA_WRITE, G6_LEN, QA);
    chpp_check(pf->d, pf->buf + G6_DST, G6_LEN, 6);

    for (i = 0; i < 2; i++) {
        uint32_t off = LOADER + 0x1000 + i * 0x800;

        chpp_fill(pf->d, pf->buf + off, 1000 + i * 200, 23 + i);
        post_wr(pf, QA, CHPP_WQE_SEND, 7 + i, off, 1000 + i * 200, NULL, 0,
                true);
        expect_cqe(pf, CQ_AB_S, 7 + i, CHPP_CQE_OP_SEND, 1000 + i * 200, QA);
        expect_recv(pf, CQ_AB_R, 101 + i, 1000 + i * 200, QB, QA, 0);
        chpp_check(pf->d, pf->buf + R101 + i * 0x1000, 1000 + i * 200,
                   23 + i);
    }
    expect_none(pf, CQ_AB_S);
    expect_none(pf, CQ_AB_R);
    g_assert_false(eqe_next(pf, &eqe));

    /* Everything done, once: QP 1's SEND was not started again. */
    for (i = QA; i <= QB; i++) {
        g_assert_cmphex(chpp_query_qp(pf->d, i, &q), ==, CHPP_STAT_OK);
        g_assert_cmpuint(q.state, ==, CHPP_QPS_RTS);
        g_assert_cmphex(le32_to_cpu(q.sq_ci), ==, pf->qp[i].sq_pi);
        g_assert_cmphex(le32_to_cpu(q.rq_ci), ==, pf->qp[i].rq_pi);
        g_assert_cmpuint(le32_to_cpu(q.sq_inflight), ==, 0);
    }
    g_assert_cmpuint(chpp_counter(pf->d, CHPP_CNT_WQES) - wqes, ==, 3);
    g_assert_cmpuint(chpp_counter(pf->d, CHPP_CNT_CQES) - cqes, ==, 7);
    g_assert_cmpuint(cnt_delta(&c, pf, CHPP_CNT_CQES_DROPPED), ==, 0);
    g_assert_cmpuint(cnt_delta(&c, pf, CHPP_CNT_GUEST_ERRORS), ==, 0);
    g_assert_cmpuint(cnt_delta(&c, pf, CHPP_CNT_DMA_ERRORS), ==, 0);
    g_assert_cmpuint(cnt_delta(&c, pf, CHPP_CNT_EVENTS), ==, 1);
    g_assert_cmpuint(cnt_delta(&c, pf, CHPP_CNT_IRQS), ==, 1);
    compat_end(&c);
}

/*
 * New work on QPs that were idle: PUT, GET, atomics and SEND on PF QPs 4
 * and 5 (whose PSNs go on from the stream's, across the 24-bit wrap), a
 * UD SEND into the receive left posted; the generator's bytes are there.
 */
static void test_new_traffic(const void *opaque)
{
    Compat c;
    Fn *pf;
    struct chpp_qp_context qc, qd;
    uint32_t wqes, cqes;

    compat_load(&c, opaque);
    pf = &c.fn[0];
    wqes = chpp_counter(pf->d, CHPP_CNT_WQES);
    cqes = chpp_counter(pf->d, CHPP_CNT_CQES);
    chpp_check(pf->d, pf->buf + G1_DST, G_LEN, 1);
    chpp_check(pf->d, pf->buf + G7_DST, G_LEN, 9);
    chpp_check(pf->d, pf->buf + V2_DST, V_LEN, 12);

    chpp_fill(pf->d, pf->buf + LOADER, 8192, 20);
    post_wr(pf, QC, CHPP_WQE_PUT, 20, LOADER, 8192, pf, LOADER + 0x2000,
            true);
    expect_cqe(pf, CQ_CD_S, 20, CHPP_CQE_OP_RDMA_WRITE, 8192, QC);
    chpp_check(pf->d, pf->buf + LOADER + 0x2000, 8192, 20);
    post_wr(pf, QD, CHPP_WQE_GET, 21, LOADER + 0x4000, 8192, pf, LOADER,
            true);
    expect_cqe(pf, CQ_CD_S, 21, CHPP_CQE_OP_RDMA_READ, 8192, QD);
    chpp_check(pf->d, pf->buf + LOADER + 0x4000, 8192, 20);

    post_atomic(pf, QC, CHPP_WQE_ATOMIC_FA, 22, ATOM + 16, pf, ATOM, 1, 0);
    expect_cqe(pf, CQ_CD_S, 22, CHPP_CQE_OP_FETCH_ADD, 8, QC);
    post_atomic(pf, QD, CHPP_WQE_ATOMIC_CS, 23, ATOM + 24, pf, ATOM, 77,
                1235);
    expect_cqe(pf, CQ_CD_S, 23, CHPP_CQE_OP_COMP_SWAP, 8, QD);
    g_assert_cmpuint(qtest_readq(pf->d->qts, pf->buf + ATOM + 16), ==, 1234);
    g_assert_cmpuint(qtest_readq(pf->d->qts, pf->buf + ATOM + 24), ==, 1235);
    g_assert_cmpuint(qtest_readq(pf->d->qts, pf->buf + ATOM), ==, 77);

    post_recv(pf, QD, 610, LOADER + 0x6000, 4096);
    chpp_fill(pf->d, pf->buf + LOADER + 0x7000, 1000, 21);
    post_wr(pf, QC, CHPP_WQE_SEND, 24, LOADER + 0x7000, 1000, NULL, 0,
            true);
    expect_cqe(pf, CQ_CD_S, 24, CHPP_CQE_OP_SEND, 1000, QC);
    expect_recv(pf, CQ_CD_R, 610, 1000, QD, QC, 0);
    chpp_check(pf->d, pf->buf + LOADER + 0x6000, 1000, 21);

    /* UD: the receive the generator left takes a new SEND. */
    chpp_fill(pf->d, pf->buf + LOADER + 0x7800, 600, 22);
    post_ud_self(pf, QUD, 25, LOADER + 0x7800, 600);
    expect_cqe(pf, CQ_UD_S, 25, CHPP_CQE_OP_SEND, 600, QUD);
    expect_recv(pf, CQ_UD_R, 401, 600 + CHPP_UD_GRH_SIZE, QUD, QUD, 0);
    chpp_check(pf->d, pf->buf + R401 + CHPP_UD_GRH_SIZE, 600, 22);
    expect_none(pf, CQ_CD_S);
    expect_none(pf, CQ_CD_R);
    expect_none(pf, CQ_UD_R);

    /* The PSNs went on: each side expects what the other sends next. */
    g_assert_cmphex(chpp_query_qp(pf->d, QC, &qc), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_query_qp(pf->d, QD, &qd), ==, CHPP_STAT_OK);
    g_assert_cmphex(le32_to_cpu(qc.sq_psn), ==, le32_to_cpu(qd.rq_psn));
    g_assert_cmphex(le32_to_cpu(qd.sq_psn), ==, le32_to_cpu(qc.rq_psn));
    g_assert_cmphex(le32_to_cpu(qc.sq_psn), <, psn_of(0, QC));
    g_assert_cmpuint(qc.state, ==, CHPP_QPS_RTS);
    g_assert_cmpuint(qd.state, ==, CHPP_QPS_RTS);

    g_assert_cmpuint(chpp_counter(pf->d, CHPP_CNT_WQES) - wqes, ==, 6);
    g_assert_cmpuint(chpp_counter(pf->d, CHPP_CNT_CQES) - cqes, ==, 8);
    g_assert_cmpuint(cnt_delta(&c, pf, CHPP_CNT_GUEST_ERRORS), ==, 0);
    g_assert_cmpuint(cnt_delta(&c, pf, CHPP_CNT_DMA_ERRORS), ==, 0);
    g_assert_cmpuint(cnt_delta(&c, pf, CHPP_CNT_MAGIC_DROPS), ==, 0);
    compat_end(&c);
}

/*
 * The VFs: VF 1 (own quotas) and the PF's QP 3 take SENDs into the
 * receives posted before, PUT and GET between them work, VF 2 takes new
 * QPs; then the VFs can be disabled and enabled again.
 */
static void test_vfs(const void *opaque)
{
    Compat c;
    Fn *pf, *vf1, *vf2;
    struct chpp_vf_res res;
    uint32_t wqes;

    compat_load(&c, opaque);
    pf = &c.fn[0];
    vf1 = &c.fn[1];
    vf2 = &c.fn[2];
    wqes = chpp_counter(vf1->d, CHPP_CNT_WQES);

    chpp_fill(pf->d, pf->buf + LOADER, 3000, 30);
    post_wr(pf, QPV, CHPP_WQE_SEND, 30, LOADER, 3000, NULL, 0, true);
    expect_cqe(pf, CQ_PV_S, 30, CHPP_CQE_OP_SEND, 3000, QPV);
    expect_recv(vf1, CQ_V_R, 200, 3000, QVP, QPV, 0);
    chpp_check(vf1->d, vf1->buf + R200, 3000, 30);

    chpp_fill(vf1->d, vf1->buf + VLOADER, 2500, 31);
    post_wr(vf1, QVP, CHPP_WQE_SEND, 31, VLOADER, 2500, NULL, 0, true);
    expect_cqe(vf1, CQ_V_S, 31, CHPP_CQE_OP_SEND, 2500, QVP);
    expect_recv(pf, CQ_PV_R, 300, 2500, QPV, QVP, 1);
    chpp_check(pf->d, pf->buf + R300, 2500, 31);

    chpp_fill(vf1->d, vf1->buf + VLOADER + 0x1000, 8192, 32);
    post_wr(vf1, QVP, CHPP_WQE_PUT, 32, VLOADER + 0x1000, 8192, pf,
            LOADER + 0x1000, true);
    expect_cqe(vf1, CQ_V_S, 32, CHPP_CQE_OP_RDMA_WRITE, 8192, QVP);
    chpp_check(pf->d, pf->buf + LOADER + 0x1000, 8192, 32);
    post_wr(vf1, QVP, CHPP_WQE_GET, 33, VLOADER + 0x4000, V_LEN, pf, V1_DST,
            true);
    expect_cqe(vf1, CQ_V_S, 33, CHPP_CQE_OP_RDMA_READ, V_LEN, QVP);
    chpp_check(vf1->d, vf1->buf + VLOADER + 0x4000, V_LEN, 11);
    expect_none(vf1, CQ_V_S);
    expect_none(vf1, CQ_V_R);
    expect_none(pf, CQ_PV_R);
    g_assert_cmpuint(chpp_counter(vf1->d, CHPP_CNT_WQES) - wqes, ==, 3);
    g_assert_cmpuint(cnt_delta(&c, vf1, CHPP_CNT_GUEST_ERRORS), ==, 0);
    g_assert_cmpuint(cnt_delta(&c, vf1, CHPP_CNT_PKTS_DROPPED), ==, 0);

    /* VF 2 had no QP: two new ones, connected, move data. */
    make_qp(vf2, 0, CHPP_QPT_RC, 0, 1, 0x20);
    make_qp(vf2, 1, CHPP_QPT_RC, 0, 1, 0x21);
    connect_rc(vf2, 0, vf2, 1);
    connect_rc(vf2, 1, vf2, 0);
    chpp_fill(vf2->d, vf2->buf, 4096, 34);
    post_wr(vf2, 0, CHPP_WQE_PUT, 34, 0, 4096, vf2, 0x2000, true);
    expect_cqe(vf2, 0, 34, CHPP_CQE_OP_RDMA_WRITE, 4096, 0);
    chpp_check(vf2->d, vf2->buf + 0x2000, 4096, 34);

    /* Ordinary VFs: disabled and enabled again, with VF 1's quotas. */
    chpp_pf_vfs_set(c.p, 1);
    g_assert_cmphex(chpp_rd(c.p->vf[1], CHPP_REG_MAGIC), ==, CHPP_MAGIC);
    g_assert_cmphex(chpp_rd(c.p->vf[1], CHPP_REG_SCRATCH), ==, 0);
    g_assert_cmphex(chpp_cmd(c.p->d, CHPP_CMD_QUERY_VF_RES, 0, 1,
                             c.p->d->mbox_out), ==, CHPP_STAT_OK);
    qtest_memread(c.p->d->qts, c.p->d->mbox_out, &res, sizeof(res));
    g_assert_cmpuint(le32_to_cpu(res.num_qps), ==, 2);
    chpp_init_hca(c.p->vf[1]);
    compat_end(&c);
}

/* A stream made incompatible on purpose: refused, QEMU exits with 1. */
static void test_refused(const void *opaque)
{
    const Stream *s = opaque;
    g_autofree char *path = stream_path(s);
    ChppDev *d = load_start(path, s);
    int64_t end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;

    g_test_message("%s: incompatible on purpose: %s", path, s->refused);
    while (qtest_probe_child(d->qts)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(10000);
    }
    qtest_set_expected_status(d->qts, 1);
    chpp_stop(d);
}

static void add_cases(const Stream *s)
{
    static const struct {
        const char *name;
        void (*fn)(const void *);
    } cases[] = {
        { "state", test_state },
        { "work-in-flight", test_work_in_flight },
        { "new-traffic", test_new_traffic },
        { "vfs", test_vfs },
    };
    unsigned i;

    if (s->refused) {
        g_autofree char *path = g_strdup_printf("/chpp-hca/compat/%s/"
                                                "refused", s->name);

        qtest_add_data_func(path, s, test_refused);
        return;
    }
    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        g_autofree char *path = g_strdup_printf("/chpp-hca/compat/%s/%s",
                                                s->name, cases[i].name);

        qtest_add_data_func(path, s, cases[i].fn);
    }
}

int main(int argc, char **argv)
{
    static const Stream gen = { "generated", NULL, NULL, NULL };
    unsigned i;

    g_test_init(&argc, &argv, NULL);
    if (!qtest_has_machine("q35")) {
        return 1;
    }
    generated = g_getenv("CHPP_COMPAT_GENERATE");
    if (generated && !g_path_is_absolute(generated)) {
        /* scripts/qtest.sh runs the test in build/qemu/. */
        g_printerr("CHPP_COMPAT_GENERATE=%s: give an absolute path\n",
                   generated);
        return 1;
    }
    if (generated) {
        qtest_add_data_func("/chpp-hca/compat/generate", generated,
                            test_generate);
        add_cases(&gen);
    } else {
        for (i = 0; i < ARRAY_SIZE(streams); i++) {
            add_cases(&streams[i]);
        }
    }
    return g_test_run();
}
