/* state.c - lab 10, task 6: a checkpoint of one rank's training state
 * (chapter 10, section 7). The record file (lab_ckpt_*) is given; what
 * goes into it is yours, between the fences. */
#include "compress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ given: the record file
 *
 * A file is the 8 bytes "dtckpt10", then records, each a name of 32 bytes
 * (NUL-padded), its length in bytes as a little-endian uint64, and the
 * bytes. Records are read back in the order they were written. */

#define CKPT_MAGIC "dtckpt10"
#define CKPT_NAME 32

struct lab_ckpt {
    FILE *f;
    int writing, failed;
    int records;          /* read or written so far */
    char path[256];
};

dt_result lab_ckpt_open(lab_ckpt **out, const char *path, int writing)
{
    if (!out || !path)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ckpt_open: NULL %s", out ? "path" : "out");
    *out = NULL;
    lab_ckpt *ck = calloc(1, sizeof *ck);
    if (!ck)
        return dt_fail(DT_ERR_NOMEM, "lab_ckpt_open");
    snprintf(ck->path, sizeof ck->path, "%s", path);
    ck->writing = writing;
    ck->f = fopen(path, writing ? "wb" : "rb");
    if (!ck->f) {
        dt_result r = dt_fail(DT_ERR_IO, "%s: %s", path, strerror(errno));
        free(ck);
        return r;
    }
    char magic[8];
    if (writing ? fwrite(CKPT_MAGIC, 8, 1, ck->f) != 1
                : fread(magic, 8, 1, ck->f) != 1 || memcmp(magic, CKPT_MAGIC, 8) != 0) {
        fclose(ck->f);
        free(ck);
        return dt_fail(writing ? DT_ERR_IO : DT_ERR_INVALID_ARG, "%s: %s", path,
                       writing ? "cannot write" : "not a lab 10 checkpoint");
    }
    *out = ck;
    return DT_OK;
}

dt_result lab_ckpt_put(lab_ckpt *ck, const char *name, const void *data, size_t bytes)
{
    char tag[CKPT_NAME] = {0};
    unsigned char len[8];
    if (!ck || !ck->writing || !name || strlen(name) >= CKPT_NAME || (!data && bytes))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ckpt_put: %s", !ck || !ck->writing ?
                       "no checkpoint open for writing" : "a NULL or too long name, or no data");
    memcpy(tag, name, strlen(name));
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)((uint64_t)bytes >> (8 * i));
    if (fwrite(tag, CKPT_NAME, 1, ck->f) != 1 || fwrite(len, 8, 1, ck->f) != 1 ||
        (bytes && fwrite(data, bytes, 1, ck->f) != 1)) {
        ck->failed = 1;
        return dt_fail(DT_ERR_IO, "%s: record %d (%s): %s", ck->path, ck->records, name,
                       strerror(errno));
    }
    ck->records++;
    return DT_OK;
}

dt_result lab_ckpt_get(lab_ckpt *ck, const char *name, void *data, size_t bytes)
{
    char tag[CKPT_NAME + 1] = {0};
    unsigned char len[8];
    uint64_t have = 0;
    if (!ck || ck->writing || !name || (!data && bytes))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ckpt_get: %s", !ck || ck->writing ?
                       "no checkpoint open for reading" : "NULL name or data");
    if (fread(tag, CKPT_NAME, 1, ck->f) != 1 || fread(len, 8, 1, ck->f) != 1)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: record %d: the file ends; expected \"%s\" of "
                       "%zu bytes", ck->path, ck->records, name, bytes);
    for (int i = 0; i < 8; i++)
        have |= (uint64_t)len[i] << (8 * i);
    if (strcmp(tag, name) != 0 || have != bytes)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: record %d is \"%s\" of %llu bytes; expected "
                       "\"%s\" of %zu bytes", ck->path, ck->records, tag,
                       (unsigned long long)have, name, bytes);
    if (bytes && fread(data, bytes, 1, ck->f) != 1)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: record %d (%s) is cut short", ck->path,
                       ck->records, name);
    ck->records++;
    return DT_OK;
}

dt_result lab_ckpt_close(lab_ckpt *ck)
{
    if (!ck)
        return DT_OK;
    int bad = fclose(ck->f) != 0 || ck->failed;
    dt_result r = bad && ck->writing ? dt_fail(DT_ERR_IO, "%s: not all written", ck->path)
                                     : DT_OK;
    free(ck);
    return r;
}

/* ================================================================ task 6 */

/* BEGIN STUDENT CODE */
/* The records of a rank's state, in order: written by save, read by load
 * (the same code both ways, so that the two cannot disagree). */
static dt_result records(lab_cdp *c, lab_ckpt *ck, int writing)
{
    dt_optimizer *o;
    DT_CHECK(dt_train_optimizer(&c->trainer, &o));
    struct {
        const char *name;
        void *data;
        size_t bytes;
    } rec[] = {
        {"step", &c->step, sizeof c->step},
        {"params", c->model->params, c->n * sizeof(float)},
        {"optimizer.step", &o->step, sizeof o->step},
        {"optimizer.state", o->state, (size_t)o->slots * o->count * sizeof(float)},
        /* error feedback: every rank's residuals are part of the state */
        {"error", c->error, c->error ? c->n * sizeof(float) : 0},
        {"server_error", c->server_error,
         c->server_error ? c->block_len[0] * sizeof(float) : 0},
        /* PowerSGD's warm start */
        {"powersgd.q", c->lr_q, c->lr_q_count * sizeof(float)},
    };
    for (size_t i = 0; i < sizeof rec / sizeof *rec; i++)
        DT_CHECK(writing ? lab_ckpt_put(ck, rec[i].name, rec[i].data, rec[i].bytes)
                         : lab_ckpt_get(ck, rec[i].name, rec[i].data, rec[i].bytes));
    return DT_OK;
}
/* END STUDENT CODE */

dt_result lab_cdp_save(lab_cdp *c, const char *path)
{
    /* BEGIN STUDENT CODE */
    lab_ckpt *ck;
    if (!c || !c->model)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_cdp_save: no state");
    DT_CHECK(lab_ckpt_open(&ck, path, 1));
    dt_result r = records(c, ck, 1);
    dt_result closed = lab_ckpt_close(ck);
    return r != DT_OK ? r : closed;
    /* END STUDENT CODE */
}

dt_result lab_cdp_load(lab_cdp *c, const char *path)
{
    /* BEGIN STUDENT CODE */
    lab_ckpt *ck;
    if (!c || !c->model)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_cdp_load: no state");
    DT_CHECK(lab_ckpt_open(&ck, path, 0));
    dt_result r = records(c, ck, 0);
    lab_ckpt_close(ck);
    return r;
    /* END STUDENT CODE */
}
