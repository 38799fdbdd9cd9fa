#!/usr/bin/env bash
# THE main job: prepare the machine, build QEMU with chpp-hca, then boot one
# Linux guest with the device and show the guest's PCI listing.
#
#   scripts/run.sh [boot-guest.sh options] [-- extra QEMU args]
#
# e.g. scripts/run.sh --shell            (stay in a guest shell)
#      scripts/run.sh -- -s -S           (wait for gdb on :1234)
# See scripts/boot-guest.sh --help and docs/build.md.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

"$CHPP_ROOT/scripts/setup.sh"
"$CHPP_ROOT/scripts/build-qemu.sh"
"$CHPP_ROOT/scripts/boot-guest.sh" --check "$@"
