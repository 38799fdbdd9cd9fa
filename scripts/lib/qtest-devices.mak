# The devices of the ASan build (scripts/build-qemu.sh --asan), whose
# binary only runs the chpp qtests (-machine q35 -nodefaults): the q35
# board with what it selects, PCIe root ports, chpp-hca. Linked into the
# QEMU tree as configs/devices/x86_64-softmmu/chpp-qtest.mak and used with
# --without-default-devices --with-devices-x86_64=chpp-qtest.
CONFIG_Q35=y
CONFIG_PCIE_PORT=y
CONFIG_CHPP_HCA=y
# In the committed migration streams of chpp-hca-compat-test (saved by a
# build with the default devices).
CONFIG_HPET=y
CONFIG_VMPORT=y
CONFIG_VMMOUSE=y
