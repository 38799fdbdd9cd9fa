/*
 * chpp-hca preload loader: puts -device chpp-hca into Debian's unmodified
 * qemu-system-x86_64 (docs/build.md, "The device in Debian's QEMU").
 *
 * The wrapper (stock/qemu-system-x86_64.in) starts QEMU with this object in
 * LD_PRELOAD. Its constructor runs before QEMU's main() and:
 *   1. drops itself from LD_PRELOAD, so programs QEMU starts do not load it;
 *   2. checks that the running program is the exact QEMU build the device
 *      was compiled against: QEMU's symbols are exported, the executable
 *      holds the module stamp of that build (the qemu_stamp_<hash> name
 *      QEMU's own module loader requires of a module: a hash of QEMU's
 *      version, the package version and the configure script), and the
 *      executable's GNU build-id is the one recorded at build time;
 *   3. only then dlopen()s chpp-hca.so (next to this file), whose
 *      type_init() constructors register the device with QEMU's module
 *      list exactly as a built-in device does.
 * On any mismatch it prints what it expected and what it found and exits
 * with status 1 before QEMU or the device code runs: a device compiled
 * against other struct layouts is never executed.
 *
 * This file uses no QEMU header and no QEMU symbol at link time, so it
 * loads into any program. The build (scripts/build-deb.sh) defines
 * CHPP_QEMU_STAMP, CHPP_QEMU_BUILD_ID, CHPP_QEMU_PKGVERSION and
 * CHPP_QEMU_BINARY.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define STR_(x) #x
#define STR(x) STR_(x)
#define STAMP_SYMBOL "qemu_stamp" STR(CHPP_QEMU_STAMP)

/*
 * The running executable's file, mapped once: the module stamp and the
 * version are strings in it (QEMU exports neither as a symbol).
 */
static const char *exe_map;
static size_t exe_size;

static void map_exe(void)
{
    struct stat st;
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    void *map;

    if (fd < 0) {
        return;
    }
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) {
            exe_map = map;
            exe_size = st.st_size;
        }
    }
    close(fd);
}

/* The first occurrence of the NUL-terminated string @s in the executable. */
static const char *exe_find(const char *s, size_t len)
{
    return exe_map ? memmem(exe_map, exe_size, s, len) : NULL;
}

/* "QEMU emulator version ..." from the running executable, for the report. */
static void running_version(char *buf, size_t size)
{
    static const char key[] = "QEMU emulator version ";
    const char *hit = exe_find(key, sizeof(key) - 1);
    int n;

    if (!hit) {
        snprintf(buf, size, "no QEMU version string in the executable");
        return;
    }
    /* One line of at most 200 bytes (the string goes on with a newline). */
    for (n = 0; n < 200 && hit + n < exe_map + exe_size; n++) {
        if (hit[n] == '\0' || hit[n] == '\n') {
            break;
        }
    }
    snprintf(buf, size, "%.*s", n, hit);
}

static void refuse(const char *why, const char *found)
{
    char exe[4096], version[256];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    exe[n > 0 ? n : 0] = '\0';
    running_version(version, sizeof(version));
    fprintf(stderr,
            "chpp-hca: refusing to load the device into %s: %s\n"
            "chpp-hca:   found:    %s; %s\n"
            "chpp-hca:   expected: %s (%s), stamp %s, build-id %s\n"
            "chpp-hca: the device is built against one QEMU build; rebuild "
            "it for this one (scripts/build-deb.sh) or run the binary it "
            "was built for.\n",
            exe, why, version, found, CHPP_QEMU_BINARY, CHPP_QEMU_PKGVERSION,
            STAMP_SYMBOL, CHPP_QEMU_BUILD_ID);
    exit(1);
}

