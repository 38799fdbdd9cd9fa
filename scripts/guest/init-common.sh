# shellcheck shell=sh
# The prologue of every guest /init (scripts/guest/*-init.sh), sourced
# first as /chpp/init-common.sh; scripts/lib/initramfs.sh puts it and the
# generated /chpp/ids.sh into every initramfs. Runs under busybox sh.
#
# It installs busybox's applets, mounts /proc, /sys, /dev and debugfs,
# reads the PCI ids of chpp-hca (/chpp/ids.sh: CHPP_PCI_VENDOR_ID,
# CHPP_PCI_DEVICE_ID_PF, CHPP_PCI_DEVICE_ID_VF, from the ABI header) and
# defines the helpers the stages share:
#
#   chpp_arg NAME          the value of chpp.NAME=VALUE on the kernel command line
#   chpp_pci_find DEVID    the addresses of the chpp-hca functions (vendor
#                          CHPP_PCI_VENDOR_ID) with device id DEVID, one a line
#   chpp_load_modules      insmod /lib/modules/$(uname -r)/*.ko in the order
#                          of load.list; on failure prints the module, status 1
#   chpp_end [WHAT]        with chpp.shell=1 a shell on the console first
#                          (WHAT: what there is to look at), then power off

/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null

. /chpp/ids.sh
CHPP_MODDIR=/lib/modules/$(uname -r)

chpp_arg() { sed -n "s/.*chpp\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }

chpp_pci_find() {
    local d
    for d in /sys/bus/pci/devices/*; do
        [ -e "$d/vendor" ] || continue
        [ $(($(cat "$d/vendor"))) = $((CHPP_PCI_VENDOR_ID)) ] &&
            [ $(($(cat "$d/device"))) = $(($1)) ] && echo "${d##*/}"
    done
    return 0
}

chpp_load_modules() {
    local m
    while read -r m; do
        insmod "$CHPP_MODDIR/$m.ko" || { echo "$m"; return 1; }
    done <"$CHPP_MODDIR/load.list"
}

chpp_end() {
    if [ "$(chpp_arg shell)" = 1 ]; then
        echo "chpp-guest: shell${1:+ ($1)}. 'poweroff -f' to quit."
        setsid cttyhack sh
    fi
    poweroff -f
}
