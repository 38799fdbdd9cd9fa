#!/usr/bin/env bash
# The 'share-reload' e2e test: the developer's loop of docs/guest-driver.md.
# One guest with the checkout on /host (pair.sh --single --share) loads
# chpp_hca.ko from /host/build/guest/kmod-KVER/ (the file built on this
# host); then the module file is replaced as a rebuild does (a new file
# with a new time), and the running guest must unload the driver, load the
# new file and bring its port ACTIVE again, twice, without a reboot.
#
#   scripts/checks/share-reload-check.sh [--kernel K]
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

KSPEC=""
[ "${1:-}" = --kernel ] && KSPEC=$2
chpp_guest_kernel "$KSPEC"
KO="$(chpp_guest_kmod_dir "$CHPP_KVER")/chpp_hca.ko"
CONSOLE="$CHPP_BUILD/guest/single-node1.log"
OUT=$(mktemp /tmp/chpp-share.XXXXXX)
PAIR=""
cleanup() {
    [ -z "$PAIR" ] || { kill "$PAIR" 2>/dev/null || true; wait "$PAIR" 2>/dev/null || true; }
    rm -f "$OUT"
}
trap cleanup EXIT
fail() { tail -n 30 "$OUT" >&2; chpp_log "FAIL: $*"; exit 1; }

rm -f "$CONSOLE"     # no line of an earlier run may count
"$CHPP_ROOT/scripts/pair.sh" --single --share --timeout 300 --kernel "$CHPP_KERNEL" \
    --kargs chpp.reloads=2 >"$OUT" 2>&1 &
PAIR=$!
# wait_for PATTERN N SECS: N lines with PATTERN in the console while pair.sh runs
wait_for() {
    local i
    for i in $(seq "$(($3 * 2))"); do
        [ "$(tr -d '\r' <"$CONSOLE" 2>/dev/null | grep -ac "$1")" -ge "$2" ] && return 0
        kill -0 "$PAIR" 2>/dev/null || return 1
        sleep 0.5
    done
    return 1
}
# a rebuild: a new file in place of the old one, with a new time
rebuild() {
    cp "$KO" "$KO.new"
    touch -d "@$(($(stat -c %Y "$KO") + 1))" "$KO.new"
    mv "$KO.new" "$KO"
}
wait_for 'chpp-guest: watching' 1 240 || fail "the guest never watched /host (no 9p mount or driver load)"
grep -aq "chpp-guest: host checkout on /host; driver from /host/build/guest/kmod-$CHPP_KVER" "$CONSOLE" ||
    fail "the driver was not loaded from the share"
for n in 1 2; do
    rebuild
    wait_for "chpp-guest: reloaded chpp_hca .*ACTIVE" "$n" 60 || fail "reload $n did not happen"
    chpp_log "reload $n: $(tr -d '\r' <"$CONSOLE" | grep -a 'chpp-guest: reloaded' | tail -n 1)"
done
rc=0
wait "$PAIR" || rc=$?
PAIR=""
[ "$rc" = 0 ] || fail "pair.sh ended with status $rc"
grep -aq 'chpp-guest: RESULT PASS driver reloaded 2 time' "$CONSOLE" || fail "no RESULT PASS"
chpp_log "PASS: kernel $CHPP_KVER, the driver reloaded twice from the host's checkout"