/* Remove this object's path from LD_PRELOAD (space or colon separated). */
static void drop_from_preload(const char *self)
{
    const char *env = getenv("LD_PRELOAD");
    char *copy, *tok, *save = NULL;
    size_t len;
    char *out;

    if (!env) {
        return;
    }
    len = strlen(env) + 1;
    copy = strdup(env);
    out = calloc(1, len);
    if (!copy || !out) {
        free(copy);
        free(out);
        return;
    }
    for (tok = strtok_r(copy, ": ", &save); tok;
         tok = strtok_r(NULL, ": ", &save)) {
        char *real = realpath(tok, NULL);
        int mine = real && strcmp(real, self) == 0;

        free(real);
        if (mine) {
            continue;
        }
        if (*out) {
            strcat(out, ":");
        }
        strcat(out, tok);
    }
    if (*out) {
        setenv("LD_PRELOAD", out, 1);
    } else {
        unsetenv("LD_PRELOAD");
    }
    free(copy);
    free(out);
}

/* The main program's NT_GNU_BUILD_ID as lower-case hex. */
struct build_id {
    char hex[2 * 64 + 1];
};

static int main_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
    struct build_id *id = data;
    int i;

    (void)size;
    /* The first object dl_iterate_phdr reports is the executable. */
    for (i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        const char *p, *end;

        if (ph->p_type != PT_NOTE) {
            continue;
        }
        p = (const char *)(info->dlpi_addr + ph->p_vaddr);
        end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const unsigned char *desc;
            size_t namesz = (nh->n_namesz + 3) & ~(size_t)3;
            size_t descsz = (nh->n_descsz + 3) & ~(size_t)3;
            unsigned j;

            desc = (const unsigned char *)p + sizeof(*nh) + namesz;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(p + sizeof(*nh), "GNU", 4) == 0 &&
                nh->n_descsz <= 64 &&
                (const char *)desc + nh->n_descsz <= end) {
                for (j = 0; j < nh->n_descsz; j++) {
                    sprintf(id->hex + 2 * j, "%02x", desc[j]);
                }
                return 1;
            }
            p += sizeof(*nh) + namesz + descsz;
        }
    }
    return 1;
}

__attribute__((constructor))
static void chpp_hca_preload(void)
{
    Dl_info self;
    char *self_path, *dir, *so;
    struct build_id id = { "" };
    char found[256];
    void *handle;

    if (!dladdr((void *)chpp_hca_preload, &self) || !self.dli_fname) {
        fprintf(stderr, "chpp-hca: cannot find the preload object's path\n");
        exit(1);
    }
    self_path = realpath(self.dli_fname, NULL);
    if (!self_path) {
        fprintf(stderr, "chpp-hca: %s: %s\n", self.dli_fname, strerror(errno));
        exit(1);
    }
    drop_from_preload(self_path);
    map_exe();

    if (!dlsym(RTLD_DEFAULT, "register_module_init") ||
        !dlsym(RTLD_DEFAULT, "type_register_static")) {
        snprintf(found, sizeof(found), "QEMU's symbols are not exported "
                 "(not a modular QEMU build)");
        refuse("not a QEMU that loads modules", found);
    }
    /* With its NUL: a longer name must not match. */
    if (!exe_find(STAMP_SYMBOL, sizeof(STAMP_SYMBOL))) {
        snprintf(found, sizeof(found), "no module stamp %s", STAMP_SYMBOL);
        refuse("another QEMU build (version, package or configure differ)",
               found);
    }
    dl_iterate_phdr(main_build_id, &id);
    if (strcmp(id.hex, CHPP_QEMU_BUILD_ID) != 0) {
        snprintf(found, sizeof(found), "build-id %s",
                 id.hex[0] ? id.hex : "(none)");
        refuse("another binary of the same QEMU version", found);
    }

    dir = dirname(self_path);
    if (asprintf(&so, "%s/chpp-hca.so", dir) < 0) {
        exit(1);
    }
    handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        fprintf(stderr, "chpp-hca: cannot load the device: %s\n", dlerror());
        exit(1);
    }
    free(so);
    free(self_path);
    if (exe_map) {
        munmap((void *)exe_map, exe_size);
    }
}
