/* SPDX-License-Identifier: BSD-3-Clause */
/* Which file an executable is, for the caches of verdicts on it: the same
 * file while its device, inode, size and mtime are (a binary rewritten in
 * place, same inode, is judged again). */
#ifndef REC_FILE_ID_H
#define REC_FILE_ID_H

#include <sys/stat.h>
#include <time.h>

typedef struct rec_file_id {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} rec_file_id;

static inline rec_file_id rec_file_id_of(const struct stat *st)
{
    return (rec_file_id){st->st_dev, st->st_ino, st->st_size, st->st_mtim};
}

static inline int rec_file_id_same(const rec_file_id *a, const struct stat *st)
{
    return a->dev == st->st_dev && a->ino == st->st_ino && a->size == st->st_size &&
           a->mtime.tv_sec == st->st_mtim.tv_sec && a->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

#endif
