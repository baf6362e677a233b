/* copy.c - copies between the ranks' memories: memcpy where the buffer is
 * addressable, cross-memory attach (process_vm_readv / writev) where it
 * lies in another process of the proc backend. */
#include "copy.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

/* A failed cross-memory copy: the peer died, or the system forbids
 * process_vm_* between the job's processes (ptrace rules; Docker's default
 * seccomp profile without CAP_SYS_PTRACE). */
static dt_result cma_fail(int e, const char *what, size_t n, int pid)
{
    if (e == EPERM || e == ENOSYS || e == EACCES)
        return dt_fail(DT_ERR_UNSUPPORTED, "cross-memory attach refused (%s) when trying to %s "
                       "%zu bytes of process %d: the proc backend needs process_vm_readv and "
                       "process_vm_writev between its processes (in a container: "
                       "--cap-add=SYS_PTRACE); the thread backend does not", strerror(e), what,
                       n, pid);
    return dt_fail(DT_ERR_PEER_DIED, "cannot %s %zu bytes of process %d (%s): it has died?",
                   what, n, pid, strerror(e));
}

/* Copies n bytes from src to dst where one side lies in process pid: with
 * to_peer, our src into its dst (process_vm_writev), else its src into our
 * dst (process_vm_readv). The kernel may move less than asked: loop. */
static dt_result cma_copy(int pid, int self, void *dst, const void *src, size_t n, int to_peer)
{
    if (n == 0)
        return DT_OK;
    if (dt_addressable(pid, self)) {
        memcpy(dst, src, n);
        return DT_OK;
    }
    size_t done = 0;
    while (done < n) {
        struct iovec to = {(char *)dst + done, n - done};
        struct iovec from = {(char *)src + done, n - done};
        ssize_t moved = to_peer ? process_vm_writev(pid, &from, 1, &to, 1, 0)
                                : process_vm_readv(pid, &to, 1, &from, 1, 0);
        if (moved < 0)
            return cma_fail(errno, to_peer ? "write" : "read", n, pid);
        if (moved == 0) /* the peer's buffer went away under us */
            return cma_fail(EIO, to_peer ? "write" : "read", n, pid);
        done += (size_t)moved;
    }
    return DT_OK;
}

dt_result dt_copy_from(int pid, int self, void *dst, const void *src, size_t n)
{
    return cma_copy(pid, self, dst, src, n, 0);
}

dt_result dt_copy_to(int pid, int self, void *dst, const void *src, size_t n)
{
    return cma_copy(pid, self, dst, src, n, 1);
}
