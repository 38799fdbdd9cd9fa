#!/bin/busybox sh
# /init of the driver guests (initramfs built by scripts/pair.sh with
# scripts/lib/initramfs.sh; busybox). Sources /chpp/init-common.sh first;
# the stages it sources are /chpp/vfio-init.sh and /chpp/verbs-init.sh.
#
# Kernel command line (set by pair.sh):
#   chpp.node=N       this guest's chpp-hca node id (1 or 2; LID = N + 1)
#   chpp.mode=pair    two guests: traffic with the peer over the link
#   chpp.mode=single  one guest: loopback traffic (QP connected to itself)
#   chpp.mode=vfio    one guest with an IOMMU: VFs through VFIO (/chpp/vfio-init.sh)
#   chpp.mode=fabric  N guests on the fabric (/chpp/fabric-init.sh: chpp.nodes,
#                     chpp.stage)
#   chpp.loops=K      load/unload chpp_hca K times before the traffic test
#   chpp.ip=A chpp.peer=B   control network (virtio-net) addresses
#   chpp.shell=1      keep the guest up with a shell at the end
#   chpp.notest=1     only load the driver (no load loop, no traffic)
#   chpp.share=1      pair.sh --share: the host's checkout at /host (9p), the
#                     driver from /host/build/guest/kmod-$(uname -r)/, reloaded
#                     whenever its chpp_hca.ko changes (the developer's loop)
#   chpp.reloads=N    with chpp.share=1: end (RESULT PASS) after N reloads
#                     (scripts/checks/share-reload-check.sh)
#   chpp.pause=SEC    wait SEC seconds (printing "pausing") before the traffic,
#                     e.g. to inject faults from the monitor
#   chpp.fetch=SEC    how long to wait for the peer's info (default 120)
#   chpp.cut=1        pair: also the link-cut stage (pair.sh --cut injects
#                     the fault from the host while both nodes stream)
#   chpp.tools=0      pair: not the rdma-core tools, perftest and UCX after
#                     our own test programs (the *-6.1 e2e run: the uverbs
#                     ABI is the same, CI time)
#   chpp.only=verbs   pair: only the rdma-core tools stage (verbs-init.sh)
#   chpp.only=mad     pair: only the MAD stage (mad-init.sh): ibstat,
#                     smpquery, perfquery, opensm on node 1, ibnetdiscover
#   chpp.only=ipoib   pair: only the IPoIB stage (mad-init.sh): opensm, ib0
#                     with carrier on both nodes, ping over it
#   chpp.only=rdmacm  pair: only the rdma_cm stage (mad-init.sh): opensm,
#                     IPoIB, then rping, ucmatose, ib_write_bw -R
#   chpp.only=nvme    pair: only the NVMe over RDMA stage (mad-init.sh):
#                     nvmet-rdma on node 1, nvme-rdma + nvme-cli on node 2
#                     (needs --device-args num-mpts=512,num-mtts=131072)
#   chpp.only=mpi     pair: only the MPI stage (mpi-init.sh; pair.sh --mpi)
#   chpp.bench=verbs  pair: only the verbs benchmark: the null MMIO exit,
#                     then chpp0, then soft-RoCE; chpp.iters=N messages per
#                     QP in the message-rate runs (default 20000)
#   chpp.bench=icount single: only ib_write_lat between two processes of
#                     the guest, for each size of chpp.sizes=N,N,... with
#                     chpp.iters=N round trips (scripts/lib/bench-icount.sh)
#   chpp.ksyms=A,B    only print these kernel symbols from /proc/kallsyms
#                     ("chpp-ksym: ADDR TYPE NAME") and stop (scripts/gdb-guest.sh)
#   chpp.sections=1   print chpp_hca's section addresses, its parameters and
#                     its PCI driver after each load ("chpp-guest: section NAME
#                     ADDR", "param NAME VALUE", "pci-driver NAME"; checked by
#                     gdb-guest-check.sh)
#
# Every result line starts with "chpp-guest:"; the last one is
#   chpp-guest: RESULT PASS|FAIL <reason>
# which pair.sh looks for.

. /chpp/init-common.sh

NODE=$(chpp_arg node); MODE=$(chpp_arg mode); LOOPS=$(chpp_arg loops)
IP=$(chpp_arg ip); PEER=$(chpp_arg peer); NOTEST=$(chpp_arg notest)
FETCH_SECS=$(chpp_arg fetch); PAUSE=$(chpp_arg pause); KSYMS=$(chpp_arg ksyms)
SECTIONS=$(chpp_arg sections); CUT=$(chpp_arg cut); ONLY=$(chpp_arg only)
BENCH=$(chpp_arg bench); SHARE=$(chpp_arg share); TOOLS=$(chpp_arg tools)
: "${NODE:=1}" "${MODE:=single}" "${LOOPS:=2}"
CT=/sys/kernel/debug/chpp_test
say() { echo "chpp-guest: $*"; }

