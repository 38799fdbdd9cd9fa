#!/usr/bin/env bash
# THE main job: prepare the machine, build QEMU with chpp-hca, then boot two
# Linux guests joined by a chpp-hca link, load the guest driver on both, and
# show verified RDMA traffic between them (scripts/pair.sh).
#
#   scripts/run.sh [pair.sh options] [-- extra QEMU args]
#   scripts/run.sh --listing [boot-guest.sh options]   the single-VM PCI listing
#
# e.g. scripts/run.sh --single           (one guest, loopback traffic)
#      scripts/run.sh --shell 1          (stay in guest 1's shell afterwards)
#      scripts/run.sh --gdb 1            (guest 1 waits for gdb on :1234)
# See scripts/pair.sh --help, scripts/boot-guest.sh --help and docs/build.md.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

"$CHPP_ROOT/scripts/setup.sh"
"$CHPP_ROOT/scripts/build-qemu.sh"
if [ "${1:-}" = --listing ]; then
    shift
    exec "$CHPP_ROOT/scripts/boot-guest.sh" --check "$@"
fi
exec "$CHPP_ROOT/scripts/pair.sh" "$@"
