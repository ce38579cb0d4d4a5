/*
 * A do-nothing datagram server in C: it sends every datagram on the
 * socket at descriptor 0 back as it came, reading and writing as many as
 * are waiting (up to 32) per system call, woken by epoll. It is the floor
 * of what answering a datagram costs on this machine's socketpair, the
 * same socket local-sa's kernel door is measured on: fabric-bench
 * compiles it with the system's C compiler and runs it beside local-sa.
 *
 *   cc -O2 -o dgram_echo dgram_echo.c
 *
 * Runs until the socket fails or it is killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#define BATCH 32
#define MAX_DATAGRAM 4096

static char bufs[BATCH][MAX_DATAGRAM];

int main(void)
{
	struct mmsghdr msgs[BATCH];
	struct iovec iovs[BATCH];
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(0);

	if (ep < 0 || fcntl(0, F_SETFL, O_NONBLOCK) < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev) < 0) {
		perror("dgram_echo");
		return 1;
	}
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < BATCH; i++) {
		msgs[i].msg_hdr.msg_iov = &iovs[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	for (;;) {
		struct epoll_event ready;

		if (epoll_wait(ep, &ready, 1, -1) < 0 && errno != EINTR)
			return 1;
		for (;;) {
			int n;

			for (int i = 0; i < BATCH; i++) {
				iovs[i].iov_base = bufs[i];
				iovs[i].iov_len = MAX_DATAGRAM;
			}
			n = recvmmsg(0, msgs, BATCH, 0, NULL);
			if (n < 0 && errno == EAGAIN)
				break;
			if (n <= 0)
				return 1;
			for (int i = 0; i < n; i++)
				iovs[i].iov_len = msgs[i].msg_len;
			if (sendmmsg(0, msgs, n, 0) < 0)
				return 1;
			if (n < BATCH)
				break;
		}
	}
}
