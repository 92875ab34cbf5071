/* SPDX-License-Identifier: BSD-3-Clause */
#include "zs_elf.h"
#include "zs_hex.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int zs_elf_begin(int fd, const char *name, Elf **out, zs_error *err)
{
    struct stat st;
    *out = NULL;
    if (fstat(fd, &st) != 0)
        return zs_fail(err, ZS_E_IO, "%s: %s", name, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return zs_fail(err, ZS_E_NOT_ZEEK, "%s: not a regular file", name);
    if ((int64_t)st.st_size > ZS_ELF_MAX_FILE_BYTES)
        return zs_fail(err, ZS_E_EXE_REFUSED,
                       "%s: %lld bytes, more than the %lld an executable may have to be parsed",
                       name, (long long)st.st_size, (long long)ZS_ELF_MAX_FILE_BYTES);
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    size_t nsec = 0, nseg = 0;
    if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
        if (elf)
            elf_end(elf);
        return zs_fail(err, ZS_E_NOT_ZEEK, "%s: not an ELF executable", name);
    }
    /* libelf reads the section and segment tables whole: bound them before
     * anything walks them. */
    if (elf_getshdrnum(elf, &nsec) != 0 || elf_getphdrnum(elf, &nseg) != 0 ||
        nsec > ZS_ELF_MAX_SECTIONS || nseg > ZS_ELF_MAX_SEGMENTS) {
        elf_end(elf);
        return zs_fail(err, ZS_E_EXE_REFUSED,
                       "%s: malformed ELF header or too many sections/segments (%zu/%zu; at most "
                       "%d/%d are parsed)",
                       name, nsec, nseg, ZS_ELF_MAX_SECTIONS, ZS_ELF_MAX_SEGMENTS);
    }
    *out = elf;
    return 0;
}

static void scan_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, zs_elf_symbol *syms, size_t n)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    if (!data || sh->sh_entsize == 0)
        return;
    /* The section header's size may claim more than the data holds. */
    size_t count = data->d_size / sh->sh_entsize;
    for (size_t i = 0; i < count && i <= INT32_MAX; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
            continue;
        const char *name = elf_strptr(elf, sh->sh_link, sym.st_name);
        if (!name)
            continue;
        for (size_t k = 0; k < n; k++) {
            if (!syms[k].found && !strcmp(name, syms[k].name)) {
                syms[k].value = sym.st_value;
                syms[k].size = sym.st_size;
                syms[k].found = 1;
            }
        }
    }
}

static void read_build_id(Elf_Scn *scn, const GElf_Shdr *sh, zs_elf_info *info)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    size_t off = 0, name_off, desc_off;
    GElf_Nhdr nh;
    if (!data || !data->d_buf || sh->sh_type != SHT_NOTE)
        return;
    while (off < data->d_size && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
        if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 || name_off + 4 > data->d_size ||
            memcmp((char *)data->d_buf + name_off, "GNU", 4) || desc_off > data->d_size ||
            nh.n_descsz > data->d_size - desc_off)
            continue;
        const unsigned char *d = (const unsigned char *)data->d_buf + desc_off;
        zs_hex(info->build_id, sizeof info->build_id, d, nh.n_descsz);
        return;
    }
}

int zs_elf_lookup_fd(int fd, const char *path, zs_elf_symbol *syms, size_t n, zs_elf_info *info,
                     zs_error *err)
{
    memset(info, 0, sizeof *info);
    for (size_t k = 0; k < n; k++)
        syms[k].found = 0;
    Elf *elf;
    GElf_Ehdr eh;
    if (zs_elf_begin(fd, path, &elf, err))
        return -1;
    int rc = -1;
    if (!gelf_getehdr(elf, &eh)) {
        zs_fail(err, ZS_E_NOT_ZEEK, "%s: not an ELF executable", path);
        goto out;
    }
    if (eh.e_machine != EM_X86_64) {
        zs_fail(err, ZS_E_UNSUPPORTED, "%s: only x86_64 executables are supported", path);
        goto out;
    }
    info->is_pie = eh.e_type == ET_DYN;
    size_t nph = 0;
    elf_getphdrnum(elf, &nph);
    int have_load = 0;
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
            (!have_load || ph.p_vaddr < info->first_vaddr)) {
            info->first_vaddr = ph.p_vaddr & ~(uint64_t)0xfff;
            have_load = 1;
        }
    }
    size_t shstrndx = 0;
    int have_names = elf_getshdrstrndx(elf, &shstrndx) == 0;
    /* .dynsym before .symtab: two passes, as sections come in any order. */
    for (int pass = 0; pass < 2; pass++) {
        for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh))
                continue;
            if (pass == 0 && sh.sh_type == SHT_DYNSYM)
                scan_symbols(elf, scn, &sh, syms, n);
            if (pass == 1 && sh.sh_type == SHT_SYMTAB)
                scan_symbols(elf, scn, &sh, syms, n);
            if (pass == 0) {
                const char *name = have_names ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
                if (name && !strcmp(name, ".debug_info"))
                    info->has_debug_info = 1;
                if (!info->build_id[0])
                    read_build_id(scn, &sh, info);
            }
        }
    }
    rc = 0;
out:
    elf_end(elf);
    return rc;
}

int zs_elf_lookup(const char *path, zs_elf_symbol *syms, size_t n, zs_elf_info *info, zs_error *err)
{
    memset(info, 0, sizeof *info);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return zs_fail(err, errno == EACCES ? ZS_E_PERMISSION : ZS_E_IO, "%s: %s", path,
                       strerror(errno));
    int rc = zs_elf_lookup_fd(fd, path, syms, n, info, err);
    close(fd);
    return rc;
}

int zs_elf_read_fd(int fd, const char *path, uint64_t vaddr, void *buf, size_t len, zs_error *err)
{
    Elf *elf;
    if (zs_elf_begin(fd, path, &elf, err))
        return -1;
    int rc = zs_fail(err, ZS_E_NOT_ZEEK, "%s: address 0x%llx is not in its initialised data", path,
                     (unsigned long long)vaddr);
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        /* Written so that no sum can wrap: every value is the file's. */
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || vaddr < sh.sh_addr ||
            vaddr - sh.sh_addr > sh.sh_size || len > sh.sh_size - (vaddr - sh.sh_addr))
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        uint64_t at = vaddr - sh.sh_addr;
        if (data && data->d_buf && at <= data->d_size && len <= data->d_size - at) {
            memcpy(buf, (const char *)data->d_buf + at, len);
            rc = 0;
        }
        break;
    }
    elf_end(elf);
    return rc;
}

int zs_elf_read(const char *path, uint64_t vaddr, void *buf, size_t len, zs_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return zs_fail(err, ZS_E_IO, "%s: %s", path, strerror(errno));
    int rc = zs_elf_read_fd(fd, path, vaddr, buf, len, err);
    close(fd);
    return rc;
}
