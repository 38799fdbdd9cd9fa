# gdb helper for the guest driver (guest-driver/chpp_hca.ko) in a guest
# kernel attached through QEMU's gdbstub.  scripts/gdb-guest.sh sets it all
# up; by hand:
#
#   (gdb) source scripts/gdb/chpp-guest.py
#   (gdb) chpp-ksyms build/guest/ksyms-<kernel>.map   # unless vmlinux is loaded
#   (gdb) target remote ...
#   (gdb) chpp-load-module --wait   # run until chpp_hca loads, stop before its
#                                   # init, load its symbols at its addresses
#   (gdb) chpp-load-module          # or: symbols of the chpp_hca loaded now
#   (gdb) chpp-modules              # the guest's loaded modules
#
# How the addresses are found, without the kernel's debug image: the kernel's
# list of modules (`modules`) and the function that runs a new module's init
# (`do_init_module`) come from the kernel's own symbol table, read once from
# the guest's /proc/kallsyms (the guest boots with nokaslr, so they do not
# move) or from vmlinux when the -dbg package is installed.  The layout of
# `struct module` comes from the DWARF of the .ko itself: every module
# defines __this_module, so its debug info describes struct module and
# struct mod_kallsyms for exactly the kernel it was built against.  The
# section addresses come from the module's symbol table in guest memory
# (mod->kallsyms): the kernel relocates every symbol's value to its final
# address and keeps its section index, so "runtime value - value in the
# .ko" is the section's load address.  Every symbol of a section must agree,
# and __this_module must land on the struct module itself, or the command
# refuses to load anything.  These are the addresses the kernel shows in
# /sys/module/chpp_hca/sections/.
#
# gdb reads the symbols from the .ko itself, unless one of its loaded
# sections has a non-zero address in the file: Kbuild 6.12 links .data
# after __patchable_function_entries without resetting the location
# counter (.data at 0x320 in the .ko), and gdb then places the debug info's
# .data and .bss addresses by .text's offset.  The kernel ignores those
# addresses (it lays out each section itself), so gdb gets a copy with all
# of them zero, which is what 6.1's Kbuild writes.
import hashlib
import os
import struct
import tempfile

import gdb

HERE = os.path.dirname(os.path.abspath(__file__))
# chpp_hca.ko as built for the guest's kernel (scripts/gdb-guest.sh sets
# CHPP_GUEST_KO), else the default guest kernel's (make -C guest-driver).
DEFAULT_KO = os.environ.get("CHPP_GUEST_KO") or os.path.normpath(os.path.join(
    HERE, "../../build/guest/kmod-%s/chpp_hca.ko" % os.popen(
        "make -s -C %s kver" % os.path.join(HERE, "../../guest-driver")).read().strip()))

SHF_ALLOC = 0x2
SH_ADDR = 0x10          # offset of sh_addr in an Elf64_Shdr
SHT_SYMTAB = 2
STT_SECTION = 3
ELF_SYM = struct.Struct("<IBBHQQ")   # Elf64_Sym: name info other shndx value size
# Sections the kernel reads but does not keep (their symbols point nowhere).
NOT_LOADED = (".modinfo", "__versions")

ksyms = {}          # kernel symbol -> address, from chpp-ksyms


