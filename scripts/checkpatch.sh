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
    local tool=$1 f=$2 out rc=0
    n=$((n + 1))
    # checkpatch exits 1 on findings; anything else (or its usage text, as
    # for an option it does not know) means it did not check the file.
    out=$(perl "$tool" "${@:3}" --no-tree --quiet --terse -f "$f" 2>&1) || rc=$?
    if [ "$rc" -gt 1 ] || echo "$out" | grep -q '^Usage:'; then
        echo "$out" >&2
        chpp_die "$tool did not check $f"
    fi
    # The ABI header: its #ifdef __KERNEL__ is what lets the kernel include
    # it (QEMU's checkpatch calls it architecture specific), and the
    # X-macro builders (CHPP_ABI_ENUM_*, CHPP_ABI_NAME_CASE, CHPP_ABI_COUNT)
    # expand to list items that parentheses would break.
    if [ "$f" = include/hw/chpp/chpp-hca-abi.h ]; then
        out=$(echo "$out" | grep -v 'architecture specific defines' |
              grep -v "$(abi_xmacro_lines)" || true)
    fi
    if echo "$out" | grep -Eq '(ERROR|WARNING)'; then
        echo "$out" | grep -E '(ERROR|WARNING)'
        bad=$((bad + 1))
    fi
}
# "chpp-hca-abi.h:N: ERROR: Macros with complex values" for each X-macro
# builder line, as a grep -e list.
abi_xmacro_lines() {
    grep -n '^#define CHPP_ABI_\(ENUM_[A-Z]*\|NAME_CASE\|COUNT\)(' \
        include/hw/chpp/chpp-hca-abi.h |
        sed 's/^\([0-9]*\):.*/chpp-hca-abi.h:\1: ERROR: Macros with complex values/'
}
for f in hw/chpp/*.[ch] include/hw/chpp/*.h tests/qtest/chpp-hca*.[ch] \
         tests/qtest/fuzz/chpp*.c tests/vfio/*.c stock/*.c; do
    [ -f "$f" ] && check "$QEMU_CP" "$f"
done
for f in guest-driver/*.[ch] guest-driver/common/*.[ch] guest-driver/user/*.[ch] \
         guest-driver/provider/*.[ch] guest-driver/mpi/*.[ch]; do
    case "$f" in
        *.mod.c) continue ;;
        # The one file whose job is the differences between the supported
        # kernels (docs/guest-driver.md): its version checks are the point.
        guest-driver/chpp_compat.h)
            check "$KERNEL_CP" "$f" --show-types --ignore LINUX_VERSION_CODE; continue ;;
    esac
    check "$KERNEL_CP" "$f" --show-types
done
chpp_log "checkpatch: $n files, $bad with findings"
[ "$bad" = 0 ]
