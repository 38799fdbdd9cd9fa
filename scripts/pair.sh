#!/usr/bin/env bash
# Boot two Linux guests, each with a chpp-hca (node ids 1 and 2) joined by a
# link (unix socket chardev: server on node 1, reconnect=1 on node 2) and a
# control network (virtio-net over a unix dgram netdev, 10.0.2.1 and
# 10.0.2.2). Each guest loads the guest driver (guest-driver/chpp_hca.ko),
# checks that the ib device's port is ACTIVE, unloads and reloads it, then
# the kernel verbs test client (chpp_test.ko) moves data with SEND, RDMA
# WRITE, RDMA READ, atomics and WRITE_WITH_IMM in both directions and
# verifies the bytes.
#
#   scripts/pair.sh [options] [-- extra QEMU args for both guests]
#
#   --single          one guest, no link: loopback traffic (QP to itself)
#   --loops K         load/unload the driver K times first (default 2)
#   --shell N         keep guest N interactive on this terminal after the test
#                     (the other guest's console goes to its log only)
#   --notest          only load the driver (with --shell: a guest to play in)
#   --trace           trace the devices: build/guest/pair-nodeN.trace, each
#                     line with the thread id and the time in microseconds
#   --trace-events P  with --trace: only the events matching P (a -trace
#                     pattern, e.g. 'chpp_hca_link_*'; default chpp_hca_*)
#   --gdb N           guest N starts stopped and waits for gdb on tcp::1234
#                     (kernel debugging; scripts/gdb-guest.sh does it all)
#   --gdb-addr A      where --gdb listens: a QEMU -gdb address
#                     (default tcp::1234; e.g. unix:/tmp/g.sock,server=on,wait=off)
#   --timeout SEC     kill the guests after SEC seconds (default 300)
#   --cut             pair: add the link-cut stage: once both guests stream
#                     RDMA writes, cut the link and drop every data frame
#                     until both streams failed (docs/guest-driver.md)
#   --device-args S   extra chpp-hca properties for every guest (e.g. num-qps=16)
#   --timing          every chpp-hca in timing mode: work takes the FPGA
#                     prototype's virtual time (docs/timing-model.md)
#   --icount SHIFT    the guests' clock is QEMU's virtual clock: -icount
#                     shift=SHIFT,sleep=off (2^SHIFT ns per instruction), vCPUs
#                     taking turns of at most CHPP_ICOUNT_SLICE_NS (default
#                     200) ns; with --timing a guest measures the model
#   --smp N           N vCPUs per guest (default 1)
#   --kargs S         extra guest kernel arguments (e.g. "chpp.fetch=20")
#   --qemu PATH       QEMU binary (default build/qemu/qemu-system-x86_64)
#   --kernel K        guest kernel: 6.12, 6.1 (the newest installed image of
#                     the series), a release or an image path (default: the
#                     default guest kernel, docs/guest-driver.md); the driver
#                     is built for it and the initramfs gets its modules
#   --share           the developer's loop (docs/guest-driver.md): the
#                     repository at /host in the guests (virtio-9p, read-only),
#                     chpp_hca.ko loaded from /host/build/guest/kmod-KVER/;
#                     the guests stay up (implies --notest --timeout 0) and
#                     reload the driver whenever it is rebuilt on the host
#                     (make -C guest-driver [KVER=...])
#   --iommu           q35 with an emulated Intel IOMMU (interrupt remapping,
#                     caching mode), the guest kernel with intel_iommu=on
#                     iommu=pt, and the vfio modules in the initramfs
#   --vfio            one guest with --iommu: enable VFs with sriov_numvfs
#                     (bound by chpp_hca, then by vfio-pci) and run the VFIO
#                     test program tests/vfio/chpp-vfio-test.c on two VFs
#                     (docs/vfio-passthrough.md)
#   --mpi             pair: only the MPI stage (scripts/guest/mpi-init.sh,
#                     the same as --kargs chpp.only=mpi): Debian's Open MPI
#                     and chpp-mpi-test (guest-driver/mpi/) in the initramfs,
#                     MPI and UCX between the guests on chpp-hca, then on
#                     soft-RoCE (docs/middleware.md; use --timeout 900)
#   --fabric          N guests (--nodes, default 4) on the fabric instead of
#                     the pair: each chpp-hca (node ids 1..N) a NIC on one
#                     shared Ethernet segment (netdev=, a QEMU socket
#                     netdev on a multicast group of the loopback), the
#                     control network (10.0.2.N) on another; then --stage
#                     (scripts/guest/fabric-init.sh; docs/fabric-guests.md)
#   --nodes N         with --fabric: N guests (2 to 15)
#   --stage S         with --fabric: verbs (default): all-to-all kernel
#                     verbs, an RC QP from every guest to every other one,
#                     bytes checked; mpi: Open MPI (pml ucx) with one rank
#                     per guest, a checked allreduce and all-to-all
#                     (use --timeout 900)
#   --link L          with --fabric: netdev (default) or chardev (2 guests
#                     only: the point-to-point link, for comparison)
#   --nested          as --vfio, but the two VFs go to a nested guest: the
#                     first guest runs this QEMU (with its libraries and
#                     firmware) under TCG with -device vfio-pci for each VF,
#                     booting the same kernel and chpp_hca (scripts/nested.sh;
#                     slow: tens of minutes)
#
# Consoles: build/guest/pair-node1.log, pair-node2.log (single-node1.log,
# fabric-nodeN.log). Monitors (HMP, e.g. for fault
# injection with qom-set /machine/peripheral/hca0 fault-cut true):
# <run dir>/mon1.sock, mon2.sock (printed at start). Exit status 0 only when
# every guest reports "chpp-guest: RESULT PASS".
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$CHPP_ROOT/scripts/lib/initramfs.sh"

