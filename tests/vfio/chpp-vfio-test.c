/*
 * chpp-vfio-test: drive two chpp-hca VFs from user space through VFIO
 * behind the guest's IOMMU (docs/vfio-passthrough.md).
 *
 *   chpp-vfio-test BDF_A BDF_B
 *   chpp-vfio-test --raw BDF_A BDF_B
 *
 * Both VFs must be bound to vfio-pci. Each gets its own VFIO container
 * (type1 IOMMU), so each sees only its own DMA mappings. The program brings
 * both functions up from the HCR (docs/README.md bring-up), connects an RC
 * QP of A to one of B (loopback inside the adapter, dest_vf = B), then:
 *   - PUT, GET and NAP (indirect and inline) from A to B, bytes verified;
 *   - B's receive completion raises MSI-X vector 0 through VFIO's eventfd
 *     (interrupt remapping in the guest), which must arrive;
 *   - B registers a region whose page is the guest-physical address of a
 *     canary page that is NOT mapped in B's IOMMU domain, and A PUTs into
 *     it: the DMA must fail (error completion at A, WQ_ACCESS_ERROR at B,
 *     B's DMA error counter) and the canary must be unchanged.
 *
 * --raw is for a guest without an IOMMU, such as the nested guest that
 * receives the VFs through QEMU's vfio-pci (docs/vfio-passthrough.md): the
 * BARs are mapped from sysfs (resource0, resource2), the DMA addresses are
 * the guest-physical addresses of the pages (/proc/self/pagemap), and the
 * MSI-X and fault parts are left out (no VFIO, no IOMMU): PUT, GET and NAP
 * only. Either way the device's own address translation (MTT) is used for
 * the data region, so the pages need not be contiguous.
 *
 * WQEs, doorbells and CQEs go through the user-space data path the verbs
 * provider and libchpp-user use (guest-driver/common/chpp_datapath.c);
 * every other ABI field is converted with le32toh()/htole32() here.
 *
 * Prints "chpp-vfio: RESULT PASS" or "chpp-vfio: RESULT FAIL <why>" and
 * exits 0 only on PASS. Built statically on the host (make -C tests/vfio)
 * so that it runs in the busybox initramfs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>

#include "hw/chpp/chpp-hca-abi.h"
#include "chpp_datapath.h"

/* Layout of each function's DMA area (its own IOVA space, 4 KiB pages). */
#define OFF_MBOX_IN     0x0000
#define OFF_MBOX_OUT    0x1000
#define OFF_EQ          0x2000
#define OFF_CQ0         0x3000  /* send completions */
#define OFF_CQ1         0x4000  /* receive completions */
#define OFF_SQ          0x5000
#define OFF_RQ          0x6000
#define OFF_DATA        0x10000
#define DATA_LEN        0x10000
#define AREA_LEN        0x20000

#define EQ_ENTRIES      (4096 / CHPP_EQE_SIZE)
#define CQ_ENTRIES      (4096 / CHPP_CQE_SIZE)
#define LOG_WQS         4               /* 16 WQEs per queue */
#define LOG_STRIDE      8               /* 256-byte WQEs: one page per ring */

/* MTT entries: CQ0, CQ1, SQ, RQ, the data pages, then the fault page. */
#define MTT_CQ0         0
#define MTT_CQ1         1
#define MTT_SQ          2
#define MTT_RQ          3
#define MTT_DATA        4
#define MTT_FAULT       (MTT_DATA + DATA_LEN / 4096)

#define PD              1
#define MPT_DATA        1
#define MPT_FAULT       2
#define UAR             0
#define QPN             0
#define TIMEOUT_MS      20000

struct fn {
    const char *name;
    const char *bdf;
    bool raw;               /* sysfs + pagemap instead of VFIO */
    uint64_t pa[AREA_LEN / 4096];
    int container, group, device;
    int group_id;
    volatile uint8_t *bar0, *bar2;  /* MMIO: volatile accesses */
    uint8_t *mem;           /* DMA area, IOVA iova.. */
    uint64_t iova;
    bool toggle;
    uint32_t func;
    uint16_t node;
    uint8_t magic;
    uint32_t eq_ci, cq_ci[2];
    struct chpp_uwq sq, rq;
    uint32_t data_key;
    int irqfd;
};

