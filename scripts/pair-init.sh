#!/bin/busybox sh
# /init of the driver guests (initramfs built by scripts/pair.sh; busybox).
#
# Kernel command line (set by pair.sh):
#   chpp.node=N       this guest's chpp-hca node id (1 or 2; LID = N + 1)
#   chpp.mode=pair    two guests: traffic with the peer over the link
#   chpp.mode=single  one guest: loopback traffic (QP connected to itself)
#   chpp.mode=vfio    one guest with an IOMMU: VFs through VFIO (/vfio-init.sh)
#   chpp.loops=K      load/unload chpp_hca K times before the traffic test
#   chpp.ip=A chpp.peer=B   control network (virtio-net) addresses
#   chpp.shell=1      keep the guest up with a shell at the end
#   chpp.notest=1     only load the driver (no load loop, no traffic)
#   chpp.pause=SEC    wait SEC seconds (printing "pausing") before the traffic,
#                     e.g. to inject faults from the monitor
#   chpp.fetch=SEC    how long to wait for the peer's info (default 120)
#
# Every result line starts with "chpp-guest:"; the last one is
#   chpp-guest: RESULT PASS|FAIL <reason>
# which pair.sh looks for.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug

arg() { sed -n "s/.*chpp\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
NODE=$(arg node); MODE=$(arg mode); LOOPS=$(arg loops); IP=$(arg ip); PEER=$(arg peer)
SHELL_MODE=$(arg shell); NOTEST=$(arg notest); FETCH_SECS=$(arg fetch); PAUSE=$(arg pause)
: "${NODE:=1}" "${MODE:=single}" "${LOOPS:=2}"
KVER=$(uname -r)
MODDIR=/lib/modules/$KVER
CT=/sys/kernel/debug/chpp_test
say() { echo "chpp-guest: $*"; }

finish() {
    if [ "$1" = PASS ]; then say "RESULT PASS $2"; else say "RESULT FAIL $2"; fi
    if [ "$SHELL_MODE" = 1 ]; then
        echo "chpp-guest: shell (ibdev in /sys/class/infiniband, test in $CT). 'poweroff -f' to quit."
        setsid cttyhack sh
    fi
    poweroff -f
}
fail() { dmesg | grep -E 'chpp|infiniband|ib_core' | tail -n 40; finish FAIL "$*"; }

# Kernel modules in dependency order (pair.sh wrote the list).
while read -r m; do
    insmod "$MODDIR/$m.ko" || fail "insmod $m"
done <"$MODDIR/load.list"

if [ -n "$IP" ]; then
    ip link set lo up
    ip addr add "$IP/24" dev eth0 && ip link set eth0 up || fail "control network"
fi

port_state() { cat /sys/class/infiniband/chpp0/ports/1/state 2>/dev/null; }

# Wait until the ib device exists with its port ACTIVE (the link may come
# up some seconds after the peer QEMU starts).
wait_active() {
    w=0
    while [ $w -lt "$1" ]; do
        case "$(port_state)" in *ACTIVE*) return 0 ;; esac
        sleep 1; w=$((w + 1))
    done
    return 1
}

load_driver() {
    # global_rkey_atomic: the test's atomics target memory registered through
    # ib_alloc_pd(IB_PD_UNSAFE_GLOBAL_RKEY) (docs/guest-driver.md).
    insmod "$MODDIR/chpp_hca.ko" global_rkey_atomic=1 || fail "insmod chpp_hca"
    wait_active 60 || fail "port not ACTIVE: '$(port_state)'"
    say "chpp0 port 1 $(port_state) lid $(cat /sys/class/infiniband/chpp0/ports/1/lid)" \
        "fw $(cat /sys/class/infiniband/chpp0/fw_ver)"
}

if [ "$MODE" = vfio ] || [ "$MODE" = nested ]; then
    . /vfio-init.sh     # ends with finish
fi

if [ "$NOTEST" = 1 ]; then
    load_driver
    finish PASS "driver loaded"
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
insmod "$MODDIR/chpp_test.ko" || fail "insmod chpp_test"
echo setup >"$CT/ctl" || fail "test setup"
INFO=$(cat "$CT/info")
say "local $INFO"

field() { echo "$1" | sed -n "s/.*$2=\([^ ]*\).*/\1/p"; }

if [ "$MODE" = pair ]; then
    # A tiny file server on the control network (busybox wget is not usable:
    # the static build crashes after downloading): "NAME\n" -> /www/NAME.
    mkdir -p /www
    echo "$INFO" >/www/info
    printf '#!/bin/sh\nread -r f\ncase "$f" in *[!a-z]*|"") exit 0 ;; esac\ncat "/www/$f" 2>/dev/null\n' >/bin/chpp-serve
    chmod +x /bin/chpp-serve
    nc -ll -p 8000 -e /bin/chpp-serve &
    # Fetch a file from the peer, retrying for $2 seconds.
    fetch() {
        f=0
        while [ $f -lt "$2" ]; do
            echo "$1" | nc -w 2 "$PEER" 8000 >"/tmp/$1" 2>/dev/null
            [ -s "/tmp/$1" ] && return 0
            sleep 1; f=$((f + 1))
        done
        return 1
    }
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

if [ "$MODE" = pair ]; then
    echo done >/www/done
    fetch done 120 || fail "peer never finished"
    sleep 3     # keep serving "done" until the peer has seen ours
fi

echo teardown >"$CT/ctl"
rmmod chpp_test || fail "rmmod chpp_test"
rmmod chpp_hca || fail "rmmod chpp_hca"
if dmesg | grep -E 'WARNING:|BUG:|Oops|guest error|refused|error completion'; then
    fail "kernel log has warnings or device errors"
fi
finish PASS "node $NODE: driver load/unload x$((LOOPS + 1)), port ACTIVE, $RES"
