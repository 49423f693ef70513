#ifndef LOCKSTEP_POSIX_H
#define LOCKSTEP_POSIX_H

#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>

/// Asks the kernel to timestamp every datagram received on `fd` (SO_TIMESTAMPNS).
/// Returns 0, or -1 with errno set.
int lockstep_enable_rx_timestamps(int fd);

/// Asks the kernel to say, with each datagram received on `fd`, how many it has dropped on this
/// socket so far (SO_RXQ_OVFL: a full receive buffer, mostly). Returns 0, or -1 with errno set
/// (ENOPROTOOPT where the option does not exist).
int lockstep_enable_rx_drop_count(int fd);

/// Receives one datagram without blocking. On success returns its length and sets `*from`,
/// `*from_len`, `*rx_realtime_ns` (the kernel's receive time on CLOCK_REALTIME, or 0 if the
/// kernel gave none) and `*kernel_drops` (the socket's drop counter when the datagram was queued,
/// a wrapping 32-bit count; 0 when the kernel attached none, which it does until the first drop).
/// Returns -1 with errno set (EAGAIN when nothing is waiting). A datagram longer than `capacity`
/// is reported with `*truncated` = 1.
ssize_t lockstep_recv_timestamped(int fd, void *buffer, size_t capacity,
                                  struct sockaddr_storage *from, socklen_t *from_len,
                                  int64_t *rx_realtime_ns, uint32_t *kernel_drops, int *truncated);

/// Asks the kernel for software transmit timestamps on `fd` when a send requests one
/// (SO_TIMESTAMPING with OPT_ID and OPT_TSONLY; Linux only). Returns 0, or -1 with errno set.
int lockstep_enable_tx_timestamps(int fd);

/// Sends one datagram without blocking and asks for its transmit timestamp, to be reported
/// under `key` (Linux 6.13's SCM_TS_OPT_ID; older kernels fail with EINVAL). Returns the bytes
/// sent, or -1 with errno set.
ssize_t lockstep_send_timestamped(int fd, const void *buffer, size_t length,
                                  const struct sockaddr *to, socklen_t to_len, uint32_t key);

/// Sends `count` datagrams without blocking, in as few system calls as the kernel allows
/// (sendmmsg on Linux, one sendto each elsewhere): datagram i is `lengths[i]` bytes of `bytes`
/// after the previous ones, to `addresses[i]` (`address_lengths[i]` bytes). Sets `failed[i]` to
/// 1 for each datagram the kernel refused (it is skipped, the rest still go), else 0. Returns how
/// many were sent.
unsigned int lockstep_send_many(int fd, const uint8_t *bytes, const size_t *lengths,
                                const struct sockaddr_storage *addresses, const socklen_t *address_lengths,
                                unsigned int count, uint8_t *failed);

/// Reads one message from `fd`'s error queue without blocking. Returns 1 with `*key` and
/// `*tx_realtime_ns` (CLOCK_REALTIME) for a transmit timestamp, 0 for any other message (consumed),
/// or -1 with errno set (EAGAIN when the queue is empty).
int lockstep_recv_tx_timestamp(int fd, uint32_t *key, int64_t *tx_realtime_ns);

/// Makes every allocation avahi's libraries make from now on zeroed (`avahi_set_allocator` with
/// `calloc`). Works around avahi's compat libdns_sd before 0.9 (Debian 12 ships 0.8), which leaves
/// the callback pointers of a DNSServiceRef uninitialised and calls them when the daemon goes
/// away: an avahi-daemon restart could crash the agent (fixed upstream by avahi commit dffd549,
/// "libdns_sd: Use allocator with memory set to zero"). glibc's M_PERTURB, used before, does not
/// do it: blocks served from the thread cache are neither zeroed nor perturbed, and the fault lab
/// saw a restart call a callback of 0xff…ff (a freed block's fill). Call before any DNS-SD call.
/// Returns 1 if set, 0 where avahi's headers are not available (Apple's systems).
int lockstep_zero_avahi_allocations(void);

/// accept(2) with the new descriptor close-on-exec from the start (accept4 on Linux; set just
/// after elsewhere). Returns it, or -1 with errno set.
int lockstep_accept_cloexec(int fd);

/// poll(2) with a timeout in nanoseconds (ppoll on Linux; rounded up to milliseconds elsewhere);
/// a negative timeout waits for ever.
int lockstep_poll_ns(struct pollfd *fds, unsigned int count, int64_t timeout_ns);

/// Names the calling thread (the first 15 bytes on Linux), for ps, top and perf.
void lockstep_name_thread(const char *name);

#endif