SINGLE=0 CUT=0 LOOPS=2 SHELL_NODE=0 NOTEST=0 TRACE=0 TRACE_EVENTS='chpp_hca_*' GDB_NODE=0 GDB_ADDR=tcp::1234 TIMEOUT=300
IOMMU=0 VFIO=0 NESTED=0 TIMING=0 ICOUNT="" SMP=1 MPI=0
FABRIC=0 NNODES=4 STAGE=verbs LINK=netdev
QEMU="$CHPP_QEMU_BIN" KARGS="" DEVARGS="" KSPEC="" SHARE=0
EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        --single) SINGLE=1 ;;
        --cut) CUT=1 ;;
        --iommu) IOMMU=1 ;;
        --vfio) VFIO=1; IOMMU=1; SINGLE=1 ;;
        --nested) NESTED=1; VFIO=1; IOMMU=1; SINGLE=1 ;;
        --mpi) MPI=1 ;;
        --fabric) FABRIC=1 ;;
        --nodes) NNODES=$2; shift ;;
        --stage) STAGE=$2; shift ;;
        --link) LINK=$2; shift ;;
        --loops) LOOPS=$2; shift ;;
        --shell) SHELL_NODE=$2; shift ;;
        --notest) NOTEST=1 ;;
        --trace) TRACE=1 ;;
        --trace-events) TRACE=1 TRACE_EVENTS=$2; shift ;;
        --gdb) GDB_NODE=$2; shift ;;
        --gdb-addr) GDB_ADDR=$2; shift ;;
        --timeout) TIMEOUT=$2; shift ;;
        --qemu) QEMU=$2; shift ;;
        --kernel) KSPEC=$2; shift ;;
        --share) SHARE=1; NOTEST=1; TIMEOUT=0 ;;
        --kargs) KARGS=$2; shift ;;
        --device-args) DEVARGS="$DEVARGS,$2"; shift ;;
        --timing) TIMING=1 ;;
        --icount) ICOUNT=$2; shift ;;
        --smp) SMP=$2; shift ;;
        --) shift; EXTRA=("$@"); break ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) chpp_die "unknown option '$1' (see --help)" ;;
    esac
    shift
done