finish() {
    if [ "$1" = PASS ]; then say "RESULT PASS $2"; else say "RESULT FAIL $2"; fi
    chpp_end "ibdev in /sys/class/infiniband, test in $CT"
}
fail() { dmesg | grep -E 'chpp|infiniband|ib_core' | tail -n 40; finish FAIL "$*"; }

# With nokaslr these addresses are the same in every boot of this kernel:
# gdb-guest.sh keeps them to find the module list without vmlinux.
if [ -n "$KSYMS" ]; then
    awk -v want=",$KSYMS," 'NF == 3 && index(want, "," $3 ",") { print "chpp-ksym: " $0 }' /proc/kallsyms
    finish PASS "kernel symbols"
fi

# Kernel modules in dependency order (pair.sh wrote the list).
m=$(chpp_load_modules) || fail "insmod $m"

# pair.sh --share: the modules built on the host for this kernel replace
# the initramfs's copies (every stage loads them from $CHPP_MODDIR).
if [ "$SHARE" = 1 ]; then
    mkdir -p /host
    mount -t 9p -o trans=virtio,version=9p2000.L,ro chpp /host || fail "mount 9p tag chpp on /host"
    CHPP_SHARE_KMOD=/host/build/guest/kmod-$(uname -r)
    for m in chpp_hca chpp_test; do
        [ -f "$CHPP_SHARE_KMOD/$m.ko" ] || fail "no $CHPP_SHARE_KMOD/$m.ko"
        ln -sf "$CHPP_SHARE_KMOD/$m.ko" "$CHPP_MODDIR/$m.ko"
    done
    say "host checkout on /host; driver from $CHPP_SHARE_KMOD"
fi

ip link set lo up
hostname "chpp-node$NODE"    # node descriptions (ibnetdiscover) name it
if [ -n "$IP" ]; then
    ip addr add "$IP/24" dev eth0 && ip link set eth0 up || fail "control network"
    # A tiny file server on the control network (busybox wget is not usable:
    # the static build crashes after downloading): "NAME\n" -> /www/NAME.
    mkdir -p /www
    printf '#!/bin/sh\nread -r f\ncase "$f" in *[!a-z0-9]*|"") exit 0 ;; esac\ncat "/www/$f" 2>/dev/null\n' >/bin/chpp-serve
    chmod +x /bin/chpp-serve
    nc -ll -p 8000 -e /bin/chpp-serve &
fi
# Fetch file $1 from the peer's /www, retrying for $2 seconds.
fetch() {
    f=0
    while [ $f -lt "$2" ]; do
        echo "$1" | nc -w 2 "$PEER" 8000 >"/tmp/$1" 2>/dev/null
        [ -s "/tmp/$1" ] && return 0
        sleep 1; f=$((f + 1))
    done
    return 1
}

field() { echo "$1" | sed -n "s/.*$2=\([^ ]*\).*/\1/p"; }

port_state() { cat "/sys/class/infiniband/${1:-chpp0}/ports/1/state" 2>/dev/null; }

# Wait until the ib device exists with its port ACTIVE (the link may come
# up some seconds after the peer QEMU starts).
wait_active() {
    w=0
    while [ $w -lt "$1" ]; do
        case "$(port_state "${2:-chpp0}")" in *ACTIVE*) return 0 ;; esac
        sleep 1; w=$((w + 1))
    done
    return 1
}

load_driver() {
    # global_rkey_atomic: the test's atomics target memory registered through
    # ib_alloc_pd(IB_PD_UNSAFE_GLOBAL_RKEY) (docs/guest-driver.md).
    insmod "$CHPP_MODDIR/chpp_hca.ko" global_rkey_atomic=1 || fail "insmod chpp_hca"
    wait_active 60 || fail "port not ACTIVE: '$(port_state)'"
    say "chpp0 port 1 $(port_state) lid $(cat /sys/class/infiniband/chpp0/ports/1/lid)" \
        "fw $(cat /sys/class/infiniband/chpp0/fw_ver)"
    if [ "$SECTIONS" = 1 ]; then
        for f in /sys/module/chpp_hca/sections/.* /sys/module/chpp_hca/sections/*; do
            [ -f "$f" ] && say "section ${f##*/} $(cat "$f")"
        done
        for f in /sys/module/chpp_hca/parameters/*; do
            say "param ${f##*/} $(cat "$f")"
        done
        f=$(readlink /sys/class/infiniband/chpp0/device/driver)
        say "pci-driver ${f##*/}"
    fi
}

