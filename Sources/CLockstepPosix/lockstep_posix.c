// Small POSIX helpers Swift cannot express: the CMSG_* macros of recvmsg(2) are not importable.
#define _GNU_SOURCE
#include "lockstep_posix.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#if defined(__linux__)
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#endif
#if __has_include(<avahi-common/malloc.h>)
#include <stdlib.h>
#include <avahi-common/malloc.h>

static void *zeroed_malloc(size_t size) { return calloc(1, size); }

// Not copied by avahi: it must live as long as the process.
static const AvahiAllocator zeroed_allocator = {
    .malloc = zeroed_malloc, .free = free, .realloc = realloc, .calloc = calloc,
};

int lockstep_zero_avahi_allocations(void) {
    avahi_set_allocator(&zeroed_allocator);
    return 1;
}
#else
int lockstep_zero_avahi_allocations(void) { return 0; }
#endif

int lockstep_enable_rx_timestamps(int fd) {
#ifdef SO_TIMESTAMPNS
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on));
#else
    errno = ENOPROTOOPT;
    return -1;
#endif
}

int lockstep_enable_rx_drop_count(int fd) {
#ifdef SO_RXQ_OVFL
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof(on));
#else
    errno = ENOPROTOOPT;
    return -1;
#endif
}

ssize_t lockstep_recv_timestamped(int fd, void *buffer, size_t capacity,
                                  struct sockaddr_storage *from, socklen_t *from_len,
                                  int64_t *rx_realtime_ns, uint32_t *kernel_drops, int *truncated) {
    struct iovec iov = {.iov_base = buffer, .iov_len = capacity};
    union {
        // Room for SCM_TIMESTAMPNS, SO_RXQ_OVFL and, with transmit timestamps enabled, SCM_TIMESTAMPING.
        char bytes[256];
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
    *kernel_drops = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET) continue;
#ifdef SCM_TIMESTAMPNS
        if (c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof(ts));
            *rx_realtime_ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
        }
#endif
#ifdef SO_RXQ_OVFL
        if (c->cmsg_type == SO_RXQ_OVFL) memcpy(kernel_drops, CMSG_DATA(c), sizeof(*kernel_drops));
#endif
    }
    return n;
}

#if defined(__linux__) && defined(SO_TIMESTAMPING)
// Linux 6.13 added a per-sendmsg key for transmit timestamps; older headers lack its number.
#ifndef SCM_TS_OPT_ID
#define SCM_TS_OPT_ID 81
#endif

int lockstep_enable_tx_timestamps(int fd) {
    unsigned flags = SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_TSONLY | SOF_TIMESTAMPING_OPT_ID;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof(flags));
}

ssize_t lockstep_send_timestamped(int fd, const void *buffer, size_t length,
                                  const struct sockaddr *to, socklen_t to_len, uint32_t key) {
    struct iovec iov = {.iov_base = (void *)buffer, .iov_len = length};
    union {
        char bytes[CMSG_SPACE(sizeof(uint32_t)) * 2];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof(control));
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_name = (void *)to;
    msg.msg_namelen = to_len;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof(control.bytes);

    // Ask for this datagram's software transmit timestamp (taken when the driver hands it to
    // the device), reported on the error queue under `key`.
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SO_TIMESTAMPING;
    c->cmsg_len = CMSG_LEN(sizeof(uint32_t));
    uint32_t record = SOF_TIMESTAMPING_TX_SOFTWARE;
    memcpy(CMSG_DATA(c), &record, sizeof(record));
    c = CMSG_NXTHDR(&msg, c);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_TS_OPT_ID;
    c->cmsg_len = CMSG_LEN(sizeof(uint32_t));
    memcpy(CMSG_DATA(c), &key, sizeof(key));
    return sendmsg(fd, &msg, MSG_DONTWAIT);
}

