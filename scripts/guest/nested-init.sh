#!/bin/busybox sh
# /init of the nested (second-level) guest that scripts/nested.sh starts
# inside the first-level guest with two chpp-hca VFs passed through with
# QEMU's vfio-pci (initramfs built by scripts/pair.sh with
# scripts/lib/initramfs.sh; busybox; sources /chpp/init-common.sh first).
# Every result line starts with "chpp-l2:"; the last one is
#   chpp-l2: RESULT PASS|FAIL <reason>
# Steps: chpp_hca binds both VFs (its interrupt self-test proves that the VF
# MSI-X messages reach this guest through the first guest's interrupt
# remapping and VFIO), the ports are ACTIVE; the kernel verbs test client
# (chpp_test) moves verified data on VF chpp0; Debian's ibv_rc_pingpong runs
# between the two VFs through libibverbs and the chpp provider (OS-bypass
# in the nested guest); then, with the driver unloaded, chpp-vfio-test --raw
# moves data with PUT, GET and NAP between the two VFs.

. /chpp/init-common.sh
ip link set lo up

say() { echo "chpp-l2: $*"; }
up() { cut -d' ' -f1 /proc/uptime; }
finish() {
    [ "$1" = PASS ] || dmesg | grep -E 'chpp|DMAR|vfio' | tail -n 30
    say "RESULT $1 $2"
    chpp_end
}
say "kernel up, uptime $(up) s"

# ib_core, and ib_uverbs for chpp_hca's ib_umem_* (pair.sh wrote the list).
m=$(chpp_load_modules) || finish FAIL "insmod $m"
# shellcheck disable=SC2046
set -- $(chpp_pci_find "$CHPP_PCI_DEVICE_ID_VF")
[ $# = 2 ] || finish FAIL "want 2 chpp-hca VFs, found: $*"
say "VFs: $*"

t=$(up)
# global_rkey_atomic: chpp_test's atomics (docs/guest-driver.md).
insmod "$CHPP_MODDIR/chpp_hca.ko" global_rkey_atomic=1 || finish FAIL "insmod chpp_hca"
w=0
until [ "$(cat /sys/class/infiniband/chpp0/ports/1/state 2>/dev/null | cut -c1)" = 4 ] &&
      [ "$(cat /sys/class/infiniband/chpp1/ports/1/state 2>/dev/null | cut -c1)" = 4 ]; do
    [ $w -ge 900 ] && finish FAIL "ports not ACTIVE: $(ls /sys/class/infiniband)"
    sleep 1; w=$((w + 1))
done
n=$(dmesg | grep -c 'interrupt self-test OK')
[ "$n" = 2 ] || finish FAIL "$n of 2 VFs passed the interrupt self-test"
dmesg | grep 'interrupt self-test OK' | sed 's/^\[[^]]*\] /chpp-l2: /'
say "chpp_hca bound both VFs, ports ACTIVE, in $(awk "BEGIN{print $(up) - $t}") s"

# Kernel verbs on a passed-through VF: chpp_test's QP connected to itself.
t=$(up)
CT=/sys/kernel/debug/chpp_test
insmod "$CHPP_MODDIR/chpp_test.ko" ibdev=chpp0 || finish FAIL "insmod chpp_test"
echo setup >"$CT/ctl" && echo "connect self" >"$CT/ctl" && echo run >"$CT/ctl" ||
    finish FAIL "chpp_test setup/connect/run"
RES=$(cat "$CT/result")
say "kernel verbs on chpp0: $RES"
case "$RES" in PASS*) ;; *) finish FAIL "kernel verbs: $RES" ;; esac
echo teardown >"$CT/ctl"
rmmod chpp_test || finish FAIL "rmmod chpp_test"
say "kernel verbs took $(awk "BEGIN{print $(up) - $t}") s"

# User verbs: ibv_rc_pingpong between the two VFs, bytes checked (-c).
t=$(up)
ibv_devinfo -d chpp1 | grep -q 'state:.*PORT_ACTIVE' || finish FAIL "ibv_devinfo -d chpp1"
timeout 600 ibv_rc_pingpong -d chpp0 -c -n 20 -p 18600 >/tmp/pps.log 2>&1 &
spid=$!
w=0
until grep -qE ":48A8 0+:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
    kill -0 $spid 2>/dev/null || break
    [ $w -ge 600 ] && break
    sleep 1; w=$((w + 1))
done
timeout 600 ibv_rc_pingpong -d chpp1 -c -n 20 -p 18600 127.0.0.1 >/tmp/ppc.log 2>&1
crc=$?
wait $spid
src=$?
cat /tmp/pps.log /tmp/ppc.log
[ $crc = 0 ] && [ $src = 0 ] && grep -q 'bytes in' /tmp/ppc.log ||
    finish FAIL "ibv_rc_pingpong chpp0 <-> chpp1 (server $src, client $crc)"
say "ibv_rc_pingpong between the VFs took $(awk "BEGIN{print $(up) - $t}") s"
rmmod chpp_hca || finish FAIL "rmmod chpp_hca"

t=$(up)
/bin/chpp-vfio-test --raw "$1" "$2" >/tmp/raw.out 2>&1
rc=$?
cat /tmp/raw.out
grep -q 'chpp-vfio: RESULT PASS' /tmp/raw.out && [ "$rc" = 0 ] ||
    finish FAIL "traffic between the VFs (status $rc)"
say "traffic took $(awk "BEGIN{print $(up) - $t}") s"
if dmesg | grep -E 'WARNING:|BUG:|Oops'; then
    finish FAIL "kernel log has warnings"
fi
finish PASS "2 VFs via vfio-pci: driver + MSI-X self-test, kernel verbs, ibv_rc_pingpong, PUT/GET/NAP verified"
