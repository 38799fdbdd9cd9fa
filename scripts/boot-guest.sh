#!/usr/bin/env bash
# Boot a small Linux guest (Debian's kernel + a busybox initramfs) on the
# freshly built QEMU with one chpp-hca behind a PCIe root port, and print the
# guest's PCI listing (see scripts/guest/guest-init.sh for the format).
#
#   scripts/boot-guest.sh [options] [-- extra QEMU args...]
#
#   --check            exit non-zero unless the guest lists the device
#                      (VENDOR:DEVICE) with at least one assigned BAR
#   --vendor ID        expected vendor ID (default CHPP_PCI_VENDOR_ID)
#   --device-id ID     expected device ID (default CHPP_PCI_DEVICE_ID_PF)
#   --no-device        boot without -device chpp-hca (plain QEMU baseline)
#   --device-args S    extra properties for -device chpp-hca (e.g. "foo=1")
#   --timeout SEC      kill QEMU after SEC seconds (default 120; 0 = none)
#   --shell            keep the guest up with a busybox shell on the console
#                      (implies --timeout 0)
#   --qemu PATH        QEMU binary (default build/qemu/qemu-system-x86_64)
#   --kernel K         guest kernel: 6.12, 6.1, a release or an image path
#                      (default: the default guest kernel, docs/guest-driver.md)
#   -q, --quiet        do not echo the console (it is still saved)
#
# Everything after "--" goes to QEMU verbatim, e.g. "-- -s -S" to wait for
# gdb on :1234, or "-- -trace 'chpp_hca_*'". The console is saved in
# build/guest/console.log. Needs a built QEMU (scripts/build-qemu.sh).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$CHPP_ROOT/scripts/lib/initramfs.sh"

VENDOR=$(chpp_abi_define CHPP_PCI_VENDOR_ID)
DEVICE_ID=$(chpp_abi_define CHPP_PCI_DEVICE_ID_PF)
CHECK=0 WITH_DEVICE=1 DEVICE_ARGS="" TIMEOUT=120
SHELL_MODE=0 QUIET=0 QEMU="$CHPP_QEMU_BIN" KSPEC=""
EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        --check) CHECK=1 ;;
        --vendor) VENDOR=$2; shift ;;
        --device-id) DEVICE_ID=$2; shift ;;
        --no-device) WITH_DEVICE=0 ;;
        --device-args) DEVICE_ARGS=$2; shift ;;
        --timeout) TIMEOUT=$2; shift ;;
        --shell) SHELL_MODE=1; TIMEOUT=0 ;;
        --qemu) QEMU=$2; shift ;;
        --kernel) KSPEC=$2; shift ;;
        -q|--quiet) QUIET=1 ;;
        --) shift; EXTRA=("$@"); break ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) chpp_die "unknown option '$1' (see --help)" ;;
    esac
    shift
done

GUEST="$CHPP_BUILD/guest"
INITRD="$GUEST/initramfs.cpio.gz"
LOG="$GUEST/console.log"
mkdir -p "$GUEST"

[ -x "$QEMU" ] || chpp_die "no QEMU at $QEMU; run scripts/build-qemu.sh first"
chpp_guest_kernel "$KSPEC"
KERNEL=$CHPP_KERNEL

# --- initramfs: busybox, scripts/guest/guest-init.sh as /init -------------------
# (scripts/lib/initramfs.sh), packed again only when its contents changed.
build_initramfs() {
    local tree want
    tree=$(mktemp -d "$GUEST/initramfs.XXXXXX")
    chpp_initramfs_new "$tree" guest-init.sh
    want=$(chpp_initramfs_digest "$tree")
    if [ ! -f "$INITRD" ] || [ "$(cat "$INITRD.digest" 2>/dev/null)" != "$want" ]; then
        chpp_initramfs_pack "$tree" "$INITRD" 9
        echo "$want" >"$INITRD.digest"
    fi
    rm -rf "$tree"
}
build_initramfs

# no_timer_check: as in pair.sh (the IO-APIC timer test fails under TCG on
# a busy host)
APPEND="console=ttyS0 quiet panic=-1 no_timer_check"
[ "$SHELL_MODE" = 1 ] && APPEND="$APPEND chpp.shell=1"

CMD=("$QEMU" -M q35 -accel tcg -m 512M -nographic -no-reboot
     -kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND")
if [ "$WITH_DEVICE" = 1 ]; then
    CMD+=(-device pcie-root-port,id=rp0,bus=pcie.0,chassis=1
          -device "chpp-hca,bus=rp0${DEVICE_ARGS:+,$DEVICE_ARGS}")
fi
CMD+=("${EXTRA[@]}")

chpp_log "kernel $(basename "$KERNEL"); console -> build/guest/console.log"
chpp_log "$(printf '%q ' "${CMD[@]}" | sed "s|$CHPP_ROOT/||g")"

start=$(date +%s.%N)
rc=0
if [ "$SHELL_MODE" = 1 ]; then
    # Interactive: QEMU owns the terminal (Ctrl-a x quits).
    "${CMD[@]}" 2>&1 | tee "$LOG" || rc=$?
else
    TO=()
    [ "$TIMEOUT" != 0 ] && TO=(timeout --kill-after=5 "$TIMEOUT")
    if [ "$QUIET" = 1 ]; then
        "${TO[@]}" "${CMD[@]}" </dev/null >"$LOG" 2>&1 || rc=$?
    else
        set +e
        "${TO[@]}" "${CMD[@]}" </dev/null 2>&1 | tee "$LOG"
        rc=${PIPESTATUS[0]}
        set -e
    fi
fi
secs=$(echo "$(date +%s.%N) $start" | awk '{printf "%.1f", $1 - $2}')
[ "$rc" = 124 ] && chpp_log "QEMU timed out after ${TIMEOUT}s"
chpp_log "QEMU exited with status $rc after ${secs}s"

[ "$CHECK" = 1 ] || exit "$rc"

# --- check: the device line, then at least one assigned BAR below it ---------------
want="$(printf '%04x:%04x' "$VENDOR" "$DEVICE_ID")"
tr -d '\r' <"$LOG" | awk -v want="$want" '
    /=== chpp-guest: pci begin ===/ { inlist = 1; next }
    /=== chpp-guest: pci end/         { inlist = 0; ended = 1; next }
    !inlist { next }
    /^[0-9a-f]+:[0-9a-f]+:[0-9a-f]+\.[0-7] / { cur = ($2 == want); if (cur) { dev++; print "found: " $0 } next }
    cur && /^  (BAR[0-5]|ROM|VF-BAR[0-5]) / {
        print "found: " $0
        if ($1 ~ /^BAR/ && $3 !~ /^0x0+$/) bars++
    }
    END {
        if (!ended) { print "check: guest listing incomplete (no end marker)"; exit 1 }
        if (!dev)   { print "check: no PCI function " want " in the guest"; exit 1 }
        if (!bars)  { print "check: " want " has no assigned BAR"; exit 1 }
        printf "check: OK (%d function(s) %s, %d assigned BAR(s))\n", dev, want, bars
    }' >"$GUEST/check.log" && ok=1 || ok=0
sed 's/^/[boot-guest.sh] /' "$GUEST/check.log" >&2
[ "$ok" = 1 ] || exit 1
[ "$rc" = 0 ] || { chpp_log "check: QEMU did not exit cleanly (status $rc)"; exit 1; }
