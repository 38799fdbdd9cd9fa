#!/usr/bin/env bash
# The long nested-passthrough test (docs/vfio-passthrough.md): a first-level
# guest with an emulated Intel IOMMU enables two chpp-hca VFs, binds them to
# vfio-pci and runs the project's QEMU under TCG with -device vfio-pci for
# both; the nested guest boots the same kernel, chpp_hca binds the VFs (its
# interrupt self-test is MSI-X through interrupt remapping and VFIO), the
# kernel verbs client moves data on one, ibv_rc_pingpong runs between them
# through the chpp provider, and the raw program moves data between them
# with PUT, GET and NAP. Slow (nested TCG).
#
#   scripts/nested.sh [--timeout SEC] [pair.sh options]
#
# Console: build/guest/nested-node1.log. Exit status 0 on PASS.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/pair.sh" --nested --timeout 3600 "$@"
