#include "conv_output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int conv_output_open(conv_output *o, const char *path, zs_error *err)
{
    memset(o, 0, sizeof *o);
    if (!strcmp(path, "-")) {
        o->file = stdout;
        return 0;
    }
    size_t n = strlen(path) + 16;
    o->path = strdup(path);
    o->tmp = malloc(n);
    if (!o->path || !o->tmp) {
        conv_output_discard(o);
        return zs_fail(err, ZS_E_NOMEM, "%s", path);
    }
    snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        conv_output_discard(o);
        return zs_fail(err, ZS_E_OUTPUT, "%s: %s", path, strerror(e));
    }
    /* mkstemp makes the file 0600; an output gets the usual mode. The
     * converter is single-threaded, so reading the umask this way is safe. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    if (!(o->file = fdopen(fd, "wb"))) {
        close(fd);
        conv_output_discard(o);
        return zs_fail(err, ZS_E_OUTPUT, "%s: %s", path, strerror(errno));
    }
    return 0;
}

int conv_output_commit(conv_output *o, zs_error *err)
{
    if (!o->tmp) {
        int bad = fflush(o->file) != 0 || ferror(o->file);
        memset(o, 0, sizeof *o);
        return bad ? zs_fail(err, ZS_E_OUTPUT, "stdout: write error") : 0;
    }
    int bad = fflush(o->file) != 0 || ferror(o->file) || fsync(fileno(o->file)) != 0;
    int e = errno;
    bad |= fclose(o->file) != 0;
    o->file = NULL;
    if (!bad && rename(o->tmp, o->path) == 0) {
        free(o->tmp);
        free(o->path);
        memset(o, 0, sizeof *o);
        return 0;
    }
    if (!e)
        e = errno;
    zs_fail(err, ZS_E_OUTPUT, "%s: %s", o->path, strerror(e ? e : EIO));
    conv_output_discard(o);
    return -1;
}

void conv_output_discard(conv_output *o)
{
    if (o->file && o->file != stdout)
        fclose(o->file);
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
}