int lockstep_recv_tx_timestamp(int fd, uint32_t *key, int64_t *tx_realtime_ns) {
    char data[64];
    struct iovec iov = {.iov_base = data, .iov_len = sizeof(data)};
    union {
        char bytes[512];
        struct cmsghdr align;
    } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof(control.bytes);
    if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return -1;

    int64_t stamp = 0;
    int have_key = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPING) {
            struct scm_timestamping ts;
            memcpy(&ts, CMSG_DATA(c), sizeof(ts));
            stamp = (int64_t)ts.ts[0].tv_sec * 1000000000LL + ts.ts[0].tv_nsec;
        } else if ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
                   (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
            struct sock_extended_err err;
            memcpy(&err, CMSG_DATA(c), sizeof(err));
            if (err.ee_origin == SO_EE_ORIGIN_TIMESTAMPING && err.ee_info == SCM_TSTAMP_SND) {
                *key = err.ee_data;
                have_key = 1;
            }
        }
    }
    if (!have_key || stamp == 0) return 0;
    *tx_realtime_ns = stamp;
    return 1;
}
#else
int lockstep_enable_tx_timestamps(int fd) {
    (void)fd;
    errno = ENOPROTOOPT;
    return -1;
}

ssize_t lockstep_send_timestamped(int fd, const void *buffer, size_t length,
                                  const struct sockaddr *to, socklen_t to_len, uint32_t key) {
    (void)key;
    return sendto(fd, buffer, length, 0, to, to_len);
}

int lockstep_recv_tx_timestamp(int fd, uint32_t *key, int64_t *tx_realtime_ns) {
    (void)fd;
    (void)key;
    (void)tx_realtime_ns;
    errno = EAGAIN;
    return -1;
}
#endif

unsigned int lockstep_send_many(int fd, const uint8_t *bytes, const size_t *lengths,
                                const struct sockaddr_storage *addresses, const socklen_t *address_lengths,
                                unsigned int count, uint8_t *failed) {
    unsigned int sent = 0;
    size_t offset = 0;
#if defined(__linux__)
    enum { chunk = 64 };
    struct mmsghdr headers[chunk];
    struct iovec iov[chunk];
    unsigned int next = 0;
    while (next < count) {
        unsigned int n = count - next < chunk ? count - next : chunk;
        size_t at = offset;
        for (unsigned int i = 0; i < n; i++) {
            iov[i].iov_base = (void *)(bytes + at);
            iov[i].iov_len = lengths[next + i];
            at += lengths[next + i];
            memset(&headers[i], 0, sizeof(headers[i]));
            headers[i].msg_hdr.msg_name = (void *)&addresses[next + i];
            headers[i].msg_hdr.msg_namelen = address_lengths[next + i];
            headers[i].msg_hdr.msg_iov = &iov[i];
            headers[i].msg_hdr.msg_iovlen = 1;
        }
        int done = sendmmsg(fd, headers, n, MSG_DONTWAIT);
        if (done < 0) done = 0;
        for (int i = 0; i < done; i++) {
            failed[next + i] = 0;
            offset += lengths[next + i];
        }
        sent += (unsigned int)done;
        next += (unsigned int)done;
        if ((unsigned int)done < n) {
            // The kernel refused this one (sendmmsg stops at the first error): skip it.
            failed[next] = 1;
            offset += lengths[next];
            next += 1;
        }
    }
#else
    for (unsigned int i = 0; i < count; i++) {
        ssize_t r = sendto(fd, bytes + offset, lengths[i], 0, (const struct sockaddr *)&addresses[i], address_lengths[i]);
        failed[i] = r < 0 ? 1 : 0;
        if (r >= 0) sent += 1;
        offset += lengths[i];
    }
#endif
    return sent;
}

int lockstep_accept_cloexec(int fd) {
#if defined(__linux__)
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC);
#else
    int client = accept(fd, NULL, NULL);
    if (client >= 0) fcntl(client, F_SETFD, FD_CLOEXEC);
    return client;
#endif
}

int lockstep_poll_ns(struct pollfd *fds, unsigned int count, int64_t timeout_ns) {
#if defined(__linux__)
    if (timeout_ns < 0) return ppoll(fds, count, NULL, NULL);
    struct timespec timeout = {.tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000};
    return ppoll(fds, count, &timeout, NULL);
#else
    if (timeout_ns < 0) return poll(fds, count, -1);
    int64_t ms = (timeout_ns + 999999) / 1000000;
    return poll(fds, count, ms > 2147483647 ? 2147483647 : (int)ms);
#endif
}

void lockstep_name_thread(const char *name) {
#if defined(__linux__)
    char short_name[16];
    strncpy(short_name, name, sizeof(short_name) - 1);
    short_name[sizeof(short_name) - 1] = 0;
    pthread_setname_np(pthread_self(), short_name);
#elif defined(__APPLE__)
    pthread_setname_np(name);
#endif
}