[ "$TIMING" = 1 ] && DEVARGS=",timing=on$DEVARGS"
# -icount: vCPUs take short turns (a hook of scripts/lib/qemu-hooks.patch).
[ -z "$ICOUNT" ] || export CHPP_ICOUNT_SLICE_NS="${CHPP_ICOUNT_SLICE_NS:-200}"

GUEST="$CHPP_BUILD/guest"
mkdir -p "$GUEST"
[ -x "$QEMU" ] || chpp_die "no QEMU at $QEMU; run scripts/build-qemu.sh first"
chpp_guest_kernel "$KSPEC"
KERNEL=$CHPP_KERNEL KVER=$CHPP_KVER
MODSRC=/lib/modules/$KVER
[ -d "$MODSRC/build" ] || chpp_die "no $MODSRC/build; run scripts/setup.sh (the kernel's headers)"
KMOD=$(chpp_guest_kmod_dir "$KVER")

RUN=$(mktemp -d /tmp/chpp-pair.XXXXXX)
declare -A QPID=()
cleanup() {
    local p
    for p in "${QPID[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$RUN"
}
trap cleanup EXIT

if [ "$FABRIC" = 1 ]; then
    [ "$SINGLE" = 0 ] && [ "$CUT" = 0 ] && [ "$MPI" = 0 ] ||
        chpp_die "--fabric runs its own stages (--stage), not --single, --vfio, --nested, --cut, --mpi"
    case "$NNODES" in [2-9]|1[0-5]) ;; *) chpp_die "--nodes: 2 to 15 guests" ;; esac
    case "$STAGE" in verbs) ;; mpi) MPI=1 ;; *) chpp_die "--stage: verbs or mpi" ;; esac
    case "$LINK" in netdev) ;; chardev) [ "$NNODES" = 2 ] || chpp_die "--link chardev joins 2 guests only" ;;
        *) chpp_die "--link: netdev or chardev" ;; esac
    KARGS="${KARGS:+$KARGS }chpp.nodes=$NNODES chpp.stage=$STAGE"
fi

# The MPI stage: --mpi or chpp.only=mpi in --kargs (Open MPI goes into the
# initramfs only then: some 25 MiB more to unpack in every boot).
case " $KARGS " in *" chpp.only=mpi "*) MPI=1 ;; esac
if [ "$MPI" = 1 ]; then
    [ "$SINGLE" = 0 ] || chpp_die "--mpi needs the pair (not --single, --vfio, --nested)"
    [ "$FABRIC" = 1 ] ||
        case " $KARGS " in *" chpp.only=mpi "*) ;; *) KARGS="${KARGS:+$KARGS }chpp.only=mpi" ;; esac
fi

MODE=pair
[ "$SINGLE" = 1 ] && MODE=single
[ "$VFIO" = 1 ] && MODE=vfio
[ "$NESTED" = 1 ] && MODE=nested
[ "$FABRIC" = 1 ] && MODE=fabric
MEM=512M
[ "$NESTED" = 1 ] && MEM=1536M    # the nested guest's 256M are pinned by VFIO
[ "$FABRIC" = 1 ] && [ "$MPI" = 1 ] && MEM=768M    # UCX's pools for every peer
LOG="$GUEST/$MODE"     # consoles: build/guest/pair-node1.log ...

# --- the driver, built against the guest kernel ---------------------------------
chpp_log "building guest-driver/ for $KVER"
flock "$GUEST/driver-build.lock" \
    make -s -C "$CHPP_ROOT/guest-driver" KVER="$KVER" >"$GUEST/driver-build.log" 2>&1 ||
    { cat "$GUEST/driver-build.log" >&2; chpp_die "driver build failed"; }
flock "$GUEST/driver-build.lock" \
    make -s -C "$CHPP_ROOT/guest-driver/user" O="$GUEST" >>"$GUEST/driver-build.log" 2>&1 ||
    { cat "$GUEST/driver-build.log" >&2; chpp_die "user-space test build failed"; }
flock "$GUEST/driver-build.lock" \
    make -s -C "$CHPP_ROOT/guest-driver/provider" O="$GUEST" >>"$GUEST/driver-build.log" 2>&1 ||
    { cat "$GUEST/driver-build.log" >&2; chpp_die "verbs provider build failed"; }

