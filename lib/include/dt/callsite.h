/* dt/callsite.h - the site of each blocking call, for the timeout report.
 * Part of the comm layer: dt/comm.h includes it after its declarations,
 * whose names the macros below wrap; include dt/comm.h, not this file.
 *
 * Where the code outside libdt made the blocking call that runs now on this
 * thread (file NULL: nowhere known), for the timeout report: its message
 * starts "ring.c:45: timeout after ..." and says "rank 1 waits in recv #1
 * (...) at ring.c:45". The macros below record the file and line of each
 * blocking call made from a lab, a test or a program, so the report names
 * the innermost call in that code, the one that blocks, and not the place
 * where its error surfaced (DT_CHECK's file:line, a frame or more above).
 * libdt's own sources define DT_LIBDT: a call inside the library keeps its
 * caller's site. The macros expand only where the name is followed by "(",
 * so &dt_recv is still the function. */
#ifndef DT_CALLSITE_H
#define DT_CALLSITE_H

#ifdef __cplusplus
extern "C" {
#endif

void dt_call_site(const char *file, int line);

#ifdef __cplusplus
}
#endif

#if !defined(DT_LIBDT) && defined(__GNUC__)
#define DT_AT_SITE_(call)                                                    \
    __extension__({                                                          \
        dt_call_site(__FILE__, __LINE__);                                    \
        dt_result dt_at_site_r_ = (call);                                    \
        dt_call_site(NULL, 0);                                               \
        dt_at_site_r_;                                                       \
    })
#define dt_comm_split(...) DT_AT_SITE_(dt_comm_split(__VA_ARGS__))
#define dt_allreduce(...) DT_AT_SITE_(dt_allreduce(__VA_ARGS__))
#define dt_broadcast(...) DT_AT_SITE_(dt_broadcast(__VA_ARGS__))
#define dt_reduce(...) DT_AT_SITE_(dt_reduce(__VA_ARGS__))
#define dt_allgather(...) DT_AT_SITE_(dt_allgather(__VA_ARGS__))
#define dt_reduce_scatter(...) DT_AT_SITE_(dt_reduce_scatter(__VA_ARGS__))
#define dt_allreduce_scatter(...) DT_AT_SITE_(dt_allreduce_scatter(__VA_ARGS__))
#define dt_allreduce_gather(...) DT_AT_SITE_(dt_allreduce_gather(__VA_ARGS__))
#define dt_alltoall(...) DT_AT_SITE_(dt_alltoall(__VA_ARGS__))
#define dt_barrier(...) DT_AT_SITE_(dt_barrier(__VA_ARGS__))
#define dt_send(...) DT_AT_SITE_(dt_send(__VA_ARGS__))
#define dt_recv(...) DT_AT_SITE_(dt_recv(__VA_ARGS__))
#define dt_sendrecv(...) DT_AT_SITE_(dt_sendrecv(__VA_ARGS__))
#define dt_recv_any(...) DT_AT_SITE_(dt_recv_any(__VA_ARGS__))
#define dt_wait(...) DT_AT_SITE_(dt_wait(__VA_ARGS__))
#define dt_waitall(...) DT_AT_SITE_(dt_waitall(__VA_ARGS__))
#define dt_win_allocate(...) DT_AT_SITE_(dt_win_allocate(__VA_ARGS__))
#define dt_win_free(...) DT_AT_SITE_(dt_win_free(__VA_ARGS__))
#endif

#endif /* DT_CALLSITE_H */
