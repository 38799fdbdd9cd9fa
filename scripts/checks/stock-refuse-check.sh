#!/usr/bin/env bash
# The 'stock-refuse' test: the chpp-hca preload object (scripts/build-deb.sh)
# loads the device only into the QEMU build it was compiled against and
# refuses every other program with its message and exit status 1, before
# any device code runs (docs/build.md, "Mismatch detection").
#
#   scripts/checks/stock-refuse-check.sh
#
# Cases, each with `-device chpp-hca,help` (which lists the device's
# properties only where the device is registered):
#   accept   Debian's binary: the properties are listed (the control case:
#            the refusals below are not the wrapper failing anyway)
#   modular  this project's own QEMU build (build/qemu/, patched, not
#            modular: its symbols are not exported)
#   stamp    a copy of Debian's binary whose module stamp is changed (as
#            another version, package version or configure script gives)
#   buildid  a copy of Debian's binary whose GNU build-id is changed (the
#            same version rebuilt)
#   other    a program that is not QEMU (/bin/true with the object preloaded)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

ARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
LIB="$CHPP_BUILD/stock/root/usr/lib/$ARCH/qemu-chpp-hca"
WRAPPER="$LIB/bin/qemu-system-x86_64"
STOCK_BIN=/usr/bin/qemu-system-x86_64
[ -x "$WRAPPER" ] || chpp_die "no $WRAPPER (run scripts/build-deb.sh)"
[ -x "$CHPP_QEMU_BIN" ] || chpp_die "no $CHPP_QEMU_BIN (run scripts/build-qemu.sh)"

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

run accept accept "$WRAPPER" -device chpp-hca,help
CHPP_STOCK_QEMU="$CHPP_QEMU_BIN" \
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

[ "$fail" = 0 ] || chpp_die "the preload object accepted a QEMU it was not built for"
echo "all refusals as expected"
