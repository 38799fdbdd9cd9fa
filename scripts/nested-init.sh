#!/bin/busybox sh
# /init of the nested (second-level) guest that scripts/nested.sh starts
# inside the first-level guest with two chpp-hca VFs passed through with
# QEMU's vfio-pci. Every result line starts with "chpp-l2:"; the last one is
#   chpp-l2: RESULT PASS|FAIL <reason>
# Steps: chpp_hca binds both VFs (its interrupt self-test proves that the VF
# MSI-X messages reach this guest through the first guest's interrupt
# remapping and VFIO), the ports are ACTIVE; then, with the driver unloaded,
# chpp-vfio-test --raw moves data with PUT, GET and NAP between the two VFs.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null

say() { echo "chpp-l2: $*"; }
up() { cut -d' ' -f1 /proc/uptime; }
finish() {
    [ "$1" = PASS ] || dmesg | grep -E 'chpp|DMAR|vfio' | tail -n 30
    say "RESULT $1 $2"
    poweroff -f
}
MOD=/lib/modules/$(uname -r)
say "kernel up, uptime $(up) s"

insmod "$MOD/ib_core.ko" || finish FAIL "insmod ib_core"
insmod "$MOD/ib_uverbs.ko" || finish FAIL "insmod ib_uverbs"   # ib_umem_* for chpp_hca
VFS=""
for d in /sys/bus/pci/devices/*; do
    [ "$(cat "$d/vendor")" = 0x1234 ] && [ "$(cat "$d/device")" = 0xc4a2 ] &&
        VFS="$VFS ${d##*/}"
done
# shellcheck disable=SC2086
set -- $VFS
[ $# = 2 ] || finish FAIL "want 2 chpp-hca VFs, found:$VFS"
say "VFs:$VFS"

t=$(up)
insmod "$MOD/chpp_hca.ko" || finish FAIL "insmod chpp_hca"
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
finish PASS "2 VFs via vfio-pci: driver + MSI-X self-test, PUT/GET/NAP verified"
