#!/bin/sh
# qemu-system-x86_64 with -device chpp-hca: Debian's unmodified binary, the
# chpp-hca preload object and the project's extra QEMU modules (the qtest
# accelerator, which Debian does not ship). Installed by the qemu-chpp-hca
# package as <libdir>/qemu-chpp-hca/bin/qemu-system-x86_64 and linked from
# /usr/bin/qemu-system-x86_64-chpp; docs/build.md, "The device in Debian's
# QEMU". Works from the package or from the build tree (paths are relative
# to this script). CHPP_STOCK_QEMU and CHPP_STOCK_MODULE_DIR name another
# binary and module directory (a binary unpacked, not installed; the tests).
here=$(dirname "$(readlink -f "$0")")
lib=$(dirname "$here")
LD_PRELOAD="$lib/chpp-hca-preload.so${LD_PRELOAD:+:$LD_PRELOAD}"
QEMU_MODULE_DIR="${CHPP_STOCK_MODULE_DIR:-$lib/modules}"
export LD_PRELOAD QEMU_MODULE_DIR
exec "${CHPP_STOCK_QEMU:-@QEMU_BINARY@}" "$@"
