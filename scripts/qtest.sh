#!/usr/bin/env bash
# Run one chpp-hca qtest executable from the QEMU build, with the environment
# QEMU's own meson gives qtests. Used by meson.build and for manual runs:
#
#   scripts/qtest.sh chpp-hca-test                 # all cases, glib output
#   scripts/qtest.sh chpp-hca-test -l              # list the test paths
#   scripts/qtest.sh chpp-hca-test -p /x86_64/chpp-hca/...   # one case
#   QTEST_LOG=1 scripts/qtest.sh chpp-hca-test -p ...        # log QMP/qtest traffic
#   scripts/qtest.sh --asan chpp-hca-test          # same test, QEMU built with
#                                                  # ASan+UBSan (build/qemu-asan)
#   scripts/qtest.sh --tsan chpp-hca-link-test     # QEMU built with TSan
#                                                  # (build/qemu-tsan)
#   scripts/qtest.sh --qemu10 chpp-hca-test        # the test as built into
#                                                  # QEMU 10.0 (build/qemu10)
#
# With --asan the test executable is still the one of build/qemu/ (it is only
# the driver); the QEMU it starts is build/qemu-asan/qemu-system-x86_64, and
# any ASan, LeakSanitizer or UBSan report makes that QEMU exit non-zero,
# which libqtest turns into a failed test.
#
# Variables already set in the environment win (e.g. QTEST_QEMU_BINARY).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

asan=0
tsan=0
QBUILD="$CHPP_QEMU_BUILD" QSRC="$CHPP_QEMU_SRC"
if [ "${1:-}" = --qemu10 ]; then
    QBUILD="$CHPP_QEMU10_BUILD" QSRC="$CHPP_QEMU10_SRC"
    shift
    case "${1:-}" in --asan|--tsan) chpp_die "QEMU 10.0 has no sanitizer build here (docs/build.md)" ;; esac
fi
if [ "${1:-}" = --asan ]; then asan=1; shift; fi
if [ "${1:-}" = --tsan ]; then tsan=1; shift; fi
[ $# -ge 1 ] || chpp_die "usage: $0 [--qemu10] [--asan|--tsan] QTEST-NAME [glib test args...]"
name=$1; shift
exe="$QBUILD/tests/qtest/$name"
[ -x "$exe" ] || chpp_die "no qtest executable build/$(basename "$QBUILD")/tests/qtest/$name (did scripts/build-qemu.sh succeed?)"

if [ "$asan" = 1 ]; then
    bin="$CHPP_BUILD/qemu-asan/qemu-system-x86_64"
    [ -x "$bin" ] || chpp_die "no $bin (run scripts/build-qemu.sh --asan)"
    export QTEST_QEMU_BINARY="$bin"
    # Fail on the first report of any kind. UBSan is also built with
    # -fno-sanitize-recover, so halt_on_error is belt and braces.
    # A small quarantine: the device's bounded-memory test measures QEMU's
    # peak RSS, which ASan's default 256 MiB quarantine of freed frames
    # would swamp (use-after-free detection keeps an 8 MiB window).
    export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=0:detect_leaks=1:exitcode=66:print_summary=1:quarantine_size_mb=8}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1:exitcode=67}"
    export LSAN_OPTIONS="${LSAN_OPTIONS:-exitcode=68:suppressions=$CHPP_ROOT/scripts/lib/lsan.supp:print_suppressions=0}"
fi
if [ "$tsan" = 1 ]; then
    bin="$CHPP_BUILD/qemu-tsan/qemu-system-x86_64"
    [ -x "$bin" ] || chpp_die "no $bin (run scripts/build-qemu.sh --tsan)"
    export QTEST_QEMU_BINARY="$bin"
    # QEMU 7.2's own core has known races (iothread start-up, RCU), so a
    # report does not end QEMU here; scripts/tsan.sh sorts the reports and
    # fails on any that has a device frame.
    export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=0:exitcode=0:second_deadlock_stack=1}"
fi
export QTEST_QEMU_BINARY="${QTEST_QEMU_BINARY:-$QBUILD/qemu-system-x86_64}"
# The repository's root: chpp-hca-compat-test reads its committed migration
# streams from tests/qtest/data/ there.
export CHPP_SOURCE_ROOT="$CHPP_ROOT"
export G_TEST_DBUS_DAEMON="${G_TEST_DBUS_DAEMON:-$QSRC/tests/dbus-vmstate-daemon.sh}"
# Run from the QEMU build directory, as QEMU's own qtests do.
cd "$QBUILD"
exec "$exe" "$@"
