/* An OSU-style latency loop over vkshmem's C ABI: shmem_barrier_all,
 * shmem_float_broadcast and shmem_float_sum_reduce on SHMEM_TEAM_WORLD over
 * sizes, timed the way vkshmem-bench times its host scope (each call
 * timed alone after `warmup` untimed calls; the median of `iters`, on
 * PE 0), so the two tables compare the C ABI's cost per call.
 *
 *   oshcc -O2 -o osu_latency benches/c/osu_latency.c
 *   oshrun -n 4 ./osu_latency [iters] [warmup] [max_bytes]
 *
 * Prints `call,bytes,median_us,min_us,max_us` rows (PE 0's times). */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <shmem.h>

#include "timing.h"

static int iters = 200, warmup = 20;
static double *samples;

enum call { BARRIER, BROADCAST, REDUCE };
static const char *names[] = {"barrier", "broadcast", "reduce"};

static void one(enum call c, float *dst, float *src, size_t n) {
    switch (c) {
    case BARRIER: shmem_barrier_all(); break;
    case BROADCAST: shmem_float_broadcast(SHMEM_TEAM_WORLD, dst, src, n, 0); break;
    case REDUCE: shmem_float_sum_reduce(SHMEM_TEAM_WORLD, dst, src, n); break;
    }
}

static void row(enum call c, size_t bytes, float *dst, float *src) {
    size_t n = bytes / sizeof(float);
    for (int i = 0; i < warmup; i++) one(c, dst, src, n);
    for (int i = 0; i < iters; i++) {
        double t = now_us();
        one(c, dst, src, n);
        samples[i] = now_us() - t;
    }
    shmem_barrier_all();
    qsort(samples, iters, sizeof(double), cmp_double);
    if (shmem_my_pe() == 0)
        printf("%s,%zu,%.2f,%.2f,%.2f\n", names[c], bytes, samples[iters / 2], samples[0],
               samples[iters - 1]);
    fflush(stdout);
}

int main(int argc, char **argv) {
    size_t max_bytes = 1 << 20;
    if (argc > 1) iters = atoi(argv[1]);
    if (argc > 2) warmup = atoi(argv[2]);
    if (argc > 3) max_bytes = strtoull(argv[3], NULL, 0);
    if (iters < 1 || warmup < 0) {
        fprintf(stderr, "usage: osu_latency [iters] [warmup] [max_bytes]\n");
        return 2;
    }
    shmem_init();
    samples = malloc(sizeof(double) * iters);
    float *src = shmem_malloc(max_bytes), *dst = shmem_malloc(max_bytes);
    for (size_t i = 0; i < max_bytes / sizeof(float); i++) src[i] = (float)(i % 7);
    if (shmem_my_pe() == 0) printf("call,bytes,median_us,min_us,max_us\n");
    size_t last = 0;
    row(BARRIER, 0, dst, src);
    for (size_t b = 8; b <= max_bytes; b *= 4) row(BROADCAST, b, dst, src);
    for (size_t b = 8; b <= max_bytes; b *= 4) row(REDUCE, last = b, dst, src);
    /* The last reduction's result, checked: every PE gave i % 7. */
    for (size_t i = 0; i < last / sizeof(float); i += 97)
        if (dst[i] != (float)(i % 7) * shmem_n_pes()) {
            fprintf(stderr, "PE %d: reduce result [%zu] = %f\n", shmem_my_pe(), i, dst[i]);
            shmem_global_exit(1);
        }
    shmem_free(dst);
    shmem_free(src);
    free(samples);
    shmem_finalize();
    return 0;
}