if [ "$MODE" = vfio ] || [ "$MODE" = nested ]; then
    . /chpp/vfio-init.sh     # ends with finish
fi

# The developer's loop: reload chpp_hca whenever its file on /host changes
# (a rebuild on the host), once its size and time stop changing.
watch_driver() {
    ko=$CHPP_MODDIR/chpp_hca.ko want=$(chpp_arg reloads) done=0
    last=$(stat -L -c %s.%Y "$ko")
    say "watching $CHPP_SHARE_KMOD/chpp_hca.ko: rebuild it on the host to reload"
    while :; do
        sleep 1
        now=$(stat -L -c %s.%Y "$ko" 2>/dev/null) || continue
        [ "$now" = "$last" ] && continue
        sleep 1
        [ "$(stat -L -c %s.%Y "$ko" 2>/dev/null)" = "$now" ] || continue
        last=$now
        rmmod chpp_test 2>/dev/null
        if ! rmmod chpp_hca; then
            say "reload: chpp_hca is in use (rmmod failed)"
            continue
        fi
        if insmod "$ko" global_rkey_atomic=1 && wait_active 60; then
            say "reloaded chpp_hca ($(stat -L -c '%s bytes, %y' "$ko")): chpp0 port 1 $(port_state)"
            done=$((done + 1))
            [ "$done" = "$want" ] && finish PASS "driver reloaded $done time(s) from /host"
        else
            say "reload: chpp_hca failed to load or its port is not ACTIVE"
        fi
    done
}

if [ "$MODE" = fabric ] && [ "$NOTEST" != 1 ]; then
    . /chpp/fabric-init.sh   # ends with finish
fi

if [ "$NOTEST" = 1 ]; then
    load_driver
    if [ "$SHARE" = 1 ]; then
        say "driver loaded from /host ($(stat -L -c '%s bytes, %y' "$CHPP_MODDIR/chpp_hca.ko"))"
        if [ "$(chpp_arg shell)" = 1 ]; then
            watch_driver &
            chpp_end "the driver reloads when rebuilt on the host"
        fi
        watch_driver
    fi
    finish PASS "driver loaded"
fi

# chpp.bench=icount: ib_write_lat inside this guest (scripts/lib/bench-icount.sh).
if [ "$BENCH" = icount ]; then
    [ "$MODE" = single ] || fail "chpp.bench=icount needs one guest (--single)"
    . /chpp/verbs-init.sh
    load_driver
    say "cpus $(nproc), $(grep -m 1 'cpu MHz' /proc/cpuinfo | tr -s ' \t' ' ')"
    icount_bench chpp0 "$(chpp_arg sizes)" "$(chpp_arg iters)"
    finish PASS "icount latency benchmark"
fi

# chpp.only=mad|ipoib: only that middleware stage (scripts/guest/mad-init.sh).
case "$ONLY" in
mad|ipoib|rdmacm|nvme)
    [ "$MODE" = pair ] || fail "chpp.only=$ONLY needs the pair"
    . /chpp/mad-init.sh
    "${ONLY}_stage"
    finish PASS "$ONLY stage"
    ;;
esac

# chpp.only=mpi: only the MPI stage (scripts/guest/mpi-init.sh, with
# verbs-init.sh's helpers; docs/middleware.md).
if [ "$ONLY" = mpi ]; then
    [ "$MODE" = pair ] || fail "chpp.only=mpi needs the pair"
    [ -f /chpp/mpi-init.sh ] || fail "no /chpp/mpi-init.sh: boot with pair.sh --mpi"
    . /chpp/verbs-init.sh
    . /chpp/mpi-init.sh
    load_driver
    mpi_stage
    finish PASS "MPI and UCX on chpp0 and soft-RoCE"
fi

# chpp.only=verbs: only the rdma-core tools stage (scripts/guest/verbs-init.sh);
# chpp.only=ucx: only its UCX part; chpp.bench=verbs: the verbs benchmark
# (scripts/lib/bench-verbs.sh).
if [ "$ONLY" = verbs ] || [ "$ONLY" = ucx ] || [ "$BENCH" = verbs ]; then
    [ "$MODE" = pair ] || fail "chpp.only=verbs and chpp.bench=verbs need the pair"
    . /chpp/verbs-init.sh
    if [ "$BENCH" = verbs ]; then
        mmio_bench
    fi
    load_driver
    if [ "$BENCH" = verbs ]; then
        iters=$(chpp_arg iters)
        verbs_bench chpp0 "${iters:-20000}"
        # Soft-RoCE on the control network, with its IPv4 (RoCE v2) GID
        # (chpp.bench_rxe=0: chpp-hca only, bench-verbs.sh --no-rxe).
        if [ "$(chpp_arg bench_rxe)" != 0 ]; then
            rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0"
            wait_active 30 rxe0 || fail "rxe0 not ACTIVE"
            gid=$(grep -l "0000:0000:0000:0000:0000:ffff:0a00:020$NODE" \
                  /sys/class/infiniband/rxe0/ports/1/gids/* | head -n 1)
            [ -n "$gid" ] || fail "rxe0 has no IPv4 GID"
            verbs_bench rxe0 "${iters:-20000}" -x "${gid##*/}"
        fi
        finish PASS "verbs benchmark"
    fi
    if [ "$ONLY" = ucx ]; then
        ucx_tools chpp0
        finish PASS "UCX"
    fi
    verbs_tools chpp0
    ucx_tools chpp0
    finish PASS "verbs tools"
