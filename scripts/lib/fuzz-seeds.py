#!/usr/bin/env python3
"""Turn qtest traffic into seeds for QEMU's generic fuzzer (generic-fuzz-chpp-hca).

    scripts/lib/fuzz-seeds.py OUTDIR LOG...
    scripts/lib/fuzz-seeds.py --link OUTDIR
    scripts/lib/fuzz-seeds.py --link-eth OUTDIR

With --link, write a few seeds for the chpp-hca-link target instead
(tests/qtest/fuzz/chpp_hca_link_fuzz.c): per wire opcode, one structured
packet to each QP, a clock step and a posted work request. --link-eth
writes those and, for chpp-hca-link-eth, one seed per Ethernet record type
(HELLO with each flag, CREDIT, PROBE, REFUSE, a FRAME out of sequence) and
whole frames with a foreign EtherType and a source MAC that is no node's.

Each LOG is the server-side qtest log of a chpp qtest run (QTEST_LOG=1, the
"[R +t] cmd" lines QEMU writes). Every QEMU started by the test (an "OPENED"
line) becomes one seed file in OUTDIR, in the generic fuzzer's input format
(tests/qtest/fuzz/generic_fuzz.c): operations separated by "FUZZ", each an
opcode byte and a little-endian payload.

  register writes to BAR0/BAR2  -> OP_WRITE  (region index, offset, value)
  config writes to the device   -> OP_PCI_WRITE (BAR registers excepted: the
                                   fuzzer maps the BARs itself)
  config writes through q35's   -> OP_WRITE to the MMCONFIG region, same
  MMCONFIG (ECAM) window, and      offset (bus, devfn, register): the fuzzer
  legacy config writes to VFs      maps the window itself (at FUZZ_MMCFG)
  guest memory writes           -> OP_ADD_DMA_PATTERN, emitted (after an
                                   OP_CLEAR_DMA_PATTERNS) before the next
                                   register write, newest first: the fuzzer
                                   hands patterns out in order, one per DMA
                                   read, and the device's first read after a
                                   doorbell or HCR write is of what the test
                                   wrote last (the mailbox, the WQE). Writes
                                   to adjacent memory are merged first (the
                                   device reads a mailbox in one go). Patterns
                                   are cut at 512 bytes (they repeat to fill
                                   longer reads); memsets (zeroing, poison)
                                   are dropped.
  clock_step                    -> OP_CLOCK_STEP
Reads are dropped. The fuzzer's MMIO region indices follow the flat view of
the fuzzable regions, lowest address first. Without VFs: 0 registers (BAR0
0x0-0x1fff), 1 MSI-X table, 2 MSI-X PBA, 3 UAR pages (BAR2; the fuzzer maps
BAR0 below BAR2 from 0xe0000000, as libqos does in the qtests), 4 the
MMCONFIG window. Enabled VFs whose Memory Space bit is on add their own
four regions at the addresses the test gave their BARs (the SR-IOV test
puts them below the PF's), so the indices are worked out from the state the
log has built up at each access.
"""
import base64
import hashlib
import os
import re
import struct
import sys

from chpp_abi import abi

SEP = b"FUZZ"
OP_WRITE, OP_PCI_WRITE, OP_ADD_DMA_PATTERN = 3, 5, 7
OP_CLEAR_DMA_PATTERNS, OP_CLOCK_STEP = 8, 9
SIZES = {1: 0, 2: 1, 4: 2, 8: 3}
# The device's own constants come from its ABI headers (chpp_abi.py).
A = abi("CHPP_BAR0_SIZE", "CHPP_MSIX_TABLE_OFFSET", "CHPP_MSIX_PBA_OFFSET",
        "CHPP_MAX_UAR_PAGES * CHPP_UAR_PAGE_SIZE",
        "CHPP_VF_UAR_PAGES * CHPP_UAR_PAGE_SIZE",
        "CHPP_PCI_EXT_CAP_SRIOV", "CHPP_PCI_CAP_EXP",
        "CHPP_LINK_MAGIC", "CHPP_ETH_TYPE", "sizeof(struct chpp_link_rec)",
        "CHPP_LINK_HELLO", "CHPP_LINK_FRAME", "CHPP_LINK_CREDIT",
        "CHPP_LINK_REFUSE", "CHPP_LINK_PROBE",
        "CHPP_LINK_HELLO_F_NEW", "CHPP_LINK_HELLO_F_ACK",
        "CHPP_LINK_CAP_GET_VC",
        "CHPP_LINK_VERSION_MAJOR", "CHPP_LINK_VERSION_MINOR",
        "sizeof(struct chpp_link_hello)",
        "offsetof(struct chpp_link_hello, node_id)",
        "offsetof(struct chpp_link_hello, data_vcs)",
        "offsetof(struct chpp_link_hello, flags)",
        "offsetof(struct chpp_link_hello, caps)",
        "offsetof(struct chpp_link_hello, credits)",
        "offsetof(struct chpp_link_hello, epoch)",
        "offsetof(struct chpp_link_hello, peer_epoch)")
