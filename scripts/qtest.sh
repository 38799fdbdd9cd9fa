#!/usr/bin/env bash
# Run one chpp-hca qtest executable from the QEMU build, with the environment
# QEMU's own meson gives qtests. Used by meson.build and for manual runs:
#
#   scripts/qtest.sh chpp-hca-test                 # all cases, glib output
#   scripts/qtest.sh chpp-hca-test -l              # list the test paths
#   scripts/qtest.sh chpp-hca-test -p /x86_64/chpp-hca/...   # one case
#   QTEST_LOG=1 scripts/qtest.sh chpp-hca-test -p ...        # log QMP/qtest traffic
#
# Variables already set in the environment win (e.g. QTEST_QEMU_BINARY).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -ge 1 ] || chpp_die "usage: $0 QTEST-NAME [glib test args...]"
name=$1; shift
exe="$CHPP_QEMU_BUILD/tests/qtest/$name"
[ -x "$exe" ] || chpp_die "no qtest executable build/qemu/tests/qtest/$name (did scripts/build-qemu.sh succeed?)"

export QTEST_QEMU_BINARY="${QTEST_QEMU_BINARY:-$CHPP_QEMU_BIN}"
export G_TEST_DBUS_DAEMON="${G_TEST_DBUS_DAEMON:-$CHPP_QEMU_SRC/tests/dbus-vmstate-daemon.sh}"
# Run from the QEMU build directory, as QEMU's own qtests do.
cd "$CHPP_QEMU_BUILD"
exec "$exe" "$@"
