/* proc.h - the proc backend's job segment: its header (proc.c), its name
 * and file (segment.c), as its launcher and the programs that attach to
 * it (attach.c) see them. Not a public header. */
#ifndef DT_COMM_EMUL_PROC_H
#define DT_COMM_EMUL_PROC_H

#include "../launch.h"

#define DT_SEGMENT_NAME_MAX 96
#define DT_PROC_MAGIC 0x64746c6162617261ULL /* "dtlabara" */
#define DT_PROC_VERSION 2

typedef struct {
    dt_trace_ev *ev;
    size_t n;
} dt_proc_trace;

/* The start of a proc job's segment. */
typedef struct {
    uint64_t magic;
    uint32_t version;
    int nranks;
    size_t size;         /* of the whole segment */
    void *base;          /* the address every process maps it at */
    dt_job *job;
    _Atomic int attached;
    int tracing;
    char name[DT_SEGMENT_NAME_MAX];
    dt_proc_trace *traces; /* [nranks], in the arena */
} dt_proc_header;

/* A rank copies its trace events into the arena before it ends. */
void dt_proc_export_trace(dt_proc_header *h, dt_rank_ctx *rc);

/* The segment as a file (segment.c, where the naming rule is). */
/* Creates a new job's segment: a fresh name (written to name, which holds
 * DT_SEGMENT_NAME_MAX chars), O_EXCL, mode 0600, sized by DT_ARENA_MB, mapped
 * at hint (NULL: anywhere). Removes this user's stale segments first. */
dt_result dt_segment_create(const dt_resolved *res, void *hint, char *name, void **base,
                            size_t *size);
/* Opens a job's segment for dt_init: refuses a name that is not a
 * segment's, a segment of another user, one whose mode is not 0600 or one
 * shorter than min_bytes, with a message naming it. An open fd and the
 * segment's size on success. */
dt_result dt_segment_open(const char *name, size_t min_bytes, int *fd, size_t *size);
/* 1 when name has the shape of this user's segments. */
int dt_segment_name_ok(const char *name);
/* Unlinks this user's segments whose launcher is gone; how many. */
int dt_segment_clean_stale(void);

#endif /* DT_COMM_EMUL_PROC_H */