class KoFile:
    """The sections and symbols of a relocatable ELF64 little-endian .ko."""

    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise gdb.GdbError("%s: not an ELF64 little-endian file" % path)
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
        hdrs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
        names = hdrs[shstrndx]

        def cstr(off):
            return data[off:data.index(b"\0", off)].decode()

        self.path = path
        self.sections = []          # (name, flags) by section index
        self.contents = {}          # name -> bytes in the file
        linked = []                 # file offsets of non-zero sh_addr fields
        for i, h in enumerate(hdrs):
            name = cstr(names[4] + h[0])
            self.sections.append((name, h[2]))
            self.contents[name] = data[h[4]:h[4] + h[5]] if h[1] != 8 else b""
            if h[2] & SHF_ALLOC and h[3]:
                linked.append(shoff + i * shentsize + SH_ADDR)
        self.gdb_path = self.unlinked_copy(data, linked) if linked else path
        self.syms = []              # (name, type, shndx, value) by index
        for h in hdrs:
            if h[1] != SHT_SYMTAB:
                continue
            strtab = hdrs[h[6]]
            for off in range(h[4], h[4] + h[5], ELF_SYM.size):
                n, info, _, shndx, value, _ = ELF_SYM.unpack_from(data, off)
                self.syms.append((cstr(strtab[4] + n), info & 0xf, shndx, value))
        if not self.syms:
            raise gdb.GdbError("%s has no symbol table" % path)
        if ".debug_info" not in self.contents:
            raise gdb.GdbError("%s has no DWARF: build it against a kernel with "
                               "CONFIG_DEBUG_INFO, or add -g to ccflags-y" % path)

    def unlinked_copy(self, data, linked):
        """The .ko with every section address zero, for gdb (see the top):
        a file of its own per .ko path, replaced whole (gdb may hold the
        previous one open)."""
        data = bytearray(data)
        for off in linked:
            struct.pack_into("<Q", data, off, 0)
        d = os.path.join(tempfile.gettempdir(), "chpp-gdb-%d" % os.getuid())
        os.makedirs(d, mode=0o700, exist_ok=True)
        out = os.path.join(d, "%s-%s" % (hashlib.sha1(self.path.encode()).hexdigest()[:12],
                                         os.path.basename(self.path)))
        fd, tmp = tempfile.mkstemp(dir=d)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, out)
        return out

    def loaded(self, shndx):
        """True for a section the kernel loads (not debug info, not .modinfo)."""
        if shndx == 0 or shndx >= len(self.sections):
            return False
        name, flags = self.sections[shndx]
        return bool(flags & SHF_ALLOC) and name not in NOT_LOADED

    def symbol(self, name):
        for s in self.syms:
            if s[0] == name:
                return s
        raise gdb.GdbError("%s: no symbol %s" % (self.path, name))


def read(addr, size):
    return bytes(gdb.selected_inferior().read_memory(addr, size))


def u64(addr):
    return struct.unpack("<Q", read(addr, 8))[0]


def u32(addr):
    return struct.unpack("<I", read(addr, 4))[0]


def cstring(addr, maxlen=128):
    return read(addr, maxlen).split(b"\0", 1)[0].decode(errors="replace")


def ksym(name):
    """Address of a kernel symbol: chpp-ksyms table, else vmlinux."""
    if name in ksyms:
        return ksyms[name]
    try:
        return int(gdb.parse_and_eval("(unsigned long)&'%s'" % name))
    except gdb.error:
        raise gdb.GdbError("no address for kernel symbol %s: load a symbol "
                           "table with chpp-ksyms FILE or vmlinux" % name)


def check_kernel():
    """The symbol table belongs to the running kernel (linux_banner is where
    it says).  Catches a guest booted without nokaslr."""
    try:
        addr = ksym("linux_banner")
    except gdb.GdbError:
        return                  # nothing to check with
    try:
        banner = read(addr, 13)
    except gdb.MemoryError:
        raise gdb.GdbError("cannot read the kernel's linux_banner at 0x%x: is the "
                           "kernel running yet, booted with nokaslr?" % addr)
    if banner != b"Linux version":
        raise gdb.GdbError("the kernel symbol addresses do not match the running "
                           "kernel (boot it with nokaslr; symbols of another "
                           "kernel?)")


class Layout:
    """Offsets in struct module and struct mod_kallsyms, from a .ko's DWARF."""

    def __init__(self, ko):
        loaded = [o for o in gdb.objfiles() if o.filename == ko.gdb_path]
        if not loaded:
            # Only for the types: no address is used.
            run("add-symbol-file %s 0" % ko.gdb_path)
        try:
            mod = gdb.lookup_type("struct module")
            kas = gdb.lookup_type("struct mod_kallsyms")
            self.list = self.offset(mod, "list")
            self.name = self.offset(mod, "name")
            self.name_len = mod["name"].type.sizeof
            self.kallsyms = self.offset(mod, "kallsyms")
            self.symtab = self.offset(kas, "symtab")
            self.num_symtab = self.offset(kas, "num_symtab")
            self.strtab = self.offset(kas, "strtab")
        finally:
            if not loaded:
                run("remove-symbol-file %s" % ko.gdb_path)

    @staticmethod
    def offset(t, field):
        for f in t.fields():
            if f.name == field:
                return f.bitpos // 8
        raise gdb.GdbError("%s has no field %s (kernel without kallsyms?)" % (t, field))

    def module_name(self, mod):
        return cstring(mod + self.name, self.name_len)


