#!/usr/bin/env bash
# End-to-end check of scripts/gdb/chpp-hca.py: start QEMU with two
# chpp-hca devices, attach gdb in batch mode and require the helper to print
# both devices' state.  Used by meson test 'gdb-state' (suite e2e).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

command -v gdb >/dev/null || chpp_die "gdb is missing (scripts/setup.sh installs it)"
out=$(mktemp)
"$CHPP_QEMU_BIN" -M q35 -nodefaults -display none -S -L "$CHPP_QEMU_BUILD/qemu-bundle/usr/local/share/qemu" \
    -device chpp-hca,node-id=7,num-qps=4 -device chpp-hca,node-id=9 &
qemu=$!
trap 'kill $qemu 2>/dev/null || true; rm -f "$out"' EXIT
sleep 1
gdb -p "$qemu" -batch -nx -x "$CHPP_ROOT/scripts/gdb/chpp-hca.py" \
    -ex 'chpp-state' -ex 'chpp-state 9' >"$out" 2>&1 || true
cat "$out"
grep -q '^chpp-hca node 7: hca-init False' "$out"
grep -q '^chpp-hca node 9:' "$out"
[ "$(grep -c '^chpp-hca node 9:' "$out")" -eq 2 ]
grep -q 'port 1: DOWN (open False)' "$out"
grep -q 'counters: cmds 0' "$out"
echo "gdb-state: ok"