fi

round=1
while [ $round -le "$LOOPS" ]; do
    load_driver
    rmmod chpp_hca || fail "rmmod chpp_hca (load $round)"
    [ -e /sys/class/infiniband/chpp0 ] && fail "chpp0 still present after rmmod"
    say "load/unload $round OK"
    round=$((round + 1))
done
load_driver
insmod "$CHPP_MODDIR/chpp_test.ko" || fail "insmod chpp_test"
echo setup >"$CT/ctl" || fail "test setup"
INFO=$(cat "$CT/info")
say "local $INFO"

if [ "$MODE" = pair ]; then
    echo "$INFO" >/www/info
    if ! fetch info ${FETCH_SECS:-120}; then
        ip addr; cat /proc/net/dev; ping -c 2 -W 2 "$PEER"
        fail "no peer info from $PEER"
    fi
    P=$(cat /tmp/info)
    say "peer $P"
    echo "connect $(field "$P" lid) $(field "$P" qpn) $(field "$P" rkey | sed 's/^0x//')" \
         "$(field "$P" addr | sed 's/^0x//')" >"$CT/ctl" || fail "connect"
    echo ready >/www/ready
    fetch ready 120 || fail "peer never ready"
else
    echo "connect self" >"$CT/ctl" || fail "connect self"
fi

if [ -n "$PAUSE" ]; then say "pausing $PAUSE s before the traffic"; sleep "$PAUSE"; fi
start=$(cat /proc/uptime | cut -d' ' -f1)
echo run >"$CT/ctl"
RES=$(cat "$CT/result")
end=$(cat /proc/uptime | cut -d' ' -f1)
say "traffic: $RES"
say "traffic took $(awk "BEGIN{print $end - $start}") s"
case "$RES" in PASS*) ;; *) fail "traffic: $RES" ;; esac
# Kernel verbs on a shared receive queue, on this device.
echo srq >"$CT/ctl"
SRES=$(cat "$CT/result")
say "kernel verbs: $SRES"
case "$SRES" in PASS*) ;; *) fail "kernel SRQ: $SRES" ;; esac

echo teardown >"$CT/ctl"
rmmod chpp_test || fail "rmmod chpp_test"
rmmod chpp_hca || fail "rmmod chpp_hca"
if dmesg | grep -E 'WARNING:|BUG:|Oops|guest error|refused|error completion'; then
    fail "kernel log has warnings or device errors"
fi

# Exchange "lid qpn rkey addr" with the peer as file $1 and connect to it.
connect_peer() {
    echo setup >"$CT/ctl" || fail "test setup ($1)"
    cat "$CT/info" >"/www/$1"
    fetch "$1" 120 || fail "no peer $1"
    P=$(cat "/tmp/$1")
    echo "connect $(field "$P" lid) $(field "$P" qpn) $(field "$P" rkey | sed 's/^0x//')" \
         "$(field "$P" addr | sed 's/^0x//')" >"$CT/ctl" || fail "connect ($1)"
    echo ready >"/www/$1ready"
    fetch "$1ready" 120 || fail "peer never ready ($1)"
}

