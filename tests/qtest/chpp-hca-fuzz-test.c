/*
 * chpp-hca fuzzer reproducers: one function per bug found by
 * scripts/fuzz.sh (QEMU's generic fuzzer, target generic-fuzz-chpp-hca),
 * as raw qtest accesses like QEMU's own tests/qtest/fuzz-*-test.c. They
 * pass on a fixed device under both suites; in suite 'asan' the bug they
 * replay is a sanitizer report and fails the test.
 *
 * The machine is the fuzzer's: q35, -nodefaults, the device at 04.0 with
 * small resource counts. BAR0 is mapped by hand at CHPP_FZ_BAR0.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "hw/chpp/chpp-hca-abi.h"

#define CHPP_FZ_ARGS    "-machine q35 -nodefaults " \
                        "-device chpp-hca,addr=04.0,num-qps=4,num-cqs=4," \
                        "num-eqs=4,num-mpts=16,num-pds=4,msix-vectors=4," \
                        "uar-pages=4,num-mtts=256"
#define CHPP_FZ_CFG(r)  (0x80000000u | (0x20u << 8) | (r))  /* 00:04.0 */
#define CHPP_FZ_BAR0    0xe0000000ull
#define CHPP_FZ_HCR(r)  (CHPP_FZ_BAR0 + CHPP_REG_HCR + (r))
#define CHPP_FZ_MBOX    0x100000ull

/* Boot the fuzzer's machine; BAR0 at CHPP_FZ_BAR0, memory + bus master on. */
static QTestState *chpp_fz_start(void)
{
    QTestState *s = qtest_init(CHPP_FZ_ARGS);

    qtest_outl(s, 0xcf8, CHPP_FZ_CFG(0x10));
    qtest_outl(s, 0xcfc, (uint32_t)CHPP_FZ_BAR0);
    qtest_outl(s, 0xcf8, CHPP_FZ_CFG(0x14));
    qtest_outl(s, 0xcfc, CHPP_FZ_BAR0 >> 32);
    qtest_outl(s, 0xcf8, CHPP_FZ_CFG(0x04));
    qtest_outw(s, 0xcfc, 0x6);
    g_assert_cmphex(qtest_readl(s, CHPP_FZ_BAR0 + CHPP_REG_MAGIC), ==,
                    CHPP_MAGIC);
    return s;
}

/* Post one HCR command (polling) and return its status. */
static uint8_t chpp_fz_cmd(QTestState *s, uint16_t opcode, uint32_t in_mod,
                           uint64_t out_param, bool toggle)
{
    uint32_t ctrl;
    int i;

    qtest_writel(s, CHPP_FZ_HCR(CHPP_HCR_IN_PARAM_H), 0);
    qtest_writel(s, CHPP_FZ_HCR(CHPP_HCR_IN_PARAM_L), 0);
    qtest_writel(s, CHPP_FZ_HCR(CHPP_HCR_IN_MODIFIER), in_mod);
    qtest_writel(s, CHPP_FZ_HCR(CHPP_HCR_OUT_PARAM_H), out_param >> 32);
    qtest_writel(s, CHPP_FZ_HCR(CHPP_HCR_OUT_PARAM_L), out_param);
    qtest_writel(s, CHPP_FZ_HCR(CHPP_HCR_TOKEN), 0);
    qtest_writel(s, CHPP_FZ_HCR(CHPP_HCR_CTRL), CHPP_HCR_GO | opcode |
                 (toggle ? CHPP_HCR_T : 0));
    for (i = 0; i < 1000; i++) {
        ctrl = qtest_readl(s, CHPP_FZ_HCR(CHPP_HCR_CTRL));
        if (!(ctrl & CHPP_HCR_GO)) {
            return ctrl >> CHPP_HCR_STATUS_SHIFT;
        }
        qtest_clock_step(s, 100000);
    }
    g_assert_not_reached();
}

/*
 * QUERY_EQ with an EQ number far past the table: the device took the
 * address of eqs[eqn] before checking eqn (UBSan: index 16711682 out of
 * bounds for type 'ChppEq[64]'). Must fail with BAD_INDEX, nothing else.
 */
static void test_query_eq_index_oob(void)
{
    QTestState *s = chpp_fz_start();

    g_assert_cmphex(chpp_fz_cmd(s, CHPP_CMD_INIT_HCA, CHPP_ABI_VERSION_MAJOR,
                                0, true), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_fz_cmd(s, CHPP_CMD_QUERY_EQ, 0xff0002,
                                CHPP_FZ_MBOX, false), ==,
                    CHPP_STAT_BAD_INDEX);
    qtest_quit(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/chpp-hca/fuzz/query-eq-index-oob",
                   test_query_eq_index_oob);
    return g_test_run();
}
