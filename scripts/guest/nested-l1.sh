# shellcheck shell=sh
# Sourced by /chpp/vfio-init.sh in the first-level guest in chpp.mode=nested
# (scripts/nested.sh), once the two VFs in $VFS are bound to vfio-pci.
# Starts the project's QEMU (in /nested, with its libraries and firmware)
# under TCG with both VFs passed through with -device vfio-pci, booting the
# same kernel with /nested/l2.cpio.gz (scripts/guest/nested-init.sh as /init).
# The nested guest's console is this console; its lines start "chpp-l2:".

# shellcheck disable=SC2086
set -- $VFS
say "nested: $(/nested/qemu-system-x86_64 --version | head -n 1), VFs $1 $2"
t=$(cut -d' ' -f1 /proc/uptime)
# While the nested guest runs, keep the last view of the VFs' vfio-msix
# vectors: their chip must be the remapping one (IR-PCI-MSI).
(while :; do
    grep 'vfio-msix' /proc/interrupts >/tmp/irq.new && mv /tmp/irq.new /tmp/irq.snap
    sleep 2
done) &
SNAP=$!
/nested/qemu-system-x86_64 -M q35 -accel tcg -m 256M -nodefaults \
    -display none -serial stdio -monitor none -no-reboot -L /nested/fw \
    -kernel /nested/vmlinuz -initrd /nested/l2.cpio.gz \
    -append "console=ttyS0 quiet panic=-1" \
    -device "vfio-pci,host=$1" -device "vfio-pci,host=$2" \
    </dev/null 2>&1 | tee /tmp/l2.log
kill $SNAP
secs=$(awk "BEGIN{print $(cut -d' ' -f1 /proc/uptime) - $t}")
say "nested guest ran ${secs} s (first-level guest clock)"
grep -q 'chpp-l2: RESULT PASS' /tmp/l2.log || fail "nested guest: $(grep -a 'chpp-l2: RESULT' /tmp/l2.log || echo 'no RESULT line')"
say "VF MSI-X vectors while the nested guest ran:"
sed 's/^ */chpp-guest:   /' /tmp/irq.snap
grep -q 'IR-PCI-MSI.*vfio-msix' /tmp/irq.snap ||
    fail "the VFs' MSI-X vectors for the nested guest are not remapped"
finish PASS "nested guest: $(sed -n 's/.*chpp-l2: RESULT PASS //p' /tmp/l2.log), VF MSI-X via IR (${secs} s)"
