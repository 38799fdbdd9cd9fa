# shellcheck shell=sh
# Sourced as /chpp/vfio-init.sh by /init (scripts/guest/pair-init.sh) in
# chpp.mode=vfio, the guest that scripts/pair.sh --vfio boots with an
# emulated Intel IOMMU (and in chpp.mode=nested, scripts/nested.sh: steps 1
# and 3, then the nested guest of /chpp/nested-l1.sh instead of the test
# program). Uses say, fail, finish and load_driver from pair-init.sh and
# chpp_pci_find from init-common.sh. Steps:
#   1. the IOMMU and interrupt remapping are on;
#   2. chpp_hca binds the PF; sriov_numvfs 2 then 0, twice: the VFs appear
#      (bound by chpp_hca, ib devices chpp1 and chpp2) and go again;
#   3. two VFs enabled without autoprobe, bound to vfio-pci, each alone in
#      its IOMMU group; tests/vfio/chpp-vfio-test runs on them (PUT, GET,
#      NAP, MSI-X through VFIO, the IOMMU fault); the kernel must log the
#      DMAR fault at the address the program reports, and the PF driver the
#      VF FLRs that vfio-pci issued;
#   4. VFs enabled again, then rmmod chpp_hca: the PF removes them first.

ibdevs() { ls /sys/class/infiniband 2>/dev/null | wc -l; }
wait_ibdevs() {
    w=0
    while [ "$(ibdevs)" != "$1" ]; do
        [ $w -ge 90 ] && fail "want $1 ib device(s), have: $(ls /sys/class/infiniband | tr '\n' ' ')"
        sleep 1; w=$((w + 1))
    done
}
bdf_of() { basename "$(readlink "$1")"; }

# --- 1. the IOMMU -------------------------------------------------------------------
ls /sys/class/iommu 2>/dev/null | grep -q dmar || fail "no DMAR unit in /sys/class/iommu (intel_iommu=on?)"
IR=$(dmesg | grep -o 'Enabled IRQ remapping in [a-z0-9]* mode' | head -n 1)
[ -n "$IR" ] || fail "interrupt remapping is not enabled"
say "IOMMU $(ls /sys/class/iommu | tr '\n' ' ')($IR)"

PF=$(chpp_pci_find "$CHPP_PCI_DEVICE_ID_PF" | tail -n 1)
[ -n "$PF" ] || fail "no chpp-hca PF ($CHPP_PCI_VENDOR_ID:$CHPP_PCI_DEVICE_ID_PF)"
PF=/sys/bus/pci/devices/$PF
say "PF ${PF##*/}, IOMMU group $(bdf_of "$PF/iommu_group"), sriov_totalvfs $(cat "$PF/sriov_totalvfs")"

# --- 2. VFs bound by chpp_hca ----------------------------------------------------------
load_driver
[ "$MODE" = nested ] || for round in 1 2; do
    echo 2 >"$PF/sriov_numvfs" || fail "echo 2 > sriov_numvfs (round $round)"
    wait_ibdevs 3
    say "round $round: sriov_numvfs $(cat "$PF/sriov_numvfs"), ib devices $(ls /sys/class/infiniband | tr '\n' ' ')"
    echo 0 >"$PF/sriov_numvfs" || fail "echo 0 > sriov_numvfs (round $round)"
    wait_ibdevs 1
    [ -e "$PF/virtfn0" ] && fail "VF 1 still present after echo 0"
done

# --- 3. VFs through VFIO -----------------------------------------------------------------
echo 0 >"$PF/sriov_drivers_autoprobe"
echo 2 >"$PF/sriov_numvfs" || fail "echo 2 > sriov_numvfs (for vfio)"
VFS=""
for v in "$PF/virtfn0" "$PF/virtfn1"; do
    b=$(bdf_of "$v")
    echo vfio-pci >"/sys/bus/pci/devices/$b/driver_override"
    echo "$b" >/sys/bus/pci/drivers_probe
    drv=$(bdf_of "/sys/bus/pci/devices/$b/driver" 2>/dev/null)
    [ "$drv" = vfio-pci ] || fail "$b is bound to '$drv', not vfio-pci"
    g=$(bdf_of "/sys/bus/pci/devices/$b/iommu_group")
    say "VF $b: driver vfio-pci, IOMMU group $g ($(ls "/sys/kernel/iommu_groups/$g/devices" | tr '\n' ' '))"
    VFS="$VFS $b"
done
[ "$MODE" = nested ] && . /chpp/nested-l1.sh     # ends with finish
# shellcheck disable=SC2086
/bin/chpp-vfio-test $VFS >/tmp/vfio.out 2>&1
rc=$?
cat /tmp/vfio.out
grep -q 'chpp-vfio: RESULT PASS' /tmp/vfio.out && [ "$rc" = 0 ] ||
    fail "VFIO test (status $rc)"
FA=$(sed -n 's/.*fault-addr \(0x[0-9a-f]*\).*/\1/p' /tmp/vfio.out)
FL=$(dmesg | grep -E "DMAR: .*fault addr $FA " | head -n 1)
[ -n "$FA" ] && [ -n "$FL" ] || fail "the kernel logged no DMAR fault at $FA"
say "kernel: ${FL#*] }"
FLR=$(dmesg | grep -c 'VF [0-9]* was reset (FLR)')
[ "$FLR" -ge 2 ] || fail "the PF driver logged $FLR VF FLR event(s), want >= 2"
say "PF driver logged $FLR VF FLR event(s)"
echo 0 >"$PF/sriov_numvfs" || fail "echo 0 > sriov_numvfs (after vfio)"
echo 1 >"$PF/sriov_drivers_autoprobe"

# --- 4. PF removal with VFs present ----------------------------------------------------------
echo 2 >"$PF/sriov_numvfs" || fail "echo 2 > sriov_numvfs (before rmmod)"
wait_ibdevs 3
rmmod chpp_hca || fail "rmmod chpp_hca with VFs enabled"
[ -e "$PF/virtfn0" ] && fail "VFs left after the PF driver went"
[ "$(ibdevs)" = 0 ] || fail "ib devices left after rmmod"
dmesg | grep -q 'SR-IOV disabled (2 VF(s) removed)' || fail "PF removal did not disable its VFs"
say "rmmod chpp_hca with 2 VFs: VFs removed first"

if dmesg | grep -E 'WARNING:|BUG:|Oops'; then
    fail "kernel log has warnings"
fi
finish PASS "IOMMU + IR; sriov_numvfs 2/0 x2; VFIO: $(sed -n 's/.*RESULT PASS //p' /tmp/vfio.out)"