# Link cut while traffic runs: both nodes stream RDMA writes; pair.sh cuts
# the link and drops every data frame until both streams have failed. The stream must end
# in an error completion, the port must go down and come back (events seen by
# a verbs client), and new QPs must then move data again.
if [ "$MODE" = pair ] && [ "$CUT" = 1 ]; then
    dmesg -c >/dev/null
    # pair.sh says "faults-cleared" on ttyS1 once it has stopped dropping
    # frames (open now, so that no byte of it is lost).
    stty -F /dev/ttyS1 raw -echo || fail "no ttyS1 for the link-cut stage"
    exec 3</dev/ttyS1
    load_driver
    insmod "$CHPP_MODDIR/chpp_test.ko" || fail "insmod chpp_test (cut)"
    connect_peer cutinfo
    say "streaming"
    echo "stream 90" >"$CT/ctl" || fail "stream"
    SRES=$(cat "$CT/result")
    say "stream: $SRES"
    case "$SRES" in
        "STREAM ok=0 "*|*status=success*) fail "the stream did not end in an error completion: $SRES" ;;
        STREAM*) ;;
        *) fail "stream: $SRES" ;;
    esac
    wait_active 60 || fail "port not ACTIVE after the cut: '$(port_state)'"
    # pair.sh clears the frame drops once both streams have failed, then
    # says so; new QPs before that would only see their frames dropped.
    echo streamed >/www/streamed
    fetch streamed 120 || fail "peer never finished streaming"
    line=
    while [ "$line" != faults-cleared ]; do
        read -r -t 120 line <&3 || fail "pair.sh never cleared the link faults"
    done
    exec 3<&-
    echo teardown >"$CT/ctl"
    connect_peer reinfo
    echo run >"$CT/ctl"
    RES2=$(cat "$CT/result")
    say "traffic after the cut: $RES2"
    case "$RES2" in PASS*) ;; *) fail "traffic after the cut: $RES2" ;; esac
    echo cutdone >/www/cutdone
    fetch cutdone 120 || fail "peer never finished the cut stage"
    echo teardown >"$CT/ctl"
    rmmod chpp_test || fail "rmmod chpp_test (cut)"
    rmmod chpp_hca || fail "rmmod chpp_hca (cut)"
    dmesg | grep -q 'chpp_test: chpp0: port error' || fail "no PORT_ERR event reached ib_core clients"
    dmesg | grep -q 'chpp_test: chpp0: port active' || fail "no PORT_ACTIVE event reached ib_core clients"
    if dmesg | grep -E 'WARNING:|BUG:|Oops'; then
        fail "kernel warnings in the cut stage"
    fi
    CUTRES="; link cut: $(echo "$SRES" | sed 's/ err=.*//'), port down/up, traffic again"
fi

# SR-IOV: VFs enabled and disabled repeatedly through sriov_numvfs (each VF
# an ib device of its own, with LID (vf << 12 | node) + 1), then the kernel
# traffic test on VF 1: to itself (single) or to the peer's VF 1 (pair).
dmesg -c >/dev/null
load_driver
PFBDF=$(ls /sys/bus/pci/drivers/chpp_hca | grep -m1 "^0000:")
NUMVFS=/sys/bus/pci/devices/$PFBDF/sriov_numvfs
for round in 1 2; do
    echo 3 >"$NUMVFS" || fail "enable 3 VFs (round $round)"
    for vf in 1 2 3; do
        wait_active 60 "chpp$vf" || fail "chpp$vf not ACTIVE (round $round)"
        lid=$(cat "/sys/class/infiniband/chpp$vf/ports/1/lid")
        [ "$((lid))" = "$(((vf << 12 | NODE) + 1))" ] ||
            fail "chpp$vf: LID $lid, want (VF $vf << 12 | node $NODE) + 1"
    done
    echo 0 >"$NUMVFS" || fail "disable VFs (round $round)"
    [ -e /sys/class/infiniband/chpp1 ] && fail "chpp1 still present after disabling VFs"
    say "VFs: 3 enabled and disabled (round $round)"
done
echo 1 >"$NUMVFS" || fail "enable 1 VF"
wait_active 60 chpp1 || fail "chpp1 not ACTIVE"
insmod "$CHPP_MODDIR/chpp_test.ko" ibdev=chpp1 || fail "insmod chpp_test ibdev=chpp1"
if [ "$MODE" = pair ]; then
    connect_peer vfinfo
else
    echo setup >"$CT/ctl" || fail "test setup (VF)"
    echo "connect self" >"$CT/ctl" || fail "connect self (VF)"
fi
echo run >"$CT/ctl"
VRES=$(cat "$CT/result")
say "VF traffic: $VRES"
case "$VRES" in PASS*) ;; *) fail "VF traffic: $VRES" ;; esac
if [ "$MODE" = pair ]; then
    echo vfdone >/www/vfdone
    fetch vfdone 120 || fail "peer never finished the VF stage"