# --- initramfs (scripts/lib/initramfs.sh): busybox, scripts/guest/pair-init.sh
# as /init with the stages it sources, modules in dependency order ------------
# Modules the guests need, by name; their dependencies are added first.
WANT=(ib_core ib_uverbs ib_umad virtio_pci virtio_net)
# soft-RoCE, the verbs benchmark's baseline (scripts/lib/bench-verbs.sh)
# (its CRC32, looked up by name, is a module of its own here)
[ "$NESTED" = 1 ] || WANT+=(crc32_generic rdma_rxe)
# VFIO with the type1 IOMMU backend (vfio does not load it by itself here:
# the initramfs has no modprobe database).
[ "$IOMMU" = 1 ] && WANT+=(vfio vfio_iommu_type1 vfio_pci)
# --share: 9p over virtio
[ "$SHARE" = 1 ] && WANT+=(9p 9pnet_virtio)
STAGES=()
[ "$NESTED" = 0 ] && STAGES+=(verbs-init.sh mad-init.sh)
[ "$MPI" = 1 ] && STAGES+=(mpi-init.sh)
[ "$VFIO" = 1 ] && STAGES+=(vfio-init.sh)
[ "$FABRIC" = 1 ] && STAGES+=(fabric-init.sh)
[ "$NESTED" = 1 ] && STAGES+=(nested-l1.sh)

INITRD="$RUN/initramfs.cpio.gz"
ROOT="$RUN/initramfs"
chpp_initramfs_new "$ROOT" pair-init.sh "${STAGES[@]}"
ORDER=$(chpp_initramfs_modules "$ROOT" "$KVER" "${WANT[@]}")
# The middleware stages' modules (IPoIB, the IB CM, rdma_cm), not loaded at
# boot: scripts/guest/mad-init.sh loads them from extra.list.
if [ "$NESTED" = 0 ]; then
    mv "$ROOT/lib/modules/$KVER/load.list" "$RUN/load.list"
    chpp_initramfs_modules "$ROOT" "$KVER" ib_cm ib_ipoib rdma_cm rdma_ucm \
        nvme-rdma nvmet-rdma brd >/dev/null
    mv "$ROOT/lib/modules/$KVER/load.list" "$ROOT/lib/modules/$KVER/extra.list"
    mv "$RUN/load.list" "$ROOT/lib/modules/$KVER/load.list"
fi
cp "$GUEST/chpp-uverbs-test" "$GUEST/chpp-mmio-bench" "$ROOT/bin/"
cp "$KMOD/chpp_hca.ko" "$KMOD/chpp_test.ko" "$ROOT/lib/modules/$KVER/"
# Debian's verbs tools, perftest and soft-RoCE, and the libibverbs provider
# where libibverbs 44 looks for "driver chpp" (docs/verbs-provider.md) with
# its test program: in the driver guests, or in the nested guest only.
install_verbs() {
    chpp_guest_rdma "$1"
    mkdir -p "$1/usr/lib/x86_64-linux-gnu/libibverbs" "$1/etc/libibverbs.d"
    cp "$GUEST/libchpp-rdmav34.so" "$1/usr/lib/x86_64-linux-gnu/libibverbs/"
    cp "$GUEST/chpp.driver" "$1/etc/libibverbs.d/"
    cp "$GUEST/chpp-verbs-test" "$GUEST/chpp-verbs-ex-test" "$1/bin/"
}
[ "$NESTED" = 1 ] || install_verbs "$ROOT"
if [ "$MPI" = 1 ]; then
    # Open MPI with its UCX pml (scripts/lib/initramfs.sh) and the MPI test,
    # built here with Debian's mpicc.
    command -v mpicc >/dev/null || chpp_die "no mpicc; run scripts/setup.sh (libopenmpi-dev)"
    flock "$GUEST/driver-build.lock" \
        make -s -C "$CHPP_ROOT/guest-driver/mpi" O="$GUEST" >>"$GUEST/driver-build.log" 2>&1 ||
        { cat "$GUEST/driver-build.log" >&2; chpp_die "MPI test build failed"; }
    chpp_guest_mpi "$ROOT"
    cp "$GUEST/chpp-mpi-test" "$ROOT/bin/"
