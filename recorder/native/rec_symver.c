/* SPDX-License-Identifier: BSD-3-Clause */
#include "native/rec_symver.h"

#include <stdlib.h>
#include <string.h>

#include "zs_grow.h"

/* Bounds a hostile file: glibc defines about 50 versions. */
enum { MAX_VERSIONS = 1 << 12 };

/* The names of .gnu.version_d's versions by index. -1 when out of memory. */
static int read_verdefs(rec_symver *v, Elf_Scn *scn, const GElf_Shdr *shdr)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    size_t cap = 0, off = 0;
    for (size_t i = 0; data && i < shdr->sh_info && i < MAX_VERSIONS && off < data->d_size; i++) {
        GElf_Verdef def;
        GElf_Verdaux aux;
        if (!gelf_getverdef(data, (int)off, &def) || !gelf_getverdaux(data, (int)(off + def.vd_aux), &aux))
            break;
        const char *name = elf_strptr(v->elf, shdr->sh_link, aux.vda_name);
        /* The base entry names the file itself ("libc.so.6"), no version. */
        if (name && !(def.vd_flags & VER_FLG_BASE) && def.vd_ndx < MAX_VERSIONS) {
            size_t had = v->nnames;
            if (zs_grow(&v->names, &cap, (size_t)def.vd_ndx + 1, sizeof *v->names, 64))
                return -1;
            if (def.vd_ndx >= v->nnames) {
                v->nnames = (size_t)def.vd_ndx + 1;
                memset(v->names + had, 0, (v->nnames - had) * sizeof *v->names);
            }
            v->names[def.vd_ndx] = name;
        }
        if (!def.vd_next)
            break;
        off += def.vd_next;
    }
    return 0;
}

/* What elf says of its versions. -1 when out of memory. */
static int load(rec_symver *v, Elf *elf)
{
    rec_symver_free(v);
    v->elf = elf;
    Elf_Scn *scn = NULL, *verdef = NULL;
    GElf_Shdr shdr, verdef_shdr = {0};
    while ((scn = elf_nextscn(elf, scn))) {
        if (!gelf_getshdr(scn, &shdr))
            continue;
        if (shdr.sh_type == SHT_SYMTAB)
            return 0; /* libdwfl reads this one: its names say their versions */
        if (shdr.sh_type == SHT_DYNSYM && shdr.sh_entsize) {
            v->dynsym = elf_getdata(scn, NULL);
            v->dynsym_count = shdr.sh_size / shdr.sh_entsize;
            v->strtab = shdr.sh_link;
        } else if (shdr.sh_type == SHT_GNU_versym) {
            v->versym = elf_getdata(scn, NULL);
        } else if (shdr.sh_type == SHT_GNU_verdef) {
            verdef = scn;
            verdef_shdr = shdr;
        }
    }
    if (!v->dynsym || !v->versym || !verdef)
        return 0;
    if (read_verdefs(v, verdef, &verdef_shdr))
        return -1;
    v->usable = v->nnames > 0;
    return 0;
}

const char *rec_symver_of(rec_symver *v, Elf *elf, int ndx, const char *name, const GElf_Sym *sym,
                          int *hidden)
{
    *hidden = 0;
    if (!elf || (elf != v->elf && load(v, elf)))
        return NULL;
    if (!v->usable || ndx <= 0 || (size_t)ndx >= v->dynsym_count)
        return NULL;
    GElf_Sym own;
    GElf_Versym ver;
    const char *own_name;
    if (!gelf_getsym(v->dynsym, ndx, &own) || !gelf_getversym(v->versym, ndx, &ver) ||
        own.st_value != sym->st_value || own.st_size != sym->st_size ||
        own.st_info != sym->st_info || !(own_name = elf_strptr(elf, v->strtab, own.st_name)) ||
        strcmp(own_name, name))
        return NULL;
    size_t index = ver & 0x7fff; /* 0 local, 1 global: no version */
    if (index < 2 || index >= v->nnames || !v->names[index])
        return NULL;
    *hidden = (ver & 0x8000) != 0;
    return v->names[index];
}

void rec_symver_free(rec_symver *v)
{
    free(v->names);
    *v = (rec_symver){0};
}
