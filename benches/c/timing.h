/* The clock and the sort the C benchmark loops share (included by
 * osu_latency.c, active_latency.c and global_rma.c). */
#ifndef VKSHMEM_BENCH_TIMING_H
#define VKSHMEM_BENCH_TIMING_H

#include <time.h>

/* Monotonic microseconds: immune to clock steps during a run. */
static inline double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* qsort's comparison of doubles, for medians. */
static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