fi
if [ "$VFIO" = 1 ]; then
    # The VFIO test program, static so that it runs on busybox alone.
    make -s -C "$CHPP_ROOT/tests/vfio" O="$ROOT/bin" ||
        chpp_die "building tests/vfio/chpp-vfio-test.c failed"
fi
if [ "$NESTED" = 1 ]; then
    # The nested guest's world: this QEMU (stripped) with the libraries it
    # links (same paths), its firmware, the kernel and the nested initramfs.
    mkdir -p "$ROOT/nested/fw" "$ROOT/lib64"
    strip -o "$ROOT/nested/qemu-system-x86_64" "$QEMU"
    for lib in $(ldd "$QEMU" | grep -o '/[^ ]*'); do
        mkdir -p "$ROOT$(dirname "$lib")"
        cp -L "$lib" "$ROOT$lib"
    done
    # From the build tree's firmware links, or Debian's (a stock QEMU).
    for f in bios-256k.bin linuxboot_dma.bin kvmvapic.bin; do
        for dir in "$CHPP_QEMU_BUILD/qemu-bundle/usr/local/share/qemu" \
                   /usr/share/seabios /usr/share/qemu; do
            [ ! -e "$dir/$f" ] || { cp -L "$dir/$f" "$ROOT/nested/fw/$f"; break; }
        done
        [ -e "$ROOT/nested/fw/$f" ] || chpp_die "firmware missing: $f"
    done
    cp "$KERNEL" "$ROOT/nested/vmlinuz"
    # The nested guest's initramfs: scripts/guest/nested-init.sh as /init,
    # ib_core and ib_uverbs (chpp_hca's ib_umem_*), the driver, the verbs.
    L2="$RUN/l2"
    chpp_initramfs_new "$L2" nested-init.sh
    chpp_initramfs_modules "$L2" "$KVER" ib_core ib_uverbs >/dev/null
    cp "$ROOT/bin/chpp-vfio-test" "$L2/bin/"
    cp "$KMOD/chpp_hca.ko" "$KMOD/chpp_test.ko" "$L2/lib/modules/$KVER/"
    install_verbs "$L2"
    chpp_initramfs_pack "$L2" "$ROOT/nested/l2.cpio.gz"
fi
chpp_initramfs_pack "$ROOT" "$INITRD"
chpp_log "initramfs: busybox + $ORDER + chpp_hca chpp_test + chpp-uverbs-test"

