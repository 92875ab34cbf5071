/* Finds every running zeek (for --all): a process whose executable exports
 * Zeek's interpreter symbols. Executables are judged once each, by inode, so
 * a rescan every few seconds costs a readdir and a few stats. */
#ifndef REC_DISCOVER_H
#define REC_DISCOVER_H

#include <stddef.h>
#include <sys/types.h>

typedef struct rec_discover rec_discover;

rec_discover *rec_discover_new(void);
/* Fills pids with up to max zeek processes (not this one); returns the count. */
size_t rec_discover_scan(rec_discover *d, pid_t *pids, size_t max);
void rec_discover_free(rec_discover *d);

#endif
