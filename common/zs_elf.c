#include "zs_elf.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void scan_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, zs_elf_symbol *syms, size_t n)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    if (!data || sh->sh_entsize == 0)
        return;
    size_t count = sh->sh_size / sh->sh_entsize;
    for (size_t i = 0; i < count; i++) {
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
    if (!data || sh->sh_type != SHT_NOTE)
        return;
    while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
        if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
            memcmp((char *)data->d_buf + name_off, "GNU", 4))
            continue;
        const unsigned char *d = (const unsigned char *)data->d_buf + desc_off;
        for (size_t i = 0; i < nh.n_descsz && 2 * i + 2 < sizeof info->build_id; i++)
            snprintf(info->build_id + 2 * i, 3, "%02x", d[i]);
        return;
    }
}

int zs_elf_lookup(const char *path, zs_elf_symbol *syms, size_t n, zs_elf_info *info, zs_error *err)
{
    memset(info, 0, sizeof *info);
    for (size_t k = 0; k < n; k++)
        syms[k].found = 0;
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return zs_fail(err, errno == EACCES ? ZS_E_PERMISSION : ZS_E_IO, "%s: %s", path,
                       strerror(errno));
    int rc = -1;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
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
    size_t shstrndx;
    elf_getshdrstrndx(elf, &shstrndx);
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
                const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
                if (name && !strcmp(name, ".debug_info"))
                    info->has_debug_info = 1;
                if (!info->build_id[0])
                    read_build_id(scn, &sh, info);
            }
        }
    }
    rc = 0;
out:
    if (elf)
        elf_end(elf);
    close(fd);
    return rc;
}

int zs_elf_read(const char *path, uint64_t vaddr, void *buf, size_t len, zs_error *err)
{
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return zs_fail(err, ZS_E_IO, "%s: %s", path, strerror(errno));
    int rc = zs_fail(err, ZS_E_NOT_ZEEK, "%s: address 0x%llx is not in its initialised data", path,
                     (unsigned long long)vaddr);
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    for (Elf_Scn *scn = elf ? elf_nextscn(elf, NULL) : NULL; scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || vaddr < sh.sh_addr ||
            vaddr + len > sh.sh_addr + sh.sh_size)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        if (data && data->d_buf && vaddr - sh.sh_addr + len <= data->d_size) {
            memcpy(buf, (const char *)data->d_buf + (vaddr - sh.sh_addr), len);
            rc = 0;
        }
        break;
    }
    if (elf)
        elf_end(elf);
    close(fd);
    return rc;
}