static void fail(const char *fmt, ...)
{
    va_list ap;

    printf("chpp-vfio: RESULT FAIL ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    exit(1);
}

#define CHECK(cond, ...) do { if (!(cond)) { fail(__VA_ARGS__); } } while (0)

static void say(const char *fmt, ...)
{
    va_list ap;

    printf("chpp-vfio: ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

/* DMA address of byte @off of the area. */
static uint64_t dma(struct fn *f, size_t off)
{
    return f->raw ? f->pa[off / 4096] + off % 4096 : f->iova + off;
}

/* ---- registers --------------------------------------------------------- */

/* Registers are little-endian. */
static uint32_t rd32(struct fn *f, uint32_t off)
{
    /* MMIO: volatile, so that every read reaches the device. */
    volatile uint32_t *reg = (volatile uint32_t *)(f->bar0 + off);
    uint32_t v = *reg;

    return le32toh((CHPP_FORCE chpp_le32)v);
}

static void wr32(struct fn *f, uint32_t off, uint32_t v)
{
    /* MMIO */
    *(volatile uint32_t *)(f->bar0 + off) = (CHPP_FORCE uint32_t)htole32(v);
}

/* The UAR page of the doorbells (chpp_ring_*). */
static uint8_t *uar(struct fn *f)
{
    return (uint8_t *)f->bar2 + UAR * CHPP_UAR_PAGE_SIZE;
}

static uint32_t counter(struct fn *f, enum chpp_counter c)
{
    return rd32(f, CHPP_REG_CNT(c));
}

/* ---- HCR commands (polling, docs/commands.md) -------------------------- */

static uint8_t cmd(struct fn *f, uint16_t op, uint64_t in, uint32_t mod,
                   uint64_t out)
{
    int64_t end = now_ms() + TIMEOUT_MS;
    uint32_t ctrl;

    /* Idle: go clear and the t bit no longer the one we are about to send. */
    for (;;) {
        ctrl = rd32(f, CHPP_REG_HCR + CHPP_HCR_CTRL);
        if (!(ctrl & CHPP_HCR_GO) && !!(ctrl & CHPP_HCR_T) != f->toggle) {
            break;
        }
        CHECK(now_ms() < end, "%s: HCR stays busy before command 0x%x",
              f->name, op);
    }
    wr32(f, CHPP_REG_HCR + CHPP_HCR_IN_PARAM_H, in >> 32);
    wr32(f, CHPP_REG_HCR + CHPP_HCR_IN_PARAM_L, (uint32_t)in);
    wr32(f, CHPP_REG_HCR + CHPP_HCR_IN_MODIFIER, mod);
    wr32(f, CHPP_REG_HCR + CHPP_HCR_OUT_PARAM_H, out >> 32);
    wr32(f, CHPP_REG_HCR + CHPP_HCR_OUT_PARAM_L, (uint32_t)out);
    wr32(f, CHPP_REG_HCR + CHPP_HCR_TOKEN, 1u << CHPP_HCR_TOKEN_SHIFT);
    __sync_synchronize();
    wr32(f, CHPP_REG_HCR + CHPP_HCR_CTRL, CHPP_HCR_GO | op |
         (f->toggle ? CHPP_HCR_T : 0));
    f->toggle = !f->toggle;
    do {
        ctrl = rd32(f, CHPP_REG_HCR + CHPP_HCR_CTRL);
        CHECK(now_ms() < end, "%s: command 0x%x never completed",
              f->name, op);
    } while (ctrl & CHPP_HCR_GO);
    return ctrl >> CHPP_HCR_STATUS_SHIFT;
}

static void cmd_ok(struct fn *f, uint16_t op, uint64_t in, uint32_t mod,
                   uint64_t out)
{
    uint8_t st = cmd(f, op, in, mod, out);
    const char *status = chpp_status_name(st);

    CHECK(st == CHPP_STAT_OK, "%s: %s (mod 0x%x) status 0x%02x %s", f->name,
          chpp_cmd_name(op), mod, st, status ? status : "?");
}

/* Command with an input mailbox holding @len bytes of @p. */
static void cmd_in(struct fn *f, uint16_t op, uint32_t mod, const void *p,
                   size_t len)
{
    memset(f->mem + OFF_MBOX_IN, 0, CHPP_MAILBOX_SIZE);
    memcpy(f->mem + OFF_MBOX_IN, p, len);
    cmd_ok(f, op, dma(f, OFF_MBOX_IN), mod, 0);
}

static void cmd_out(struct fn *f, uint16_t op, uint32_t mod, void *p,
                    size_t len)
{
    memset(f->mem + OFF_MBOX_OUT, 0xa5, CHPP_MAILBOX_SIZE);
    cmd_ok(f, op, 0, mod, dma(f, OFF_MBOX_OUT));
    memcpy(p, f->mem + OFF_MBOX_OUT, len);
}

/* ---- VFIO -------------------------------------------------------------- */

static int sysfs_group(const char *bdf)
{
    char path[PATH_MAX], link[PATH_MAX];
    ssize_t n;

    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group", bdf);
    n = readlink(path, link, sizeof(link) - 1);
    CHECK(n > 0, "%s has no IOMMU group (is the IOMMU on?)", bdf);
    link[n] = 0;
    return atoi(basename(link));
}

static int group_members(int group)
{
    char path[PATH_MAX];
    struct dirent *e;
    DIR *d;
    int n = 0;

    snprintf(path, sizeof(path), "/sys/kernel/iommu_groups/%d/devices", group);
    d = opendir(path);
    CHECK(d, "cannot list %s", path);
    while ((e = readdir(d))) {
        if (e->d_name[0] != '.') {
            n++;
        }
    }
    closedir(d);
    return n;
}

/* MMIO: accessed through volatile pointers */
static volatile uint8_t *map_bar(struct fn *f, int index, uint64_t min)
{
    struct vfio_region_info ri = { .argsz = sizeof(ri), .index = index };
    void *p;

    CHECK(!ioctl(f->device, VFIO_DEVICE_GET_REGION_INFO, &ri),
          "%s: region info of BAR%d: %s", f->name, index, strerror(errno));
    CHECK(ri.size >= min, "%s: BAR%d is %llu bytes", f->name, index,
          (unsigned long long)ri.size);
    CHECK(ri.flags & VFIO_REGION_INFO_FLAG_MMAP, "%s: BAR%d not mmappable",
          f->name, index);
    p = mmap(NULL, ri.size, PROT_READ | PROT_WRITE, MAP_SHARED, f->device,
             ri.offset);
    CHECK(p != MAP_FAILED, "%s: mmap BAR%d: %s", f->name, index,
          strerror(errno));
    return p;
}

static void cfg_rw(struct fn *f, bool write, void *buf, size_t len, off_t off)
{
    struct vfio_region_info ri = {
        .argsz = sizeof(ri), .index = VFIO_PCI_CONFIG_REGION_INDEX,
    };
    ssize_t n;

    CHECK(!ioctl(f->device, VFIO_DEVICE_GET_REGION_INFO, &ri),
          "%s: config region info", f->name);
    n = write ? pwrite(f->device, buf, len, ri.offset + off)
              : pread(f->device, buf, len, ri.offset + off);
    CHECK(n == (ssize_t)len, "%s: config %s at 0x%lx", f->name,
          write ? "write" : "read", (long)off);
}

static void vfio_open(struct fn *f)
{
    struct vfio_group_status gs = { .argsz = sizeof(gs) };
    struct vfio_device_info di = { .argsz = sizeof(di) };
    struct vfio_iommu_type1_dma_map dm = { .argsz = sizeof(dm) };
    char path[64];
    uint16_t command;

    f->group_id = sysfs_group(f->bdf);
    CHECK(group_members(f->group_id) == 1,
          "%s (%s): IOMMU group %d has %d devices, want 1 (ACS)", f->name,
          f->bdf, f->group_id, group_members(f->group_id));

    f->container = open("/dev/vfio/vfio", O_RDWR);
    CHECK(f->container >= 0, "open /dev/vfio/vfio: %s", strerror(errno));
    CHECK(ioctl(f->container, VFIO_GET_API_VERSION) == VFIO_API_VERSION,
          "VFIO API version");
    CHECK(ioctl(f->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) == 1,
          "no VFIO type1v2 IOMMU");

    snprintf(path, sizeof(path), "/dev/vfio/%d", f->group_id);
    f->group = open(path, O_RDWR);
    CHECK(f->group >= 0, "open %s: %s", path, strerror(errno));
    CHECK(!ioctl(f->group, VFIO_GROUP_GET_STATUS, &gs) &&
          (gs.flags & VFIO_GROUP_FLAGS_VIABLE),
          "group %d not viable (every device bound to vfio-pci?)", f->group_id);
    CHECK(!ioctl(f->group, VFIO_GROUP_SET_CONTAINER, &f->container),
          "set container: %s", strerror(errno));
    CHECK(!ioctl(f->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU),
          "set IOMMU: %s", strerror(errno));
    f->device = ioctl(f->group, VFIO_GROUP_GET_DEVICE_FD, f->bdf);
    CHECK(f->device >= 0, "get device %s: %s", f->bdf, strerror(errno));
    CHECK(!ioctl(f->device, VFIO_DEVICE_GET_INFO, &di) &&
          (di.flags & VFIO_DEVICE_FLAGS_PCI) &&
          di.num_regions > VFIO_PCI_CONFIG_REGION_INDEX &&
          di.num_irqs > VFIO_PCI_MSIX_IRQ_INDEX, "%s: device info", f->name);

    f->bar0 = map_bar(f, CHPP_BAR_REGS, CHPP_BAR0_SIZE);
    f->bar2 = map_bar(f, CHPP_BAR_UAR, CHPP_UAR_PAGE_SIZE);

    /* Memory decoding and bus mastering (vfio-pci leaves the latter off). */
    cfg_rw(f, false, &command, 2, PCI_COMMAND);
    command |= PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
    cfg_rw(f, true, &command, 2, PCI_COMMAND);

    /* The DMA area: locked anonymous memory, mapped at f->iova only. */
    f->mem = mmap(NULL, AREA_LEN, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    CHECK(f->mem != MAP_FAILED, "mmap DMA area");
    memset(f->mem, 0, AREA_LEN);
    dm.vaddr = (uintptr_t)f->mem;
    dm.iova = f->iova;
    dm.size = AREA_LEN;
    dm.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
    CHECK(!ioctl(f->container, VFIO_IOMMU_MAP_DMA, &dm), "%s: MAP_DMA: %s",
          f->name, strerror(errno));
    say("%s: %s, IOMMU group %d (alone), container %d, IOVA 0x%" PRIx64
        "+0x%x", f->name, f->bdf, f->group_id, f->container, f->iova,
        AREA_LEN);
}

/* MSI-X vector 0 of @f signals an eventfd. */
static void vfio_msix(struct fn *f)
{
    char buf[sizeof(struct vfio_irq_set) + sizeof(int)];
    struct vfio_irq_set *set = (struct vfio_irq_set *)buf;
    struct vfio_irq_info ii = {
        .argsz = sizeof(ii), .index = VFIO_PCI_MSIX_IRQ_INDEX,
    };

    CHECK(!ioctl(f->device, VFIO_DEVICE_GET_IRQ_INFO, &ii) && ii.count >= 1 &&
          (ii.flags & VFIO_IRQ_INFO_EVENTFD), "%s: MSI-X irq info", f->name);
    f->irqfd = eventfd(0, EFD_NONBLOCK);
    CHECK(f->irqfd >= 0, "eventfd");
    set->argsz = sizeof(buf);
    set->flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
    set->index = VFIO_PCI_MSIX_IRQ_INDEX;
    set->start = 0;
    set->count = 1;
    memcpy(set->data, &f->irqfd, sizeof(int));
    CHECK(!ioctl(f->device, VFIO_DEVICE_SET_IRQS, set),
          "%s: SET_IRQS MSI-X: %s", f->name, strerror(errno));
    say("%s: MSI-X vector 0 -> eventfd (%u vectors)", f->name, ii.count);
}

/* The line of /proc/interrupts for @f's vfio vector: remapped ("IR-")? */
static bool msix_remapped(struct fn *f, char *line, size_t len)
{
    char want[96];
    FILE *p = fopen("/proc/interrupts", "r");
    bool found = false;

    snprintf(want, sizeof(want), "vfio-msix[0](%s)", f->bdf);
    while (p && fgets(line, len, p)) {
        if (strstr(line, want)) {
            found = true;
            break;
        }
    }
    if (p) {
        fclose(p);
    }
    CHECK(found, "%s: no %s in /proc/interrupts", f->name, want);
    line[strcspn(line, "\n")] = 0;
    return strstr(line, "IR-PCI-MSI") != NULL;  /* MSI and MSI-X alike */
}

/* ---- bring-up ---------------------------------------------------------- */

static void write_mtt(struct fn *f, uint32_t first, const uint64_t *e,
                      uint32_t n)
{
    struct chpp_write_mtt *m = (void *)(f->mem + OFF_MBOX_IN);
    uint32_t i;

    memset(m, 0, sizeof(*m));
    m->first_index = htole64(first);
    for (i = 0; i < n; i++) {
        m->entries[i] = htole64(e[i]);
    }
    cmd_ok(f, CHPP_CMD_WRITE_MTT, dma(f, OFF_MBOX_IN), n, 0);
}

static uint32_t create_mr(struct fn *f, uint32_t idx, uint64_t start,
                          uint64_t len, uint32_t mtt, uint32_t flags)
{
    uint32_t key = idx << CHPP_KEY_INDEX_SHIFT | (0x30 + idx);
    struct chpp_mpt_context m = {
        .flags = htole32(flags),
        .key = htole32(key),
        .pd = htole32(PD),
        .log_page_size = 12,
        .start = htole64(start),
        .length = htole64(len),
        .mtt_base = htole32(mtt),
    };

    cmd_in(f, CHPP_CMD_SW2HW_MPT, idx, &m, sizeof(m));
    return key;
}

static void bring_up(struct fn *f)
{
    struct chpp_fw_info fw;
    struct chpp_dev_cap cap;
    struct chpp_port_info port;
    struct chpp_eq_context eq = {
        .base_addr = htole64(dma(f, OFF_EQ)),
        .num_entries = htole32(EQ_ENTRIES),
        .msix_vector = htole16(0),
        .flags = CHPP_EQ_FLAG_ARMED,
    };
    uint64_t mtt[MTT_FAULT];
    uint32_t i, abi, flags, max_qps, max_cqs, max_mpts;

    CHECK(rd32(f, CHPP_REG_MAGIC) == CHPP_MAGIC, "%s: magic 0x%08x", f->name,
          rd32(f, CHPP_REG_MAGIC));
    abi = rd32(f, CHPP_REG_ABI_VERSION);
    CHECK(abi >> 16 == CHPP_ABI_VERSION_MAJOR, "%s: ABI 0x%x", f->name, abi);
    CHECK(rd32(f, CHPP_REG_CAPS) & CHPP_CAP_VF, "%s: not a VF", f->name);
    wr32(f, CHPP_REG_RESET, CHPP_RESET_MAGIC);
    (void)rd32(f, CHPP_REG_STATUS);
    f->toggle = true;       /* HCR reads 0 after reset */
    f->func = rd32(f, CHPP_REG_FUNC);

    cmd_out(f, CHPP_CMD_QUERY_FW, 0, &fw, sizeof(fw));
    CHECK(le16toh(fw.abi_major) == CHPP_ABI_VERSION_MAJOR,
          "%s: QUERY_FW ABI %u", f->name, le16toh(fw.abi_major));
    cmd_out(f, CHPP_CMD_QUERY_DEV_CAP, 0, &cap, sizeof(cap));
    flags = le32toh(cap.flags);
    max_qps = le32toh(cap.max_qps);
    max_cqs = le32toh(cap.max_cqs);
    max_mpts = le32toh(cap.max_mpts);
    CHECK((flags & CHPP_DEV_CAP_FLAG_VF) && le16toh(cap.func) == f->func &&
          max_qps > QPN && max_cqs >= 2 && max_mpts > MPT_FAULT &&
          le32toh(cap.max_pds) > PD &&
          le32toh(cap.max_mtt_entries) > MTT_FAULT &&
          le32toh(cap.num_msix) >= 1 && le32toh(cap.num_uar_pages) > UAR,
          "%s: QUERY_DEV_CAP flags 0x%x func %u qps %u cqs %u mpts %u",
          f->name, flags, le16toh(cap.func), max_qps, max_cqs, max_mpts);
    f->node = le16toh(cap.node_id);
    say("%s: VF %u of node %u: %u QPs, %u CQs, %u EQs, %u MPTs, %u MTTs, "
        "%u MSI-X", f->name, f->func, f->node, max_qps, max_cqs,
        le32toh(cap.max_eqs), max_mpts, le32toh(cap.max_mtt_entries),
        le32toh(cap.num_msix));
    cmd_ok(f, CHPP_CMD_INIT_HCA, 0, CHPP_ABI_VERSION_MAJOR, 0);

    cmd_in(f, CHPP_CMD_SW2HW_EQ, 0, &eq, sizeof(eq));
    cmd_ok(f, CHPP_CMD_MAP_EQ,
           CHPP_EVENT_MAPPABLE_MASK & ~(1ull << CHPP_EVENT_CMD), 0, 0);

    mtt[MTT_CQ0] = dma(f, OFF_CQ0) | CHPP_MTT_VALID;
    mtt[MTT_CQ1] = dma(f, OFF_CQ1) | CHPP_MTT_VALID;
    mtt[MTT_SQ] = dma(f, OFF_SQ) | CHPP_MTT_VALID;
    mtt[MTT_RQ] = dma(f, OFF_RQ) | CHPP_MTT_VALID;
    for (i = 0; i < DATA_LEN / 4096; i++) {
        mtt[MTT_DATA + i] = dma(f, OFF_DATA + i * 4096) | CHPP_MTT_VALID;
    }
    write_mtt(f, 0, mtt, MTT_FAULT);

    for (i = 0; i < 2; i++) {
        struct chpp_cq_context cq = {
            .mtt_base = htole32(i ? MTT_CQ1 : MTT_CQ0),
            .log_page_size = 12,
            .num_entries = htole32(CQ_ENTRIES),
            .eqn = htole32(0),
            .uar = htole16(UAR),
        };
        cmd_in(f, CHPP_CMD_SW2HW_CQ, i, &cq, sizeof(cq));
    }
    f->data_key = create_mr(f, MPT_DATA, f->iova + OFF_DATA, DATA_LEN,
                            MTT_DATA, CHPP_MPT_LOCAL_WRITE |
                            CHPP_MPT_REMOTE_READ | CHPP_MPT_REMOTE_WRITE);

    cmd_ok(f, CHPP_CMD_INIT_PORT, 0, 1, 0);
    cmd_out(f, CHPP_CMD_QUERY_PORT, 1, &port, sizeof(port));
    say("%s: port 1 state %u lid %u", f->name, port.state,
        le16toh(port.lid));
    f->sq = (struct chpp_uwq) {
        .ring = f->mem + OFF_SQ, .n = 1u << LOG_WQS, .shift = LOG_STRIDE,
    };
    f->rq = (struct chpp_uwq) {
        .ring = f->mem + OFF_RQ, .n = 1u << LOG_WQS, .shift = LOG_STRIDE,
    };
}

static void qp_init(struct fn *f)
{
    struct chpp_qp_modify m = {
        .attr_mask = htole32(CHPP_QP_ATTR_PKEY_INDEX | CHPP_QP_ATTR_PORT |
                             CHPP_QP_ATTR_ACCESS_FLAGS),
        .ctx = {
            .type = CHPP_QPT_RC, .port = 1, .pd = htole32(PD),
            .send_cqn = htole32(0), .recv_cqn = htole32(1),
            .sq_mtt_base = htole32(MTT_SQ), .rq_mtt_base = htole32(MTT_RQ),
            .log_sq_size = LOG_WQS, .log_sq_stride = LOG_STRIDE,
            .log_rq_size = LOG_WQS, .log_rq_stride = LOG_STRIDE,
            .sq_log_page_size = 12, .rq_log_page_size = 12,
            .uar = htole16(UAR),
            .access_flags = htole32(CHPP_ACCESS_LOCAL_WRITE |
                                    CHPP_ACCESS_REMOTE_WRITE |
                                    CHPP_ACCESS_REMOTE_READ),
            .magic = f->magic,
        },
    };

    cmd_in(f, CHPP_CMD_RST2INIT_QP, QPN, &m, sizeof(m));
}

static void qp_connect(struct fn *f, const struct fn *peer)
{
    struct chpp_qp_modify m = {
        .attr_mask = htole32(CHPP_QP_ATTR_AV | CHPP_QP_ATTR_PATH_MTU |
                             CHPP_QP_ATTR_DEST_QPN | CHPP_QP_ATTR_RQ_PSN |
                             CHPP_QP_ATTR_MAX_DEST_RD_ATOMIC |
                             CHPP_QP_ATTR_MIN_RNR_TIMER),
        .ctx = {
            .path_mtu = 3,  /* 1024: messages are segmented */
            .dest_node = htole32(peer->node), .dest_qpn = htole32(QPN),
            .dest_magic = peer->magic, .dest_vf = peer->func,
            .rq_psn = htole32(0x100), .sq_psn = htole32(0x100),
            .max_dest_rd_atomic = 4, .max_rd_atomic = 4,
            .min_rnr_timer = 1, .timeout = 14, .retry_cnt = 7,
            .rnr_retry = 7,
        },
    };

    cmd_in(f, CHPP_CMD_INIT2RTR_QP, QPN, &m, sizeof(m));
    m.attr_mask = htole32(CHPP_QP_ATTR_SQ_PSN | CHPP_QP_ATTR_TIMEOUT |
                          CHPP_QP_ATTR_RETRY_CNT | CHPP_QP_ATTR_RNR_RETRY |
                          CHPP_QP_ATTR_MAX_QP_RD_ATOMIC);
    cmd_in(f, CHPP_CMD_RTR2RTS_QP, QPN, &m, sizeof(m));
}

/* ---- work requests and completions ------------------------------------- */

/* One send WQE: ctrl, optional raddr, one data segment (or inline data). */
static void send_wqe(struct fn *f, uint8_t op, uint64_t wr_id,
                     uint64_t raddr, uint32_t rkey, uint64_t laddr,
                     uint32_t len, const void *inl)
{
    struct chpp_usge sg = {
        .addr = inl ? (uintptr_t)inl : laddr, .length = len,
        .lkey = f->data_key,
    };
    struct chpp_usend wr = {
        .opcode = op,
        .flags = CHPP_WQE_SIGNALED | (inl ? CHPP_WQE_INLINE : 0),
        .raddr = raddr, .rkey = rkey, .sg = &sg, .num_sge = 1,
    };

    CHECK(!chpp_write_send_wqe(&f->sq, CHPP_QPT_RC, 0, &wr, wr_id),
          "%s: send WQE of %u bytes does not fit", f->name, len);
    f->sq.head++;
    chpp_ring_sq(uar(f), QPN, f->sq.head);
}

static void post_recv(struct fn *f, uint64_t wr_id, uint64_t addr,
                      uint32_t len)
{
    struct chpp_usge sg = { .addr = addr, .length = len, .lkey = f->data_key };

    CHECK(!chpp_write_recv_wqe(&f->rq, wr_id, &sg, 1),
          "%s: receive WQE does not fit", f->name);
    f->rq.head++;
    chpp_ring_rq(uar(f), QPN, f->rq.head);
}

static void cq_db(struct fn *f, uint32_t cqn, uint32_t cmd_)
{
    chpp_ring_cq(uar(f), cqn, cmd_, f->cq_ci[cqn]);
}

static void poll_cq(struct fn *f, uint32_t cqn, struct chpp_ucqe *out)
{
    int64_t end = now_ms() + TIMEOUT_MS;
    uint32_t ci = f->cq_ci[cqn];
    const struct chpp_cqe *ring = (void *)(f->mem + (cqn ? OFF_CQ1 : OFF_CQ0));
    const struct chpp_cqe *e;

    while (!(e = chpp_cqe_at(ring, CQ_ENTRIES, ci))) {
        CHECK(now_ms() < end, "%s: no CQE on CQ %u (ci %u)", f->name, cqn, ci);
        usleep(200);
    }
    chpp_cqe_read(e, out);
    f->cq_ci[cqn]++;
    cq_db(f, cqn, CHPP_CQ_DB_SET_CI);
}

static void expect_cqe(struct fn *f, uint32_t cqn, uint8_t opcode,
                       uint64_t wr_id, uint32_t len, const char *what)
{
    struct chpp_ucqe c;

    poll_cq(f, cqn, &c);
    CHECK(c.status == CHPP_WC_SUCCESS && c.opcode == opcode &&
          c.wr_id == wr_id && (cqn == 0 || c.byte_len == len),
          "%s: %s CQE status %u vendor_err %u opcode %u wr_id %" PRIu64
          " len %u", f->name, what, c.status, c.vendor_err, c.opcode,
          c.wr_id, c.byte_len);
}

/* Next EQE of @f's EQ 0, or false if none is valid. */
static bool next_eqe(struct fn *f, struct chpp_eqe *out)
{
    /* written by the device: volatile reads */
    volatile struct chpp_eqe *e = (void *)(f->mem + OFF_EQ +
                                           (f->eq_ci % EQ_ENTRIES) *
                                           CHPP_EQE_SIZE);
    bool want = !((f->eq_ci / EQ_ENTRIES) & 1);

    if (!!(le32toh(e->owner) & CHPP_EQE_OWNER) != want) {
        return false;
    }
    __sync_synchronize();
    memcpy(out, (void *)e, sizeof(*out));
    f->eq_ci++;
    return true;
}

static void eq_arm(struct fn *f)
{
    wr32(f, CHPP_REG_EQ_DB(0), (f->eq_ci & CHPP_EQ_DB_CI_MASK) |
         CHPP_EQ_DB_ARM);
}

static uint8_t pattern(size_t i, uint8_t seed)
{
    return seed + i * 7 + (i >> 8);
}

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
    for (size_t i = 0; i < len; i++) {
        p[i] = pattern(i, seed);
    }
}

static void check(const char *what, const uint8_t *p, size_t len,
                  uint8_t seed)
{
    for (size_t i = 0; i < len; i++) {
        CHECK(p[i] == pattern(i, seed), "%s: byte %zu is 0x%02x, want 0x%02x",
              what, i, p[i], pattern(i, seed));
    }
}

static uint64_t phys_addr(void *va)
{
    uint64_t e = 0;
    int fd = open("/proc/self/pagemap", O_RDONLY);

    CHECK(fd >= 0, "open pagemap");
    CHECK(pread(fd, &e, 8, ((uintptr_t)va / 4096) * 8) == 8, "read pagemap");
    close(fd);
    CHECK((e >> 63) & 1 && (e & ((1ull << 55) - 1)),
          "pagemap: page not present or PFN hidden (need root)");
    return (e & ((1ull << 55) - 1)) * 4096;
}

/* Without VFIO: BARs from sysfs, guest-physical DMA addresses. */
static void raw_open(struct fn *f)
{
    char path[PATH_MAX];
    uint16_t command;
    int fd, i;

    for (i = 0; i < 2; i++) {
        int bar = i ? CHPP_BAR_UAR : CHPP_BAR_REGS;
        void *p;

        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource%d",
                 f->bdf, bar);
        fd = open(path, O_RDWR | O_SYNC);
        CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
        p = mmap(NULL, bar ? CHPP_UAR_PAGE_SIZE : CHPP_BAR0_SIZE,
                 PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        CHECK(p != MAP_FAILED, "mmap %s: %s", path, strerror(errno));
        close(fd);
        if (bar == CHPP_BAR_REGS) {
            f->bar0 = p;
        } else {
            f->bar2 = p;
        }
    }
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", f->bdf);
    fd = open(path, O_RDWR);
    CHECK(fd >= 0 && pread(fd, &command, 2, PCI_COMMAND) == 2, "read %s",
          path);
    command |= PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
    CHECK(pwrite(fd, &command, 2, PCI_COMMAND) == 2, "write %s", path);
    close(fd);

    f->mem = mmap(NULL, AREA_LEN, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE | MAP_LOCKED,
                  -1, 0);
    CHECK(f->mem != MAP_FAILED, "mmap DMA area: %s", strerror(errno));
    memset(f->mem, 0, AREA_LEN);
    for (i = 0; i < AREA_LEN / 4096; i++) {
        f->pa[i] = phys_addr(f->mem + i * 4096);
    }
    say("%s: %s without VFIO (BARs from sysfs, DMA to guest-physical pages)",
        f->name, f->bdf);
}

/* ---- the test ---------------------------------------------------------- */

int main(int argc, char **argv)
{
    struct fn a = { .name = "A", .iova = 0x100000000ull, .magic = 7 };
    struct fn b = { .name = "B", .iova = 0x200000000ull, .magic = 9 };
    uint8_t *adata, *bdata, *canary;
    struct chpp_eqe eqe;
    struct chpp_ucqe cqe;
    char line[512];
    uint64_t ev, canary_pa;
    uint32_t dma_err0;
    uint8_t inl[100];
    int64_t t0 = now_ms();
    struct pollfd pfd;
    bool got_comp;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && !strcmp(argv[1], "--raw")) {
        a.raw = b.raw = true;
        argv++;
        argc--;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: %s [--raw] BDF_A BDF_B (VFs bound to "
                "vfio-pci, or with --raw to no driver)\n", argv[0]);
        return 2;
    }
    a.bdf = argv[1];
    b.bdf = argv[2];

    if (a.raw) {
        raw_open(&a);
        raw_open(&b);
    } else {
        vfio_open(&a);
        vfio_open(&b);
        CHECK(a.group_id != b.group_id, "both VFs in IOMMU group %d",
              a.group_id);
    }
    bring_up(&a);
    bring_up(&b);
    CHECK(a.func != b.func && a.node == b.node, "functions %u/%u nodes %u/%u",
          a.func, b.func, a.node, b.node);
    qp_init(&a);
    qp_init(&b);
    qp_connect(&a, &b);
    qp_connect(&b, &a);
    say("QP %u of VF %u <-> QP %u of VF %u: RTS", QPN, a.func, QPN, b.func);
    adata = a.mem + OFF_DATA;
    bdata = b.mem + OFF_DATA;

    /* PUT: A's first 16 KiB into B's second 16 KiB. */
    fill(adata, 0x4000, 0x11);
    send_wqe(&a, CHPP_WQE_PUT, 1, b.iova + OFF_DATA + 0x4000, b.data_key,
             a.iova + OFF_DATA, 0x4000, NULL);
    expect_cqe(&a, 0, CHPP_CQE_OP_RDMA_WRITE, 1, 0, "PUT");
    check("PUT data at B", bdata + 0x4000, 0x4000, 0x11);
    say("PUT 16384 bytes A -> B: verified");

    /* GET: B's third 16 KiB into A's second 16 KiB. */
    fill(bdata + 0x8000, 0x2000, 0x22);
    send_wqe(&a, CHPP_WQE_GET, 2, b.iova + OFF_DATA + 0x8000, b.data_key,
             a.iova + OFF_DATA + 0x4000, 0x2000, NULL);
    expect_cqe(&a, 0, CHPP_CQE_OP_RDMA_READ, 2, 0, "GET");
    check("GET data at A", adata + 0x4000, 0x2000, 0x22);
    say("GET 8192 bytes B -> A: verified");

    /*
     * NAP to B, whose receive CQ is armed: its completion event must come
     * out as MSI-X vector 0, through VFIO's eventfd. Drain the EQ (INIT_PORT
     * posted a port event) and re-arm it first.
     */
    if (!b.raw) {
        vfio_msix(&b);
    }
    while (next_eqe(&b, &eqe)) {
        ;
    }
    eq_arm(&b);
    while (!b.raw && read(b.irqfd, &ev, sizeof(ev)) == sizeof(ev)) {
        ;
    }
    post_recv(&b, 10, b.iova + OFF_DATA + 0xc000, 2048);
    post_recv(&b, 11, b.iova + OFF_DATA + 0xc800, 2048);
    cq_db(&b, 1, CHPP_CQ_DB_ARM_NEXT);
    fill(adata + 0xc000, 1500, 0x33);
    send_wqe(&a, CHPP_WQE_NAP, 3, 0, 0, a.iova + OFF_DATA + 0xc000, 1500,
             NULL);
    expect_cqe(&a, 0, CHPP_CQE_OP_SEND, 3, 0, "NAP");
    poll_cq(&b, 1, &cqe);
    CHECK(cqe.status == CHPP_WC_SUCCESS && cqe.opcode == CHPP_CQE_OP_RECV &&
          cqe.wr_id == 10 && cqe.byte_len == 1500 && cqe.src_vf == a.func &&
          cqe.src_node == a.node && cqe.src_qp == QPN,
          "B: NAP receive CQE status %u opcode %u wr_id %" PRIu64
          " len %u src_vf %u", cqe.status, cqe.opcode, cqe.wr_id,
          cqe.byte_len, cqe.src_vf);
    check("NAP data at B", bdata + 0xc000, 1500, 0x33);
    say("NAP-indirect 1500 bytes A -> B: verified (receive CQE src_vf %u)",
        cqe.src_vf);

    if (b.raw) {
        goto nap_inline;
    }
    pfd = (struct pollfd) { .fd = b.irqfd, .events = POLLIN };
    CHECK(poll(&pfd, 1, 10000) == 1, "B: no MSI-X interrupt within 10 s");
    CHECK(read(b.irqfd, &ev, sizeof(ev)) == sizeof(ev) && ev >= 1,
          "B: eventfd read");
    got_comp = false;
    while (next_eqe(&b, &eqe)) {
        got_comp |= eqe.type == CHPP_EVENT_COMP &&
                    le32toh(eqe.event.cq.cqn) == 1;
    }
    CHECK(got_comp, "B: interrupt without a COMP EQE for CQ 1");
    eq_arm(&b);
    CHECK(msix_remapped(&b, line, sizeof(line)),
          "B: vfio MSI-X vector not remapped: %s", line);
    say("MSI-X vector 0 of B fired (%" PRIu64 " interrupt(s)), EQE COMP "
        "CQ 1; /proc/interrupts: %s", ev, line);

nap_inline:
    /* NAP-immediate: the data travels inside the WQE. */
    fill(inl, sizeof(inl), 0x44);
    send_wqe(&a, CHPP_WQE_NAP, 4, 0, 0, 0, sizeof(inl), inl);
    expect_cqe(&a, 0, CHPP_CQE_OP_SEND, 4, 0, "NAP inline");
    expect_cqe(&b, 1, CHPP_CQE_OP_RECV, 11, sizeof(inl), "NAP inline recv");
    check("NAP inline data at B", bdata + 0xc800, sizeof(inl), 0x44);
    say("NAP-immediate %zu bytes A -> B: verified", sizeof(inl));
    if (a.raw) {
        wr32(&a, CHPP_REG_RESET, CHPP_RESET_MAGIC);
        wr32(&b, CHPP_REG_RESET, CHPP_RESET_MAGIC);
        say("RESULT PASS PUT/GET/NAP between VF %u and VF %u without VFIO "
            "(%.1f s)", a.func, b.func, (now_ms() - t0) / 1000.0);
        return 0;
    }

    /*
     * IOMMU fault: B's region MPT_FAULT names, as its one page, the
     * guest-physical address of a canary page that B's IOMMU domain does
     * not map. Without an IOMMU the PUT would land in the canary.
     */
    canary = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE | MAP_LOCKED,
                  -1, 0);
    CHECK(canary != MAP_FAILED, "mmap canary");
    fill(canary, 4096, 0x55);
    canary_pa = phys_addr(canary);
    {
        uint64_t e = canary_pa | CHPP_MTT_VALID;
        uint32_t key;

        write_mtt(&b, MTT_FAULT, &e, 1);
        key = create_mr(&b, MPT_FAULT, canary_pa, 4096, MTT_FAULT,
                        CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_WRITE);
        dma_err0 = counter(&b, CHPP_CNT_DMA_ERRORS);
        fill(adata, 4096, 0x66);
        send_wqe(&a, CHPP_WQE_PUT, 5, canary_pa, key, a.iova + OFF_DATA,
                 4096, NULL);
    }
    say("fault test: PUT into B's region at unmapped IOVA 0x%" PRIx64
        " (= the canary's guest-physical address)", canary_pa);
    poll_cq(&a, 0, &cqe);
    CHECK(cqe.status == CHPP_WC_REM_OP_ERR && cqe.wr_id == 5,
          "A: PUT into the unmapped IOVA completed with status %u "
          "vendor_err %u wr_id %" PRIu64 " (want REM_OP_ERR)", cqe.status,
          cqe.vendor_err, cqe.wr_id);
    CHECK(counter(&b, CHPP_CNT_DMA_ERRORS) > dma_err0,
          "B: DMA error counter did not move");
    got_comp = false;
    {
        int64_t end = now_ms() + TIMEOUT_MS;

        while (!got_comp && now_ms() < end) {
            while (next_eqe(&b, &eqe)) {
                got_comp |= eqe.type == CHPP_EVENT_WQ_ACCESS_ERROR &&
                            le32toh(eqe.event.qp.qpn) == QPN;
            }
            usleep(1000);
        }
    }
    CHECK(got_comp, "B: no WQ_ACCESS_ERROR event for QP %u", QPN);
    check("canary after the faulting PUT", canary, 4096, 0x55);
    check("B's data region after the faulting PUT", bdata + 0x4000, 0x4000,
          0x11);
    say("fault test: A got REM_OP_ERR, B got WQ_ACCESS_ERROR, B's DMA "
        "errors %u -> %u, canary intact", dma_err0,
        counter(&b, CHPP_CNT_DMA_ERRORS));
    say("fault-addr 0x%" PRIx64, canary_pa);

    wr32(&a, CHPP_REG_RESET, CHPP_RESET_MAGIC);
    wr32(&b, CHPP_REG_RESET, CHPP_RESET_MAGIC);
    say("RESULT PASS PUT/GET/NAP between VF %u and VF %u via VFIO, MSI-X "
        "through IR, IOMMU fault contained (%.1f s)", a.func, b.func,
        (now_ms() - t0) / 1000.0);
    return 0;
}