BAR0_SIZE = A["CHPP_BAR0_SIZE"]
MSIX_TABLE = A["CHPP_MSIX_TABLE_OFFSET"]
MSIX_PBA = A["CHPP_MSIX_PBA_OFFSET"]
BAR2_MAX = A["CHPP_MAX_UAR_PAGES * CHPP_UAR_PAGE_SIZE"]
PF_DEVFN = 0x20             # 04.0, in the qtests and in the fuzzer's config
FUZZ_BAR0, FUZZ_BAR2 = 0xe0000000, 0xe0004000   # where the fuzzer maps them
FUZZ_MMCFG = 0x800000000    # MMCFG_FUZZ_BASE of the generic_fuzz.c hook
MMCFG_SIZE = 1 << 28
MCH_PCIEXBAR = 0x60
SRIOV = A["CHPP_PCI_EXT_CAP_SRIOV"]
# PCI's own (pci_regs.h): SR-IOV Control, NumVFs, VF BAR0; VF Enable; the
# Express capability's Device Control and its Function Level Reset bit
SRIOV_CTRL, SRIOV_NUM_VF, SRIOV_BAR = 0x08, 0x10, 0x24
VFE = 0x1
EXP_DEVCTL, BCR_FLR = A["CHPP_PCI_CAP_EXP"] + 0x08, 0x8000
VF_UAR_SIZE = A["CHPP_VF_UAR_PAGES * CHPP_UAR_PAGE_SIZE"]
MAX_PATTERN = 512
MAX_SEED = 16384


