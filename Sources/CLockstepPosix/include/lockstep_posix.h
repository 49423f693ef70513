#ifndef LOCKSTEP_POSIX_H
#define LOCKSTEP_POSIX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/// Asks the kernel to timestamp every datagram received on `fd` (SO_TIMESTAMPNS).
/// Returns 0, or -1 with errno set.
int lockstep_enable_rx_timestamps(int fd);

/// Receives one datagram without blocking. On success returns its length and sets `*from`,
/// `*from_len` and `*rx_realtime_ns` (the kernel's receive time on CLOCK_REALTIME, or 0 if the
/// kernel gave none). Returns -1 with errno set (EAGAIN when nothing is waiting). A datagram
/// longer than `capacity` is reported with `*truncated` = 1.
ssize_t lockstep_recv_timestamped(int fd, void *buffer, size_t capacity,
                                  struct sockaddr_storage *from, socklen_t *from_len,
                                  int64_t *rx_realtime_ns, int *truncated);

#endif