def run(cmd):
    """A gdb command without its confirmation question and chatter."""
    confirm = gdb.parameter("confirm")
    gdb.execute("set confirm off")
    try:
        return gdb.execute(cmd, to_string=True)
    finally:
        gdb.execute("set confirm %s" % ("on" if confirm else "off"))


def modules(lay):
    """(address, name) of every module on the kernel's list."""
    head = ksym("modules")
    p = u64(head)
    out = []
    while p != head and len(out) < 4096:
        mod = p - lay.list
        out.append((mod, lay.module_name(mod)))
        p = u64(p)
    return out


def section_bases(ko, lay, mod):
    """{section index: load address} from the module's symbols in memory."""
    kas = u64(mod + lay.kallsyms)
    symtab, num, strtab = u64(kas + lay.symtab), u32(kas + lay.num_symtab), u64(kas + lay.strtab)
    if not 0 < num < 1 << 20:
        raise gdb.GdbError("module at 0x%x: implausible symbol count %d" % (mod, num))
    raw = read(symtab, num * ELF_SYM.size)
    rt = [ELF_SYM.unpack_from(raw, i * ELF_SYM.size) for i in range(num)]
    seen = {}                       # shndx -> {base: symbol name}
    if num == len(ko.syms):
        # The module is still initialising: mod->kallsyms is its whole
        # .symtab, entry for entry, section symbols included.
        for i, (kname, _, kshndx, kvalue) in enumerate(ko.syms):
            shndx, value = rt[i][3], rt[i][4]
            if shndx != kshndx:
                raise gdb.GdbError("symbol %d (%s) is in section %d in memory, %d in %s"
                                   % (i, kname, shndx, kshndx, ko.path))
            if ko.loaded(shndx):
                seen.setdefault(shndx, {})[value - kvalue] = kname
        for i, s in enumerate(ko.syms):
            if s[0] and s[1] != STT_SECTION and ko.loaded(s[2]):
                name = cstring(strtab + rt[i][0])
                if name != s[0]:
                    raise gdb.GdbError("symbol %d is %s in memory, %s in %s"
                                       % (i, name, s[0], ko.path))
                break
    else:
        # After init the kernel keeps a shorter table of the core symbols:
        # match them by name and section, three per section.
        byname = {(s[0], s[2]): s[3] for s in ko.syms if s[0]}
        used = {}
        for name_off, _, _, shndx, value, _ in rt:
            if not name_off or not ko.loaded(shndx) or used.get(shndx, 0) >= 3:
                continue
            name = cstring(strtab + name_off)
            if (name, shndx) in byname:
                seen.setdefault(shndx, {})[value - byname[(name, shndx)]] = name
                used[shndx] = used.get(shndx, 0) + 1
    bases = {}
    for shndx, found in seen.items():
        if len(found) != 1:
            raise gdb.GdbError("section %s: its symbols disagree on its address (%s)"
                               % (ko.sections[shndx][0],
                                  ", ".join("%s at 0x%x" % (n, b) for b, n in found.items())))
        bases[shndx] = next(iter(found))
    # __this_module is the struct module: the cross-check of the whole method.
    _, _, shndx, value = ko.symbol("__this_module")
    if bases.get(shndx, -1) + value != mod:
        raise gdb.GdbError("__this_module would be at 0x%x, the module is at 0x%x"
                           % (bases.get(shndx, -1) + value, mod))
    return bases


def load_symbols(ko, lay, mod):
    bases = section_bases(ko, lay, mod)
    names = {ko.sections[i][0]: a for i, a in bases.items()}
    if ".text" not in names:
        raise gdb.GdbError("no .text address for %s" % ko.path)
    # Another build of the same source can have the same layout and other
    # line numbers: compare the build ids when the note's address is known
    # (always before init, where the section symbols are kept).
    note = ko.contents.get(".note.gnu.build-id")
    if note and ".note.gnu.build-id" in names \
            and read(names[".note.gnu.build-id"], len(note)) != note:
        raise gdb.GdbError("the module in the guest is another build than %s "
                           "(build ids differ): rebuild, then restart the guest"
                           % ko.path)
    for o in gdb.objfiles():
        if o.filename == ko.gdb_path:
            run("remove-symbol-file %s" % ko.gdb_path)
    cmd = "add-symbol-file %s 0x%x" % (ko.gdb_path, names[".text"])
    for name, addr in sorted(names.items(), key=lambda x: x[1]):
        if name != ".text":
            cmd += " -s %s 0x%x" % (name, addr)
    run(cmd)
    print("chpp-load-module: %s at 0x%x, symbols from %s"
          % (lay.module_name(mod), mod, ko.path))
    for name, addr in sorted(names.items(), key=lambda x: x[1]):
        print("  section %s 0x%x" % (name, addr))