class Seed:
    def __init__(self):
        self.ops = []
        self.cf8 = 0
        self.bars = {}          # (bdf, bar reg) -> value
        self.pending = []       # guest memory written since the last MMIO op
        self.dev_writes = 0
        self.pciexbar = 0       # the test's MCH PCIEXBAR (its ECAM base)
        self.pf_ext = {}        # PF extended config: offset -> value written
        self.vf_cmd = {}        # VF devfn -> its command register

    def ecam_base(self):
        return self.pciexbar & ~0xfffffff if self.pciexbar & 1 else None

    def sriov(self, off, size=4):
        v = 0
        for i in range(size):
            v |= self.pf_ext.get(SRIOV + off + i, 0) << (8 * i)
        return v

    def vf_regions(self):
        """(address, kind, vf) of the regions of enabled, mapped VFs."""
        if not self.sriov(SRIOV_CTRL, 2) & VFE:
            return []
        b0 = (self.sriov(SRIOV_BAR + 4) << 32 | self.sriov(SRIOV_BAR)) & ~0xf
        b2 = (self.sriov(SRIOV_BAR + 12) << 32 | self.sriov(SRIOV_BAR + 8)) & ~0xf
        out = []
        for vf in range(1, min(self.sriov(SRIOV_NUM_VF, 2), 7) + 1):
            if not self.vf_cmd.get(PF_DEVFN + vf, 0) & 2:
                continue
            a0 = b0 + (vf - 1) * BAR0_SIZE
            if b0:
                out += [(a0, "regs", vf), (a0 + MSIX_TABLE, "table", vf),
                        (a0 + MSIX_PBA, "pba", vf)]
            if b2:
                out.append((b2 + (vf - 1) * VF_UAR_SIZE, "uar", vf))
        return out

    def index(self, kind, vf=0):
        """The fuzzer's region index of a region: its rank by address."""
        regs = [(FUZZ_BAR0, "regs", 0), (FUZZ_BAR0 + MSIX_TABLE, "table", 0),
                (FUZZ_BAR0 + MSIX_PBA, "pba", 0), (FUZZ_BAR2, "uar", 0),
                (FUZZ_MMCFG, "mmcfg", 0)] + self.vf_regions()
        regs.sort()
        return [r[1:] for r in regs].index((kind, vf))

    def ecam_write(self, off, data):
        """A config write at MMCONFIG offset @off (bus, devfn, register)."""
        devfn, reg = (off >> 12) & 0xff, off & 0xfff
        # the region index as the fuzzer sees it: before the write's effect
        self.flush_dma()
        self.mmio_op(self.index("mmcfg"), off, data)
        if off >> 20 == 0 and devfn == PF_DEVFN and reg >= 0x100:
            for i, b in enumerate(data):
                self.pf_ext[reg + i] = b
            if SRIOV + SRIOV_CTRL <= reg < SRIOV + SRIOV_CTRL + 2 and \
               not self.sriov(SRIOV_CTRL, 2) & VFE:
                self.vf_cmd = {}        # VFs gone, their config with them
        elif off >> 20 == 0 and PF_DEVFN < devfn < PF_DEVFN + 8:
            if reg <= 4 < reg + len(data):
                self.vf_cmd[devfn] = data[4 - reg]
            # a function-level reset clears the VF's command register
            if reg <= EXP_DEVCTL + 1 < reg + len(data) and \
               data[EXP_DEVCTL + 1 - reg] & (BCR_FLR >> 8):
                self.vf_cmd[devfn] = 0

    def op(self, code, payload=b""):
        self.ops.append(bytes([code]) + payload)

    def bar_base(self, reg):
        lo = self.bars.get((0x20, reg), 0)
        hi = self.bars.get((0x20, reg + 4), 0)
        return (hi << 32 | lo) & ~0xf

    def region(self, addr):
        """(fuzzer region index, offset) of a test address, or None."""
        b0, b2 = self.bar_base(0x10), self.bar_base(0x18)
        bars = [(b0, BAR0_SIZE, 0, 0), (b2, BAR2_MAX, 0, 2)]
        for a, kind, vf in self.vf_regions():
            if kind == "regs":
                bars.append((a, BAR0_SIZE, vf, 0))
            elif kind == "uar":
                bars.append((a, VF_UAR_SIZE, vf, 2))
        for base, size, vf, bar in bars:
            if not base or not base <= addr < base + size:
                continue
            off = addr - base
            if bar == 2:
                return self.index("uar", vf), off
            if off < MSIX_TABLE:
                return self.index("regs", vf), off
            if off < MSIX_PBA:
                return self.index("table", vf), off - MSIX_TABLE
            return self.index("pba", vf), off - MSIX_PBA
        return None

    def flush_dma(self):
        """Writes to adjacent or overlapping guest memory are merged first
        (a mailbox written as header + entries is read by the device in
        one go), later writes on top; blocks go newest first."""
        if not self.pending:
            return
        blocks = []     # [start, bytearray, newest write index]
        for i, (addr, data) in sorted(enumerate(self.pending),
                                      key=lambda x: x[1][0]):
            if blocks and addr <= blocks[-1][0] + len(blocks[-1][1]):
                b = blocks[-1]
                off = addr - b[0]
                need = off + len(data) - len(b[1])
                if need > 0:
                    b[1].extend(bytes(need))
                b[1][off:off + len(data)] = data
                b[2] = max(b[2], i)
            else:
                blocks.append([addr, bytearray(data), i])
        # overlapping writes: replay in time order onto the merged blocks
        for addr, data in self.pending:
            for b in blocks:
                if b[0] <= addr < b[0] + len(b[1]):
                    off = addr - b[0]
                    b[1][off:off + len(data)] = data
        self.op(OP_CLEAR_DMA_PATTERNS)
        for b in sorted(blocks, key=lambda b: -b[2]):
            self.op(OP_ADD_DMA_PATTERN, b"\0\0" + bytes(b[1][:MAX_PATTERN]))
        self.pending = []

    def mmio_op(self, index, off, data):
        size = len(data) if len(data) in SIZES else 4
        value = int.from_bytes(data[:size].ljust(size, b"\0"), "little")
        self.op(OP_WRITE, struct.pack("<BBxxIQ", SIZES[size], index, off, value))
        self.dev_writes += 1

    def mem_write(self, addr, data):
        ecam = self.ecam_base()
        if ecam is not None and ecam <= addr < ecam + MMCFG_SIZE:
            self.ecam_write(addr - ecam, data)
            return
        r = self.region(addr)
        if r is None:
            if data:
                self.pending.append((addr, data))
            return
        self.flush_dma()
        self.mmio_op(r[0], r[1], data)

    def out(self, port, size, value):
        if port == 0xcf8 and size == 4:
            self.cf8 = value
            return
        if not 0xcfc <= port < 0xd00 or not self.cf8 & 0x80000000:
            return
        bdf = (self.cf8 >> 8) & 0xffff
        reg = (self.cf8 & 0xfc) + (port - 0xcfc)
        if bdf == 0 and MCH_PCIEXBAR <= reg < MCH_PCIEXBAR + 8 and size == 4:
            shift = 32 if reg >= MCH_PCIEXBAR + 4 else 0
            self.pciexbar &= ~(0xffffffff << shift)
            self.pciexbar |= value << shift
            return
        if PF_DEVFN < bdf < PF_DEVFN + 8:
            # a VF: not a device of the fuzzer's, reached through MMCONFIG
            self.ecam_write(bdf << 12 | reg, value.to_bytes(size, "little"))
            return
        if bdf != PF_DEVFN:
            return
        if 0x10 <= reg < 0x28 and size == 4:
            if value != 0xffffffff:
                self.bars[(bdf, reg)] = value
            return
        self.flush_dma()
        self.op(OP_PCI_WRITE, struct.pack("<BBBxI", SIZES[size], 0, reg, value))
        self.dev_writes += 1

    def data(self):
        # The fuzz runs use -max_len=16384: keep the ops that fit.
        out, size = [], 0
        for op in self.ops:
            size += len(op) + len(SEP)
            if size > MAX_SEED:
                break
            out.append(op)
        return SEP.join(out)