fi
# Reset VF 1 (an FLR) with chpp_hca and chpp_test bound to it: the driver
# tears down and comes back, the PF is told by a VF_FLR event, and chpp_test
# gets the new chpp1 and moves data on it again.
VFBDF=$(basename "$(readlink "/sys/bus/pci/devices/$PFBDF/virtfn0")")
echo 1 >"/sys/bus/pci/devices/$VFBDF/reset" || fail "reset VF $VFBDF"
wait_active 60 chpp1 || fail "chpp1 not ACTIVE after its reset"
dmesg | grep -q "$VFBDF: function reset: up again" || fail "VF $VFBDF did not come back from its reset"
dmesg | grep -q "$PFBDF: VF 1 was reset (FLR)" || fail "the PF saw no VF_FLR event"
echo setup >"$CT/ctl" || fail "test setup (VF after reset)"
echo "connect self" >"$CT/ctl" || fail "connect self (VF after reset)"
echo run >"$CT/ctl"
case "$(cat "$CT/result")" in PASS*) ;; *) fail "VF traffic after its reset: $(cat "$CT/result")" ;; esac
say "VF reset with the driver bound: back up, traffic OK"
echo teardown >"$CT/ctl"
rmmod chpp_test || fail "rmmod chpp_test (VF)"
# PF removal with a VF present: the driver disables the VFs first.
rmmod chpp_hca || fail "rmmod chpp_hca with a VF enabled"
[ -e /sys/class/infiniband/chpp1 ] && fail "chpp1 still present after removing the PF driver"
[ "$(cat "$NUMVFS")" = 0 ] || fail "VFs left enabled after removing the PF driver"
if dmesg | grep -E 'WARNING:|BUG:|Oops|guest error|refused|error completion'; then
    fail "kernel log has warnings or device errors (VF stage)"
fi
VFSTAGE="; VFs enabled/disabled x2, VF reset, VF traffic $(echo "$VRES" | sed -n 's/^PASS \(LID [0-9]* <-> LID [0-9]*\).*/\1/p')"

# A fresh driver instance for user-space (OS-bypass) access through uverbs,
# loopback on this node. Its isolation check makes the device refuse one
# doorbell on purpose: exactly one "doorbell refused" line is expected.
dmesg -c >/dev/null
load_driver
/bin/chpp-uverbs-test >/tmp/uverbs.log 2>&1
urc=$?
cat /tmp/uverbs.log
[ $urc = 0 ] && grep -q '^chpp-uverbs: PASS' /tmp/uverbs.log || fail "uverbs test"
UVERBS=$(sed -n 's/^chpp-uverbs: PASS //p' /tmp/uverbs.log)

# user_pair TAG PROG: PROG --pair runs on both nodes and moves data between
# the two processes over the link (OS-bypass on both ends). Its info and
# "done" files go through the control network as /www/TAGinfo, TAGdone;
# PROG must print "<prefix>: PASS".
user_pair() {
    t=$1 prog=$2
    $prog --pair "/tmp/${t}mine" "/tmp/${t}peer" >"/tmp/${t}pair.log" 2>&1 &
    UPID=$!
    w=0
    until [ -s "/tmp/${t}mine" ]; do
        sleep 0.2; w=$((w + 1))
        [ $w -lt 300 ] || { cat "/tmp/${t}pair.log"; fail "$prog --pair: no local info"; }
    done
    cp "/tmp/${t}mine" "/www/${t}info"
    fetch "${t}info" 120 || fail "$prog --pair: no peer info"
    mv "/tmp/${t}info" "/tmp/${t}peer"
    w=0
    until [ -e "/tmp/${t}mine.done" ] || ! kill -0 $UPID 2>/dev/null; do
        sleep 0.2; w=$((w + 1))
        [ $w -lt 600 ] || break
    done
    [ -e "/tmp/${t}mine.done" ] && echo done >"/www/${t}done"
    fetch "${t}done" 120 && touch "/tmp/${t}peer.done"
    wait $UPID
    urc=$?
    cat "/tmp/${t}pair.log"
    [ $urc = 0 ] && grep -q ': PASS' "/tmp/${t}pair.log" || fail "$prog --pair"
}

# Pair: chpp-uverbs-test between processes of the two guests.
if [ "$MODE" = pair ]; then
    user_pair u /bin/chpp-uverbs-test
    UVERBS="$UVERBS; user-space traffic with the peer"
fi