# --- the guests ---------------------------------------------------------------------
NODES=(1 2)
[ "$SINGLE" = 1 ] && NODES=(1)
[ "$FABRIC" = 1 ] && mapfile -t NODES < <(seq 1 "$NNODES")
# The fabric's two segments: multicast groups on the loopback (a QEMU socket
# netdev each; every frame reaches every guest), group and port from this
# run's PID so that concurrent runs stay apart.
MC="239.255.$(($$ % 250 + 1)).$(($$ / 250 % 250 + 1))"
MCPORT=$((20000 + $$ % 20000 * 2))
qemu_cmd() {
    local n=$1 peer=$((3 - $1)) append
    # no_timer_check: on a loaded host a TCG guest can fail the kernel's
    # check of the IO-APIC timer and panic ("IO-APIC + timer doesn't work").
    append="console=ttyS0 quiet panic=-1 no_timer_check chpp.node=$n chpp.mode=$MODE chpp.loops=$LOOPS"
    [ "$IOMMU" = 1 ] && append="$append intel_iommu=on iommu=pt"
    if [ "$FABRIC" = 1 ]; then
        append="$append chpp.ip=10.0.2.$n"
    elif [ "$SINGLE" = 0 ]; then
        append="$append chpp.ip=10.0.2.$n chpp.peer=10.0.2.$peer"
    fi
    [ "$CUT" = 1 ] && append="$append chpp.cut=1"
    [ "$SHELL_NODE" = "$n" ] && append="$append chpp.shell=1"
    [ "$NOTEST" = 1 ] && append="$append chpp.notest=1"
    [ "$SHARE" = 1 ] && append="$append chpp.share=1"
    [ -n "$KARGS" ] && append="$append $KARGS"
    # debug-threads: the vCPU, main-loop and link threads carry names (top -H,
    # perf --sort comm, gdb's "info threads").
    CMD=("$QEMU" -M q35 -accel tcg -m "$MEM" -nographic -no-reboot
         -name "chpp-node$n,debug-threads=on"
         -kernel "$KERNEL" -initrd "$INITRD" -append "$append"
         -monitor "unix:$RUN/mon$n.sock,server=on,wait=off")
    [ "$SMP" = 1 ] || CMD+=(-smp "$SMP")
    [ -z "$ICOUNT" ] || CMD+=(-icount "shift=$ICOUNT,sleep=off")
    if [ "$IOMMU" = 1 ]; then
        # The IOMMU comes before the devices it translates for. With KVM,
        # interrupt remapping needs kernel-irqchip=split; TCG ignores it.
        CMD[2]=q35,kernel-irqchip=split
        CMD+=(-device intel-iommu,intremap=on,caching-mode=on)
    fi
    CMD+=(-device pcie-root-port,id=rp0,bus=pcie.0,chassis=1)
    if [ "$FABRIC" = 1 ]; then
        # The QPs and MTTs of the pair, plus one kernel-verbs QP per peer.
        local dev="chpp-hca,bus=rp0,id=hca0,node-id=$n,num-qps=32,num-mtts=262144"
        if [ "$LINK" = chardev ]; then
            if [ "$n" = 1 ]; then
                CMD+=(-chardev "socket,id=lnk,path=$RUN/link.sock,server=on,wait=off")
            else
                CMD+=(-chardev "socket,id=lnk,path=$RUN/link.sock,reconnect=1")
            fi
            dev="$dev,chardev=lnk"
        else
            # A peer silent for 3 s (the default) is dropped: on a loaded
            # 2-core host a QEMU's main loop can stall that long.
            CMD+=(-netdev "socket,id=fab,mcast=$MC:$MCPORT,localaddr=127.0.0.1")
            dev="$dev,netdev=fab,link-peer-timeout-ms=20000"
        fi
        CMD+=(-device "$dev$DEVARGS"
              -netdev "socket,id=ctl,mcast=$MC:$((MCPORT + 1)),localaddr=127.0.0.1"
              -device "virtio-net-pci,netdev=ctl,mac=52:54:00:c4:a1:$(printf %02x "$n")")
    elif [ "$SINGLE" = 1 ]; then
        # 16 QPs: QPs 0 and 1 are ib_core's QP0 and QP1 (MADs).
        CMD+=(-device "chpp-hca,bus=rp0,id=hca0,node-id=$n,num-qps=16$DEVARGS")
    else
        if [ "$n" = 1 ]; then
            CMD+=(-chardev "socket,id=lnk,path=$RUN/link.sock,server=on,wait=off")
        else
            CMD+=(-chardev "socket,id=lnk,path=$RUN/link.sock,reconnect=1")
        fi
        # 16 QPs: perftest -q 8 of the verbs stage (verbs-init.sh), and
        # QPs 0 and 1 are ib_core's QP0 and QP1 (MADs); 2^18 MTT entries
        # (1 GiB of 4 KiB pages): UCX's UCP registers a few hundred MiB of
        # buffers, its RC receive queue alone 32 MiB.
        CMD+=(-device "chpp-hca,bus=rp0,id=hca0,node-id=$n,chardev=lnk,num-qps=16,num-mtts=262144$DEVARGS"
              -netdev "dgram,id=ctl,local.type=unix,local.path=$RUN/net$n.sock,remote.type=unix,remote.path=$RUN/net$peer.sock"
              -device "virtio-net-pci,netdev=ctl,mac=52:54:00:c4:a1:0$n")
    fi
    # The link-cut stage's word from this script to the guest: a second
    # serial port (the guest's ttyS1) on a unix socket (tell). A -serial
    # replaces -nographic's default one, so the console is named too.
    [ "$CUT" = 1 ] && [ "$SINGLE" = 0 ] &&
        CMD+=(-chardev "socket,id=hostctl,path=$RUN/ctl$n.sock,server=on,wait=off"
              -serial stdio -serial chardev:hostctl)
    [ "$TRACE" = 1 ] && CMD+=(-msg timestamp=on -D "$LOG-node$n.trace")
    IFS=, read -ra pats <<<"$TRACE_EVENTS"
    for p in "${pats[@]}"; do
        [ "$TRACE" = 1 ] && CMD+=(-trace "$p")
    done
    # The checkout, read-only, as 9p tag "chpp" (pair-init.sh mounts /host).
    [ "$SHARE" = 1 ] && CMD+=(
        -fsdev "local,id=chpp,path=$CHPP_ROOT,security_model=none,readonly=on"
        -device virtio-9p-pci,fsdev=chpp,mount_tag=chpp)
    [ "$GDB_NODE" = "$n" ] && CMD+=(-gdb "$GDB_ADDR" -S)
    CMD+=("${EXTRA[@]}")
}