LINE = re.compile(r"^\[R \+[0-9.]+\] (\S+)(.*)$")


def parse(path):
    seeds, cur = [], None
    with open(path, errors="replace") as f:
        for line in f:
            if "OPENED" in line and line.startswith("[I"):
                cur = Seed()
                seeds.append(cur)
                continue
            m = LINE.match(line)
            if not m or cur is None:
                continue
            cmd, args = m.group(1), m.group(2).split()
            try:
                if cmd in ("outb", "outw", "outl"):
                    size = {"outb": 1, "outw": 2, "outl": 4}[cmd]
                    cur.out(int(args[0], 0), size, int(args[1], 0))
                elif cmd in ("writeb", "writew", "writel", "writeq"):
                    size = {"writeb": 1, "writew": 2, "writel": 4, "writeq": 8}[cmd]
                    cur.mem_write(int(args[0], 0),
                                  int(args[1], 0).to_bytes(size, "little"))
                elif cmd == "write":
                    hexdata = args[2][2:]
                    cur.mem_write(int(args[0], 0), bytes.fromhex(hexdata))
                elif cmd == "b64write":
                    cur.mem_write(int(args[0], 0), base64.b64decode(args[2]))
                elif cmd == "clock_step":
                    if not cur.ops or cur.ops[-1] != bytes([OP_CLOCK_STEP]):
                        cur.op(OP_CLOCK_STEP)
            except (IndexError, ValueError):
                continue
    return [s for s in seeds if s.dev_writes]


def link_seeds(out):
    os.makedirs(out, exist_ok=True)
    peer = [1, 0, 2, 3]
    n = 0
    for op in range(12):
        recs = []
        for qp in range(4):
            f = bytearray(48)
            f[0] = op
            f[1] = 0x07                     # FIRST | LAST | ACK_REQ
            f[4], f[5] = qp, peer[qp]
            f[25] = 0x08                    # the QPs' qkey
            struct.pack_into("<H", f, 38, 64)   # msg_len and payload length
            recs.append(b"\x01" + bytes(f) + bytes(range(64)))
        recs.append(b"\x02")
        recs.append(b"\x03" + bytes([op % 4, op % 8]) + struct.pack("<H", 64))
        recs.append(b"\x02")
        with open(os.path.join(out, f"link-op{op}"), "wb") as fh:
            fh.write(b"".join(recs))
        n += 1
    print(f"{n} seeds in {out}")