# The libibverbs provider (docs/verbs-provider.md): unmodified rdma-core
# tools and chpp-verbs-test through libibverbs on this node's PF.
verbs_stage() {
    ip link set lo up
    ibv_devices >/tmp/ibv_devices.log 2>&1 || { cat /tmp/ibv_devices.log; fail "ibv_devices"; }
    cat /tmp/ibv_devices.log
    grep -q "chpp0[[:space:]]*$(sed 's/://g' /sys/class/infiniband/chpp0/node_guid)" /tmp/ibv_devices.log ||
        fail "ibv_devices does not list chpp0 with its node GUID"
    ibv_devinfo -v -d chpp0 >/tmp/ibv_devinfo.log 2>&1 || { cat /tmp/ibv_devinfo.log; fail "ibv_devinfo -v"; }
    grep -E 'hca_id|fw_ver|vendor|max_(qp|qp_wr|sge|cq|cqe|mr|pd):|atomic_cap|port:|state:|mtu:|port_lid|link_layer' \
        /tmp/ibv_devinfo.log | tr -s '\t' ' ' | sed 's/^/chpp-guest: devinfo:/'
    for want in 'state:.*PORT_ACTIVE' 'link_layer:.*InfiniBand' "vendor_id:.*$(cat /sys/bus/pci/devices/"$BDF"/vendor)" \
            "vendor_part_id:.*$(($(cat /sys/bus/pci/devices/"$BDF"/device)))" 'max_mtu:.*4096' \
            "port_lid:.*$(($(cat /sys/class/infiniband/chpp0/ports/1/lid)))" 'atomic_cap:.*ATOMIC_HCA'; do
        grep -q "$want" /tmp/ibv_devinfo.log || fail "ibv_devinfo -v: no '$want'"
    done
    /bin/chpp-verbs-test >/tmp/verbs.log 2>&1
    vrc=$?
    cat /tmp/verbs.log
    [ $vrc = 0 ] && grep -q '^chpp-verbs: PASS' /tmp/verbs.log || fail "chpp-verbs-test"
    # The extended verbs: ibv_query_device_ex, ibv_create_cq_ex with the
    # poll API, ibv_create_qp_ex with ibv_wr_*, and what they refuse.
    /bin/chpp-verbs-ex-test >/tmp/verbs-ex.log 2>&1
    vrc=$?
    cat /tmp/verbs-ex.log
    [ $vrc = 0 ] && grep -q '^chpp-verbs-ex: PASS' /tmp/verbs-ex.log || fail "chpp-verbs-ex-test"
    # ibv_rc_pingpong, ibv_ud_pingpong and ibv_srq_pingpong (QPs sharing a
    # receive queue, docs/shared-receive-queues.md): server and client, two
    # processes on this device. -N: ibv_rc_pingpong posts with the ibv_wr_*
    # API on a QP of ibv_create_qp_ex. For the SRQ runs each process takes
    # half the device's QPs, at most 4 (a pair's PF has 16, the default 4).
    srqq=$(($(sed -n 's/^[[:space:]]*max_qp:[[:space:]]*\([0-9]*\).*/\1/p' /tmp/ibv_devinfo.log) / 2))
    [ "$srqq" -le 4 ] || srqq=4
    port=18515
    for run in "rc -s 4096 -n 200" "rc -s 1 -n 100 -e" "rc -s 65536 -n 50 -e" "rc -s 1048576 -n 10" \
            "rc -s 1048576 -n 10 -e" "rc -s 4096 -n 200 -N -c" "rc -s 1 -n 100 -e -N" \
            "ud -s 2048 -n 50" "ud -s 1024 -n 50 -e" \
            "srq -q $srqq -s 4096 -n 100 -c" "srq -q $srqq -s 65536 -n 20 -e -c"; do
        tool=ibv_${run%% *}_pingpong opts=${run#* }
        port=$((port + 1))
        # Both sides time out: a lost completion event would block them.
        # shellcheck disable=SC2086
        timeout 60 $tool -d chpp0 -p $port $opts >/tmp/pp-server.log 2>&1 &
        spid=$!
        w=0
        until netstat -ltn 2>/dev/null | grep -q ":$port "; do
            sleep 0.2; w=$((w + 1))
            [ $w -lt 100 ] || { cat /tmp/pp-server.log; fail "$tool $opts: server not listening"; }
        done
        # shellcheck disable=SC2086
        timeout 60 $tool -d chpp0 -p $port $opts 127.0.0.1 >/tmp/pp-client.log 2>&1
        crc=$?
        wait $spid
        src=$?
        if [ $crc != 0 ] || [ $src != 0 ] || ! grep -q 'bytes in' /tmp/pp-client.log ||
                ! grep -q 'bytes in' /tmp/pp-server.log; then
            cat /tmp/pp-server.log /tmp/pp-client.log
            fail "$tool $opts (server rc $src, client rc $crc)"
        fi
        say "$tool $opts: $(grep 'bytes in' /tmp/pp-client.log)"
    done
    # What ibv_rc_pingpong asks ibv_query_device_ex for and the device does
    # not have: it must stop, saying so.
    for run in "-t:isn't completion timestamp capable" "-o:isn't ODP capable" "-j:doesn't support dm allocation"; do
        port=$((port + 1))
        timeout 20 ibv_rc_pingpong -d chpp0 -p $port "${run%%:*}" >/tmp/pp-server.log 2>&1 &&
            { cat /tmp/pp-server.log; fail "ibv_rc_pingpong ${run%%:*} did not stop"; }
        grep -q "${run#*:}" /tmp/pp-server.log ||
            { cat /tmp/pp-server.log; fail "ibv_rc_pingpong ${run%%:*}: no '${run#*:}'"; }
        say "ibv_rc_pingpong ${run%%:*}: refused: $(head -n 1 /tmp/pp-server.log)"
    done
    VERBS="; verbs provider: ibv_devinfo OK, $(sed -n 's/^chpp-verbs: PASS //p' /tmp/verbs.log), extended verbs $(sed -n 's/^chpp-verbs-ex: PASS //p' /tmp/verbs-ex.log), ibv_rc_pingpong x7 (to 1 MiB, -e, -N), -t/-o/-j refused, ibv_ud_pingpong x2, ibv_srq_pingpong x2 (-e, -c)"
}
BDF=$(ls /sys/bus/pci/drivers/chpp_hca | grep -m1 "^0000:")
verbs_stage

# Pair: the unmodified rdma-core tools and perftest between the two guests
# (scripts/guest/verbs-init.sh), on the PFs, then on VF 1 of each node.
if [ "$MODE" = pair ]; then
    # First our own test programs between the two guests' processes.
    user_pair v /bin/chpp-verbs-test
    user_pair x /bin/chpp-verbs-ex-test
fi
if [ "$MODE" = pair ] && [ "$TOOLS" = 0 ]; then
    VERBS="$VERBS; chpp-verbs-test --pair, chpp-verbs-ex-test --pair (rdma-core tools left out: chpp.tools=0)"
elif [ "$MODE" = pair ]; then
    . /chpp/verbs-init.sh
    verbs_tools chpp0
    ucx_tools chpp0
    echo 1 >"/sys/bus/pci/devices/$BDF/sriov_numvfs" || fail "enable 1 VF (verbs)"
    wait_active 60 chpp1 || fail "chpp1 not ACTIVE (verbs)"
    verbs_tools chpp1
    echo 0 >"/sys/bus/pci/devices/$BDF/sriov_numvfs" || fail "disable VFs (verbs)"
    # Doorbells lost to a full FIFO despite the provider's flow control:
    # on each FIFO_OVERFLOW event the driver reads the QPs that lost one
    # (QUERY_DB_LOST) and has the device announce their work (RING_SQ). Its
    # log line counts them (rate-limited: what was suppressed is not here).
    ovf=$(dmesg | sed -n 's/.*doorbell FIFO overflow: \([0-9]*\) QP.*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
    say "verbs: $ovf QPs recovered from doorbells lost to a full FIFO (logged)"
    VERBS="$VERBS; chpp-verbs-test --pair, chpp-verbs-ex-test --pair; rdma-core tools and perftest with the peer on the PF and on VF 1 ($ovf QP recoveries from lost doorbells logged)"
fi

# Unbind and bind the PCI function through sysfs: the ib device goes and
# comes back with its port ACTIVE.
BDF=$(ls /sys/bus/pci/drivers/chpp_hca | grep -m1 "^0000:")
echo "$BDF" >/sys/bus/pci/drivers/chpp_hca/unbind || fail "unbind $BDF"
[ -e /sys/class/infiniband/chpp0 ] && fail "chpp0 still present after unbind"
echo "$BDF" >/sys/bus/pci/drivers/chpp_hca/bind || fail "bind $BDF"
wait_active 60 || fail "port not ACTIVE after bind: '$(port_state)'"
say "unbind/bind $BDF OK"
# Reset the PF with the driver bound (sysfs reset: an FLR).
echo 1 >"/sys/bus/pci/devices/$BDF/reset" || fail "reset $BDF"
wait_active 60 || fail "port not ACTIVE after the PF reset: '$(port_state)'"
dmesg | grep -q "$BDF: function reset: up again" || fail "PF did not come back from its reset"
say "PF reset with the driver bound OK"
rmmod chpp_hca || fail "rmmod chpp_hca (after uverbs)"
[ "$(dmesg | grep -c 'doorbell refused')" = 1 ] ||
    fail "want exactly one refused doorbell (the isolation check)"
if dmesg | grep -v 'doorbell refused' | grep -v 'guest error(s) since probe' |
        grep -E 'WARNING:|BUG:|Oops|guest error|refused|error completion'; then
    fail "kernel log has warnings or device errors (uverbs)"
fi
# Keep this node (and its end of the link) up until the peer is done too.
if [ "$MODE" = pair ]; then
    echo done >/www/done
    fetch done 120 || fail "peer never finished"
    sleep 3     # keep serving "done" until the peer has seen ours
fi
finish PASS "node $NODE: driver load/unload x$((LOOPS + 2)), port ACTIVE, $RES; kernel SRQ OK; uverbs $UVERBS; unbind/bind, PF reset${CUTRES:-}${VFSTAGE:-}${VERBS:-}"
