#!/usr/bin/env bash
# THE test command: prepare the machine, build QEMU with chpp-hca, then run
# every test of the project (meson.build: suites 'qtest' and 'e2e').
#
#   scripts/test.sh [meson test args...]   e.g. --suite e2e, chpp-hca-test, -v
#
# Exits non-zero on any failure, after printing the test log.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

"$CHPP_ROOT/scripts/setup.sh"
"$CHPP_ROOT/scripts/build-qemu.sh"

MESON=/usr/bin/meson
BLD="$CHPP_BUILD/meson"
if [ ! -f "$BLD/build.ninja" ]; then
    chpp_log "meson setup build/meson"
    if [ -d "$BLD" ]; then
        "$MESON" setup --wipe "$BLD" "$CHPP_ROOT"
    else
        "$MESON" setup "$BLD" "$CHPP_ROOT"
    fi
fi

chpp_log "meson test -C build/meson $*"
# meson exits 0 when the arguments select no test at all: a typo in a test
# or suite name must not read as a pass.
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
rc=0
"$MESON" test -C "$BLD" "$@" 2>&1 | tee "$OUT" || rc=$?
[ "$rc" != 0 ] || ! grep -q 'No suitable tests defined' "$OUT" ||
    chpp_die "no test matches '$*' (meson test --list -C build/meson lists them)"
if [ "$rc" != 0 ]; then
    log="$BLD/meson-logs/testlog.txt"
    if [ -f "$log" ]; then
        chpp_log "---- $log ----"
        cat "$log" >&2
        chpp_log "---- end of $log ----"
    fi
    # Again, only the failures, last: a log cut to its end still shows them.
    json="$BLD/meson-logs/testlog.json"
    [ ! -f "$json" ] || python3 "$CHPP_ROOT/scripts/lib/failed-tests.py" "$json" >&2
    chpp_die "tests failed"
fi
chpp_log "all tests passed"
