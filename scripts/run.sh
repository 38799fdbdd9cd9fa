#!/usr/bin/env bash
# THE main job: prepare the machine, build -device chpp-hca for Debian's
# installed QEMU (scripts/build-deb.sh: no QEMU rebuild), then boot two Linux
# guests joined by a chpp-hca link, load the guest driver on both, and show
# verified RDMA traffic between them (scripts/pair.sh).
#
#   scripts/run.sh [--from-source] [pair.sh options] [-- extra QEMU args]
#   scripts/run.sh [--from-source] --listing [boot-guest.sh options]
#                                         the single-VM PCI listing
#
#   --from-source   build QEMU with the device from source (scripts/
#                   build-qemu.sh, build/qemu/) and run that instead
#
# e.g. scripts/run.sh --single           (one guest, loopback traffic)
#      scripts/run.sh --shell 1          (stay in guest 1's shell afterwards)
#      scripts/run.sh --gdb 1            (guest 1 waits for gdb on :1234)
# See scripts/pair.sh --help, scripts/boot-guest.sh --help and docs/build.md.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

"$CHPP_ROOT/scripts/setup.sh"
if [ "${1:-}" = --from-source ]; then
    shift
    "$CHPP_ROOT/scripts/build-qemu.sh"
    QEMU="$CHPP_QEMU_BIN"
else
    "$CHPP_ROOT/scripts/build-deb.sh"
    QEMU="$CHPP_STOCK_BIN"
fi
if [ "${1:-}" = --listing ]; then
    shift
    exec "$CHPP_ROOT/scripts/boot-guest.sh" --qemu "$QEMU" --check "$@"
fi
exec "$CHPP_ROOT/scripts/pair.sh" --qemu "$QEMU" "$@"