chpp_log "run dir $RUN (monitors mon1.sock ...); consoles build/guest/$MODE-node{$(IFS=,; echo "${NODES[*]}")}.log"
start=$(date +%s.%N)
TO=()
[ "$TIMEOUT" != 0 ] && [ "$SHELL_NODE" = 0 ] && TO=(timeout --kill-after=5 "$TIMEOUT")
for n in "${NODES[@]}"; do
    qemu_cmd "$n"
    chpp_log "node $n: $(printf '%q ' "${CMD[@]}" | sed "s|$CHPP_ROOT/||g")"
    if [ "$SHELL_NODE" = "$n" ]; then
        continue    # started last, in the foreground
    fi
    : >"$LOG-node$n.log"
    "${TO[@]}" "${CMD[@]}" </dev/null >"$LOG-node$n.log" 2>&1 &
    QPID[$n]=$!
    # Live progress: the guest's result lines, prefixed with the node and
    # the seconds since the first guest started (where a run's time goes).
    tail -n +1 -F --pid="${QPID[$n]}" "$LOG-node$n.log" 2>/dev/null |
        grep --line-buffered -aE 'chpp-guest:|chpp-vfio:|chpp-l2:|chpp_test:|chpp-uverbs:|chpp_hca .*(port|interrupt|fw)' |
        while IFS= read -r line; do
            printf '[node%s +%ss] %s\n' "$n" \
                $(( ${EPOCHREALTIME%.*} - ${start%.*} )) "${line//$'\r'/}"
        done &
    sleep 0.5   # node 1 creates the link socket
done
# One HMP command on node $1's monitor.
hmp() {
    python3 - "$RUN/mon$1.sock" "$2" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(2)
try:
    s.recv(4096)        # banner and prompt
except OSError:
    pass
s.sendall((sys.argv[2] + "\n").encode())
time.sleep(0.3)
s.close()
EOF
}

# One line to node $1's ttyS1 (the link-cut stage's serial port). QEMU
# drops what the guest has not read yet when the connection closes, so the
# connection stays open until QEMU closes it (the guest ended).
tell() {
    python3 - "$RUN/ctl$1.sock" "$2" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall((sys.argv[2] + "\n").encode())
while s.recv(4096):
    pass
s.close()
EOF
}

