#!/usr/bin/env bash
# The 'stock-refuse' and 'stock10-refuse' tests: the chpp-hca preload object
# (scripts/build-deb.sh) loads the device only into the QEMU build it was
# compiled against and refuses every other program with its message and
# exit status 1, before any device code runs (docs/build.md, "Mismatch
# detection").
#
#   scripts/checks/stock-refuse-check.sh [--qemu 10]
#
# Cases, each with `-device chpp-hca,help` (which lists the device's
# properties only where the device is registered):
#   accept   Debian's binary: the properties are listed (the control case:
#            the refusals below are not the wrapper failing anyway)
#   modular  this project's own QEMU build (build/qemu/ or build/qemu10/,
#            patched, not modular: its symbols are not exported)
#   stamp    a copy of Debian's binary whose module stamp is changed (as
#            another version, package version or configure script gives)
#   buildid  a copy of Debian's binary whose GNU build-id is changed (the
#            same version rebuilt)
#   other    a program that is not QEMU (/bin/true with the object preloaded)
# With --qemu 10 (build-deb.sh --qemu 10: backports' 10.0, unpacked in
# build/stock10/pkg/) the same against 10.0, plus the two QEMUs crossed
# (needs both builds):
#   7-on-10  the object built for 7.2 preloaded into 10.0's binary
#   10-on-7  the object built for 10.0 preloaded into 7.2's binary
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

ARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
LIB7="$CHPP_BUILD/stock/root/usr/lib/$ARCH/qemu-chpp-hca"
BIN7=/usr/bin/qemu-system-x86_64
case "${1:-}" in
    "")
        LIB=$LIB7 STOCK_BIN=$BIN7 OWN_BIN=$CHPP_QEMU_BIN
        # The package's wrapper runs the installed binary.
        ACCEPT="$LIB/bin/qemu-system-x86_64" ;;
    --qemu)
        [ "${2:-}" = 10 ] || chpp_die "usage: $0 [--qemu 10]"
        LIB="$CHPP_BUILD/stock10/root/usr/lib/$ARCH/qemu-chpp-hca"
        STOCK_BIN="$CHPP_BUILD/stock10/pkg/usr/bin/qemu-system-x86_64"
        OWN_BIN="$CHPP_QEMU10_BUILD/qemu-system-x86_64"
        # The unpacked binary, through the runner build-deb.sh writes.
        ACCEPT="$CHPP_BUILD/stock10/bin/qemu-system-x86_64"
        # Its modules for every case (a 7.2 module aborts 10.0).
        export CHPP_STOCK_MODULE_DIR="$CHPP_BUILD/stock10/modules"
        [ -x "$LIB7/bin/qemu-system-x86_64" ] || chpp_die "no $LIB7/bin/qemu-system-x86_64 (run scripts/build-deb.sh)" ;;
    *) chpp_die "usage: $0 [--qemu 10]" ;;
esac
WRAPPER="$LIB/bin/qemu-system-x86_64"
[ -x "$WRAPPER" ] || chpp_die "no $WRAPPER (run scripts/build-deb.sh ${1:+--qemu 10})"
[ -x "$ACCEPT" ] || chpp_die "no $ACCEPT (run scripts/build-deb.sh ${1:+--qemu 10})"
[ -x "$OWN_BIN" ] || chpp_die "no $OWN_BIN (run scripts/build-qemu.sh ${1:+--qemu 10})"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/chpp-stock-refuse.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0

# run NAME EXPECTED-REASON|accept CMD...: one case.
run() {
    local name=$1 want=$2 rc=0
    shift 2
    "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null || rc=$?
    if [ "$want" = accept ]; then
        if [ "$rc" = 0 ] && grep -q '^chpp-hca options:' "$TMP/$name.out"; then
            echo "ok: $name: the device is registered"
            return
        fi
    elif [ "$rc" = 1 ] && grep -qF "chpp-hca: refusing to load the device into" "$TMP/$name.err" &&
         grep -qF -- "$want" "$TMP/$name.err" && ! grep -q 'chpp-hca options' "$TMP/$name.out"; then
        echo "ok: $name: refused ($(head -1 "$TMP/$name.err" | sed 's/.*: //'))"
        return
    fi
    echo "FAIL: $name: exit status $rc, expected ${want/#accept/the properties}; stderr:"
    sed 's/^/    /' "$TMP/$name.err"
    fail=1
}

# A copy of Debian's binary with the bytes OLD (hex) replaced by NEW.
patched_copy() {
    local out=$1 old=$2 new=$3
    /usr/bin/python3 - "$STOCK_BIN" "$out" "$old" "$new" <<'EOF'
import sys
data = open(sys.argv[1], 'rb').read()
old, new = bytes.fromhex(sys.argv[3]), bytes.fromhex(sys.argv[4])
assert len(old) == len(new) and data.count(old) == 1, 'pattern not unique'
open(sys.argv[2], 'wb').write(data.replace(old, new))
EOF
    chmod 755 "$out"
}

# Flip the last hex digit of a hex string.
flip() { local s=$1 c=${1: -1}; [ "$c" = 0 ] && c=1 || c=0; echo "${s%?}$c"; }

run accept accept "$ACCEPT" -device chpp-hca,help
CHPP_STOCK_QEMU="$OWN_BIN" \
    run modular "not a QEMU that loads modules" "$WRAPPER" -device chpp-hca,help

hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }
stamp=$(grep -ao -m1 'qemu_stamp_[0-9a-f]\{40\}' "$STOCK_BIN" | head -1)
mkdir -p "$TMP/qemu-stamp"
patched_copy "$TMP/qemu-stamp/qemu-system-x86_64" "$(hex "$stamp")" "$(hex "$(flip "$stamp")")"
CHPP_STOCK_QEMU="$TMP/qemu-stamp/qemu-system-x86_64" \
    run stamp "another QEMU build" "$WRAPPER" -device chpp-hca,help

id=$(readelf -n "$STOCK_BIN" | awk '/Build ID:/ { print $3 }')
mkdir -p "$TMP/qemu-buildid"
patched_copy "$TMP/qemu-buildid/qemu-system-x86_64" "$id" "$(flip "$id")"
CHPP_STOCK_QEMU="$TMP/qemu-buildid/qemu-system-x86_64" \
    run buildid "another binary of the same QEMU version" "$WRAPPER" -device chpp-hca,help

run other "not a QEMU that loads modules" env LD_PRELOAD="$LIB/chpp-hca-preload.so" /bin/true

if [ -n "${1:-}" ]; then
    CHPP_STOCK_QEMU="$STOCK_BIN" \
        run 7-on-10 "another QEMU build" "$LIB7/bin/qemu-system-x86_64" -device chpp-hca,help
    CHPP_STOCK_QEMU="$BIN7" CHPP_STOCK_MODULE_DIR="$LIB7/modules" \
        run 10-on-7 "another QEMU build" "$WRAPPER" -device chpp-hca,help
fi

[ "$fail" = 0 ] || chpp_die "the preload object accepted a QEMU it was not built for"
echo "all refusals as expected"
