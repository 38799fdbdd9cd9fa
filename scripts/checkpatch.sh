#!/usr/bin/env bash
# Style check of the whole tree: QEMU's checkpatch.pl for the device model and
# its tests (hw/, include/, tests/), the kernel's for guest-driver/. Prints
# every finding; exits non-zero if any file has an error or a warning.
#
#   scripts/checkpatch.sh
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

QEMU_CP="$CHPP_QEMU_SRC/scripts/checkpatch.pl"
KERNEL_CP="$CHPP_BUILD/tools/kernel-checkpatch/checkpatch.pl"
[ -f "$QEMU_CP" ] || chpp_die "no $QEMU_CP: run scripts/setup.sh"
[ -f "$KERNEL_CP" ] || chpp_die "no $KERNEL_CP: run scripts/setup.sh"

cd "$CHPP_ROOT"
bad=0 n=0
check() {
    local tool=$1 f=$2 out
    n=$((n + 1))
    out=$(perl "$tool" --no-tree --quiet --terse --show-types -f "$f" 2>&1 || true)
    # QEMU's checkpatch warns that the ABI header's #ifdef __KERNEL__ is
    # architecture specific: that #ifdef is what lets the kernel include it.
    if [ "$f" = include/hw/chpp/chpp-hca-abi.h ]; then
        out=$(echo "$out" | grep -v 'architecture specific defines' || true)
    fi
    if echo "$out" | grep -Eq '(ERROR|WARNING)'; then
        echo "$out" | grep -E '(ERROR|WARNING)'
        bad=$((bad + 1))
    fi
}
for f in hw/chpp/*.[ch] include/hw/chpp/*.h tests/qtest/chpp-hca*.[ch] \
         tests/qtest/fuzz/chpp*.c tests/vfio/*.c; do
    [ -f "$f" ] && check "$QEMU_CP" "$f"
done
for f in guest-driver/*.[ch] guest-driver/common/*.[ch] guest-driver/user/*.[ch] \
         guest-driver/provider/*.[ch]; do
    case "$f" in *.mod.c) continue ;; esac
    check "$KERNEL_CP" "$f"
done
chpp_log "checkpatch: $n files, $bad with findings"
[ "$bad" = 0 ]
