/*
 * The host baseline of scripts/bench.sh --verbs: the round trip of a
 * 64-byte message between two host processes over a unix stream socket
 * (a socketpair; the child echoes).  Prints
 *   rtt_median_us=M rtt_avg_us=A rounds=N
 * Not a test: a figure to compare the guests' latency with.
 *
 *   chpp-sock-rtt [ROUNDS] [SIZE]
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

static double now_us(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Move exactly @len bytes, or exit. */
static void xfer(int fd, char *buf, size_t len, int out)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = out ? write(fd, buf + done, len - done)
                        : read(fd, buf + done, len - done);

        if (n <= 0) {
            exit(1);
        }
        done += n;
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20000;
    size_t size = argc > 2 ? (size_t)atoi(argv[2]) : 64;
    int warm = rounds / 10;
    char buf[65536];
    double *t, sum = 0;
    int sv[2], i, st;
    pid_t pid;

    if (rounds < 1 || size < 1 || size > sizeof(buf) ||
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        fprintf(stderr, "usage: chpp-sock-rtt [ROUNDS] [SIZE <= 65536]\n");
        return 2;
    }
    memset(buf, 0x5a, sizeof(buf));
    pid = fork();
    if (pid < 0) {
        return 1;
    }
    if (!pid) {
        close(sv[0]);
        for (i = 0; i < warm + rounds; i++) {
            xfer(sv[1], buf, size, 0);
            xfer(sv[1], buf, size, 1);
        }
        _exit(0);
    }
    close(sv[1]);
    t = calloc(rounds, sizeof(*t));
    for (i = 0; i < warm + rounds; i++) {
        double t0 = now_us();

        xfer(sv[0], buf, size, 1);
        xfer(sv[0], buf, size, 0);
        if (i >= warm) {
            t[i - warm] = now_us() - t0;
            sum += t[i - warm];
        }
    }
    waitpid(pid, &st, 0);
    qsort(t, rounds, sizeof(*t), cmp);
    printf("rtt_median_us=%.2f rtt_avg_us=%.2f rounds=%d size=%zu\n",
           t[rounds / 2], sum / rounds, rounds, size);
    return 0;
}
