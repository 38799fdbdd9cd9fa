#!/bin/busybox sh
# /init of the listing guest's initramfs (built by scripts/boot-guest.sh
# with scripts/lib/initramfs.sh; runs under busybox). Lists every PCI
# function lspci-style from sysfs, then powers off, or starts a shell when
# the kernel command line has chpp.shell=1.
#
# Output format (parsed by boot-guest.sh --check; keep in sync), VVVV:DDDD
# the vendor and device id in hex:
#   === chpp-guest: pci begin ===
#   0000:01:00.0 VVVV:DDDD class 0x020700 rev 0x01 subsys 1af4:1100 irq 16 driver -
#     caps: PM MSI-X PCIe; ext: AER SR-IOV
#     BAR0 mem 0x00000000fe000000 size 0x100000 [64-bit, prefetchable]
#     ROM  mem ...
#   === chpp-guest: pci end (N functions) ===

. /chpp/init-common.sh

hex() { printf '0x%x' "$1"; }

# Kernel IORESOURCE_* flags (include/linux/ioport.h).
IO=0x100 MEM=0x200 PREFETCH=0x2000 MEM64=0x100000 DISABLED=0x10000000 UNSET=0x20000000

# Name of resource line $1 of a function's sysfs "resource" file:
# 0-5 BARs, 6 expansion ROM, 7-12 SR-IOV VF BARs, 13-16 bridge windows.
res_name() {
    if [ "$1" -le 5 ]; then echo "BAR$1"
    elif [ "$1" -eq 6 ]; then echo "ROM "
    elif [ "$1" -le 12 ]; then echo "VF-BAR$(($1 - 7))"
    else echo "WINDOW$(($1 - 13))"
    fi
}

list_resources() {
    local i=0 start end flags kind attrs size
    while read -r start end flags; do
        if [ $((flags)) -ne 0 ] || [ $((end)) -ne 0 ]; then
            if [ $((flags & IO)) -ne 0 ]; then kind=io
            elif [ $((flags & MEM)) -ne 0 ]; then kind=mem
            else kind=other; fi
            attrs=""
            [ $((flags & MEM64)) -ne 0 ] && attrs="$attrs, 64-bit"
            [ $((flags & MEM)) -ne 0 ] && [ $((flags & MEM64)) -eq 0 ] && attrs="$attrs, 32-bit"
            [ $((flags & PREFETCH)) -ne 0 ] && attrs="$attrs, prefetchable" ||
                { [ $((flags & MEM)) -ne 0 ] && attrs="$attrs, non-prefetchable"; }
            [ $((flags & DISABLED)) -ne 0 ] && attrs="$attrs, disabled"
            [ $((flags & UNSET)) -ne 0 ] && attrs="$attrs, unassigned"
            size=0
            [ $((end)) -ne 0 ] && size=$((end - start + 1))
            attrs=${attrs#, }
            printf '  %-7s %-5s %s size %s%s flags %s\n' "$(res_name $i)" "$kind" \
                "$start" "$(hex $size)" "${attrs:+ [$attrs]}" "$(hex $flags)"
        fi
        i=$((i + 1))
    done <"$1"
}

# Little-endian value of $3 bytes (1, 2 or 4) at offset $2 of config file $1.
cfg() { printf '%d' "0x$(od -An -tx"${3:-1}" -j $(($2)) -N "${3:-1}" "$1" | tr -d ' \n')"; }

# Capabilities of the function with sysfs config space file $1.
list_caps() {
    local f=$1 n ptr id caps="" ext="" guard=0 hdr
    # Status register bit 4: capability list present.
    if [ $(( $(cfg "$f" 6 2) & 0x10 )) -ne 0 ]; then
        ptr=$(( $(cfg "$f" 0x34) & 0xfc ))
        while [ "$ptr" -ne 0 ] && [ $guard -lt 48 ]; do
            id=$(cfg "$f" $ptr)
            case $id in
                1) n=PM ;; 3) n=VPD ;; 5) n=MSI ;; 9) n=VNDR ;; 13) n=SSVID ;; 16) n=PCIe ;;
                17) n=MSI-X ;; 18) n=SATA ;; 19) n=AF ;; 20) n=EA ;;
                *) n=$(printf 'cap%02x' "$id") ;;
            esac
            caps="$caps $n"
            ptr=$(( $(cfg "$f" $((ptr + 1))) & 0xfc ))
            guard=$((guard + 1))
        done
    fi
    # PCIe extended capabilities (config space larger than 256 bytes).
    if [ "$(stat -c %s "$f")" -gt 256 ]; then
        ptr=256 guard=0
        while [ "$ptr" -ge 256 ] && [ $guard -lt 64 ]; do
            hdr=$(cfg "$f" $ptr 4)
            [ "$hdr" -eq 0 ] && break
            id=$((hdr & 0xffff))
            case $id in
                1) n=AER ;; 3) n=DSN ;; 11) n=VSEC ;; 13) n=ACS ;; 14) n=ARI ;;
                16) n=SR-IOV ;; 21) n=ResizableBAR ;; 23) n=TPH ;; 24) n=LTR ;;
                *) n=$(printf 'ext%04x' "$id") ;;
            esac
            ext="$ext $n"
            ptr=$(( (hdr >> 20) & 0xffc ))
            guard=$((guard + 1))
        done
    fi
    echo "  caps:${caps:- none}; ext:${ext:- none}"
}

list_pci() {
    local d n=0 addr irq drv sv sd
    # Leading newline: firmware escape sequences may precede us on the line.
    echo
    echo "=== chpp-guest: pci begin ==="
    for d in /sys/bus/pci/devices/*; do
        [ -e "$d/vendor" ] || continue
        addr=${d##*/}
        irq=$(cat "$d/irq" 2>/dev/null || echo -)
        drv=-
        [ -e "$d/driver" ] && drv=$(basename "$(readlink "$d/driver")")
        sv=$(cat "$d/subsystem_vendor" 2>/dev/null || echo 0x0000)
        sd=$(cat "$d/subsystem_device" 2>/dev/null || echo 0x0000)
        echo "$addr $(sed 's/^0x//' "$d/vendor"):$(sed 's/^0x//' "$d/device")" \
             "class $(cat "$d/class") rev $(cat "$d/revision" 2>/dev/null || echo -)" \
             "subsys ${sv#0x}:${sd#0x} irq $irq driver $drv"
        list_caps "$d/config"
        list_resources "$d/resource"
        n=$((n + 1))
    done
    echo "=== chpp-guest: pci end ($n functions) ==="
}

list_pci
chpp_end "busybox; devmem, od, hexdump available"
