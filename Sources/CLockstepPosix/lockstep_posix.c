// Small POSIX helpers Swift cannot express: the CMSG_* macros of recvmsg(2) are not importable.
#define _GNU_SOURCE
#include "lockstep_posix.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

int lockstep_zero_fresh_allocations(void) {
#if defined(__GLIBC__) && defined(M_PERTURB)
    return mallopt(M_PERTURB, 0xff);
#else
    return 0;
#endif
}

int lockstep_enable_rx_timestamps(int fd) {
#ifdef SO_TIMESTAMPNS
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on));
#else
    errno = ENOPROTOOPT;
    return -1;
#endif
}

ssize_t lockstep_recv_timestamped(int fd, void *buffer, size_t capacity,
                                  struct sockaddr_storage *from, socklen_t *from_len,
                                  int64_t *rx_realtime_ns, int *truncated) {
    struct iovec iov = {.iov_base = buffer, .iov_len = capacity};
    union {
        char bytes[CMSG_SPACE(sizeof(struct timespec)) * 2];
        struct cmsghdr align;
    } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_name = from;
    msg.msg_namelen = sizeof(*from);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof(control.bytes);

    ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);
    if (n < 0) return -1;
    *from_len = msg.msg_namelen;
    *truncated = (msg.msg_flags & MSG_TRUNC) ? 1 : 0;
    *rx_realtime_ns = 0;
#ifdef SCM_TIMESTAMPNS
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof(ts));
            *rx_realtime_ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
        }
    }
#endif
    return n;
}