ETH_TYPE = A["CHPP_ETH_TYPE"]
HELLO, FRAME, CREDIT, REFUSE, PROBE = (
    A["CHPP_LINK_" + t] for t in ("HELLO", "FRAME", "CREDIT", "REFUSE", "PROBE"))
F_NEW, F_ACK = A["CHPP_LINK_HELLO_F_NEW"], A["CHPP_LINK_HELLO_F_ACK"]


def link_rec(rtype, vc, seq, body):
    """struct chpp_link_rec and what follows it."""
    rec = struct.pack("<IBBHI", A["CHPP_LINK_MAGIC"], rtype, vc, seq, len(body))
    assert len(rec) == A["sizeof(struct chpp_link_rec)"]
    return rec + body


def hello(flags, epoch, peer_epoch, node=1):
    """struct chpp_link_hello: one data VC, the GET VC, 256 credits each."""
    h = bytearray(A["sizeof(struct chpp_link_hello)"])

    def put(field, fmt, *v):
        struct.pack_into(fmt, h, A[f"offsetof(struct chpp_link_hello, {field})"],
                         *v)
    struct.pack_into("<HH", h, 0, A["CHPP_LINK_VERSION_MAJOR"],
                     A["CHPP_LINK_VERSION_MINOR"])
    put("node_id", "<H", node)
    put("data_vcs", "<B", 1)
    put("flags", "<B", flags)
    put("caps", "<I", A["CHPP_LINK_CAP_GET_VC"])
    put("credits", "<II", 256, 256)
    put("epoch", "<I", epoch)
    put("peer_epoch", "<I", peer_epoch)
    return bytes(h)


def link_eth_seeds(out):
    link_seeds(out)
    recs = {
        "hello-bcast": link_rec(HELLO, 0, 0, hello(0, 0x5eed, 0)),
        "hello-new": link_rec(HELLO, 0, 0, hello(F_NEW, 0x5eed, 0)),
        "hello-ack": link_rec(HELLO, 0, 0, hello(F_ACK, 0x5eed, 0)),
        "hello-new-epoch": link_rec(HELLO, 0, 0, hello(F_NEW, 0x1234, 0)),
        "hello-other-node": link_rec(HELLO, 0, 0,
                                     hello(0, 0x5eed, 0, node=7)),
        "credit": link_rec(CREDIT, 0, 0, struct.pack("<I", 64)),
        "credit-get": link_rec(CREDIT, 1, 0, struct.pack("<I", 4096)),
        "probe": link_rec(PROBE, 0, 9, b""),
        "refuse": link_rec(REFUSE, 0, 0, struct.pack("<I", 1) + b"no thanks"),
        "frame-late": link_rec(FRAME, 0, 0xFFFF, bytes(64)),
        "frame-gap": link_rec(FRAME, 1, 300, bytes(64)),
    }
    for name, rec in recs.items():
        with open(os.path.join(out, f"eth-{name}"), "wb") as fh:
            fh.write(b"\x00" + struct.pack("<H", len(rec)) + rec + b"\x02")
    # Whole frames (control byte bit 3): not ours, and no node's source.
    dst = bytes([0x02, 0x63, 0x68, 0, 0, 0])
    frames = {
        "raw-ipv4": dst + dst + struct.pack(">H", 0x0800) + bytes(46),
        "raw-bad-src": dst + b"\x52\x54\x00\x00\x00\x01" +
                       struct.pack(">H", ETH_TYPE) + link_rec(CREDIT, 0, 0,
                                                              bytes(4)),
    }
    for name, f in frames.items():
        with open(os.path.join(out, f"eth-{name}"), "wb") as fh:
            fh.write(b"\x08" + struct.pack("<H", len(f)) + f)
    print(f"{len(recs) + len(frames)} Ethernet seeds in {out}")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--link":
        link_seeds(sys.argv[2])
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--link-eth":
        link_eth_seeds(sys.argv[2])
        return
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for log in sys.argv[2:]:
        for s in parse(log):
            data = s.data()
            name = hashlib.sha1(data).hexdigest()
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
            n += 1
    print(f"{n} seeds in {out}")


if __name__ == "__main__":
    main()