# The link-cut stage: wait for both guests to stream, then inject.
inject_cut() {
    local n waited=0 dev=/machine/peripheral/hca0
    for n in 1 2; do
        until grep -aq 'chpp-guest: streaming' "$LOG-node$n.log"; do
            sleep 0.5; waited=$((waited + 1))
            [ $waited -lt $((TIMEOUT * 2)) ] || return 0
        done
    done
    sleep 1
    chpp_log "cutting the link, dropping all data frames until both streams fail"
    for n in 1 2; do hmp "$n" "qom-set $dev fault-drop-percent 100"; done
    hmp 1 "qom-set $dev fault-cut true"
    # Keep dropping until both streams have ended in an error completion.
    for n in 1 2; do
        until grep -aq 'chpp-guest: stream:' "$LOG-node$n.log"; do
            sleep 0.5; waited=$((waited + 1))
            [ $waited -lt $((TIMEOUT * 2)) ] || break
        done
    done
    for n in 1 2; do hmp "$n" "qom-set $dev fault-drop-percent 0"; done
    chpp_log "link faults cleared"
    # The guests wait for this before their traffic after the cut (each
    # tell returns when its QEMU ends).
    for n in 1 2; do tell "$n" faults-cleared & done
    wait
}
if [ "$CUT" = 1 ] && [ "$SINGLE" = 0 ]; then
    inject_cut &
fi

declare -A RC=()
if [ "$SHELL_NODE" != 0 ]; then
    qemu_cmd "$SHELL_NODE"
    "${CMD[@]}" 2>&1 | tee "$LOG-node$SHELL_NODE.log" || true
    RC[$SHELL_NODE]=0
fi
# The fabric's guests wait for each other: once one has ended without
# passing, the others are stopped rather than left to their timeouts.
STOPPER=
while [ "${#QPID[@]}" -gt 0 ]; do
    rc=0 who=
    wait -n -p who "${QPID[@]}" || rc=$?
    for n in "${!QPID[@]}"; do
        [ "${QPID[$n]}" = "$who" ] || continue
        RC[$n]=$rc
        unset "QPID[$n]"
        if [ "$FABRIC" = 1 ] && [ -z "$STOPPER" ] && [ "${#QPID[@]}" -gt 0 ] &&
                ! grep -aq 'chpp-guest: RESULT PASS' "$LOG-node$n.log"; then
            chpp_log "node $n ended without passing (status $rc): stopping the others in 20 s"
            # shellcheck disable=SC2086 # a list of PIDs
            (sleep 20; kill ${QPID[*]} 2>/dev/null) &
            STOPPER=$!
        fi
    done
done
[ -z "$STOPPER" ] || kill "$STOPPER" 2>/dev/null || true
wait 2>/dev/null || true    # the progress pipelines end with their QEMU
secs=$(echo "$(date +%s.%N) $start" | awk '{printf "%.1f", $1 - $2}')

ok=1
for n in "${NODES[@]}"; do
    rc=${RC[$n]}
    res=$(tr -d '\r' <"$LOG-node$n.log" | grep -a 'chpp-guest: RESULT' | tail -n 1 || true)
    [ "$rc" = 124 ] && chpp_log "node $n: QEMU timed out after ${TIMEOUT}s"
    chpp_log "node $n: QEMU status $rc; ${res:-no RESULT line}"
    case "$res" in *"RESULT PASS"*) ;; *) ok=0 ;; esac
    [ "$rc" = 0 ] || ok=0
done
# The fabric's result lines, one for each ordered pair of guests (kernel
# verbs: "chpp-guest: pair A->B: PASS|FAIL ...") or the MPI job's.
if [ "$FABRIC" = 1 ]; then
    want=$((${#NODES[@]} * (${#NODES[@]} - 1))) got=0
    [ "$STAGE" = mpi ] && want=1
    for n in "${NODES[@]}"; do
        while read -r l; do
            chpp_log "node $n: $l"
            case "$l" in *": PASS"*) got=$((got + 1)) ;; esac
        done < <(tr -d '\r' <"$LOG-node$n.log" | sed -n 's/^chpp-guest: \(pair [0-9]*->[0-9]*: .*\|mpi job: .*\)/\1/p')
    done
    chpp_log "fabric: $got of $want $([ "$STAGE" = mpi ] && echo "MPI jobs" || echo "guest pairs") passed"
    [ "$got" = "$want" ] || ok=0
fi
chpp_log "finished in ${secs}s"
[ "$ok" = 1 ] || chpp_die "FAILED (see build/guest/$MODE-node*.log)"
chpp_log "PASS"