class LoadBreakpoint(gdb.Breakpoint):
    """Stops at do_init_module(mod) for one module name only."""

    def __init__(self, lay, name):
        super().__init__("*0x%x" % ksym("do_init_module"), internal=True)
        self.silent = True      # chpp-load-module says why it stopped
        self.lay, self.want, self.mod = lay, name, None

    def stop(self):
        mod = int(gdb.parse_and_eval("$rdi")) & 0xffffffffffffffff
        if self.lay.module_name(mod) != self.want:
            return False
        self.mod = mod
        return True


def module_name_of(path):
    return os.path.basename(path)[:-len(".ko")].replace("-", "_")


class LoadModule(gdb.Command):
    """Load a guest module's symbols (default: chpp_hca.ko of build/guest/kmod-KVER/) at its
addresses in the guest kernel.
Usage: chpp-load-module [--wait] [PATH]
  --wait  continue until the kernel loads the module and stop before its init
          function runs (probe comes after); without it the module must be
          loaded already.
Kernel symbols come from chpp-ksyms or from vmlinux."""

    def __init__(self):
        super().__init__("chpp-load-module", gdb.COMMAND_FILES, gdb.COMPLETE_FILENAME)

    def invoke(self, arg, from_tty):
        args = gdb.string_to_argv(arg)
        wait = "--wait" in args
        args = [a for a in args if a != "--wait"]
        path = os.path.abspath(os.path.expanduser(args[0])) if args else DEFAULT_KO
        if not os.path.isfile(path):
            raise gdb.GdbError("no module file %s (build it: make -C guest-driver)" % path)
        ko = KoFile(path)
        lay = Layout(ko)
        name = module_name_of(path)
        if not wait:
            check_kernel()
            found = [m for m, n in modules(lay) if n == name]
            if not found:
                raise gdb.GdbError("%s is not loaded (chpp-load-module --wait stops "
                                   "when it loads)" % name)
            load_symbols(ko, lay, found[0])
            return
        bp = LoadBreakpoint(lay, name)
        try:
            gdb.execute("continue")
            mod = bp.mod
        except gdb.error as e:
            raise gdb.GdbError("the guest stopped running before %s loaded (%s); "
                               "was it booted with nokaslr?" % (name, e))
        finally:
            if bp.is_valid():
                bp.delete()
        if mod is None:
            print("chpp-load-module: stopped before %s loaded" % name)
            return
        check_kernel()
        load_symbols(ko, lay, mod)
        print("chpp-load-module: stopped in do_init_module, before %s's init" % name)


class Modules(gdb.Command):
    """List the guest kernel's loaded modules: chpp-modules [PATH-of-a-.ko]
(the .ko, default chpp_hca.ko, only provides the layout of struct module)."""

    def __init__(self):
        super().__init__("chpp-modules", gdb.COMMAND_STATUS, gdb.COMPLETE_FILENAME)

    def invoke(self, arg, from_tty):
        args = gdb.string_to_argv(arg)
        check_kernel()
        lay = Layout(KoFile(os.path.abspath(args[0]) if args else DEFAULT_KO))
        for mod, name in modules(lay):
            print("0x%x %s" % (mod, name))


class Ksyms(gdb.Command):
    """Read kernel symbol addresses: chpp-ksyms FILE
FILE has lines "ADDRESS TYPE NAME" (/proc/kallsyms or System.map format).
The chpp-load-module commands need `modules`, `do_init_module` and
`linux_banner` (to check the addresses belong to the running kernel)."""

    def __init__(self):
        super().__init__("chpp-ksyms", gdb.COMMAND_FILES, gdb.COMPLETE_FILENAME)

    def invoke(self, arg, from_tty):
        args = gdb.string_to_argv(arg)
        if len(args) != 1:
            raise gdb.GdbError("usage: chpp-ksyms FILE")
        n = 0
        with open(os.path.expanduser(args[0])) as f:
            for line in f:
                w = line.split()
                if len(w) >= 3:
                    ksyms[w[2]] = int(w[0], 16)
                    n += 1
        print("chpp-ksyms: %d kernel symbols from %s" % (n, args[0]))


Ksyms()
LoadModule()
Modules()
