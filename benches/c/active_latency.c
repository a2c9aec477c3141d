/* The deprecated active-set collectives against their team forms, over
 * the whole job (PE_start 0, logPE_stride 0, PE_size npes):
 *
 *   barrier    shmem_barrier            vs shmem_barrier_all
 *   sync       shmem_sync (active set)  vs shmem_team_sync(SHMEM_TEAM_WORLD)
 *   broadcast  shmem_broadcast32        vs shmem_uint32_broadcast(WORLD)
 *   fcollect   shmem_fcollect32         vs shmem_uint32_fcollect(WORLD)
 *   sum        shmem_int_sum_to_all     vs shmem_int_sum_reduce(WORLD)
 *
 * at 8 B, 4 KiB and 1 MiB per PE (the barriers once). A batch is `iters`
 * back-to-back calls after a barrier; a row's figure is the median over
 * `batches` batches of the time per call (PE 0's clock).
 *
 *   oshcc -O2 -o active_latency benches/c/active_latency.c
 *   oshrun -n 4 ./active_latency [batches] [iters] [max_bytes]
 *
 * Prints `call,bytes,active_us,team_us,ratio` rows (ratio: active / team).
 * Built against an OpenSHMEM before 1.5 (no teams: Open MPI's OSHMEM), the
 * team column holds shmem_barrier_all and shmem_sync_all, and `-` for the
 * calls that have no team form there.
 * pSync arrays alternate between calls, as the specification asks of
 * consecutive collectives that reuse them without a barrier between. */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <shmem.h>

#include "timing.h"

enum call { BARRIER, SYNC, BROADCAST, FCOLLECT, SUM };
static const char *names[] = {"barrier", "sync", "broadcast", "fcollect", "sum"};

static int batches = 7, iters = 100, npes;
static long *psync[2];
static int *pwrk;
static uint32_t *dst, *src;

/* One call, active-set form or team form; `k` picks the pSync. */
#if SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION >= 105
#define HAVE_TEAMS 1
#else
#define HAVE_TEAMS 0
#endif

/* Whether call `c` has a team form to compare with. */
static int has_team_form(enum call c) { return HAVE_TEAMS || c == BARRIER || c == SYNC; }

static void one(enum call c, int active, size_t n, int k) {
    long *ps = psync[k & 1];
    if (active) {
        switch (c) {
        case BARRIER: shmem_barrier(0, 0, npes, psync[0]); break;
        case SYNC: shmem_sync(0, 0, npes, psync[0]); break;
        case BROADCAST: shmem_broadcast32(dst, src, n, 0, 0, 0, npes, ps); break;
        case FCOLLECT: shmem_fcollect32(dst, src, n, 0, 0, npes, ps); break;
        case SUM: shmem_int_sum_to_all((int *)dst, (int *)src, (int)n, 0, 0, npes, pwrk, ps); break;
        }
        return;
    }
    switch (c) {
    case BARRIER: shmem_barrier_all(); break;
#if HAVE_TEAMS
    case SYNC: shmem_team_sync(SHMEM_TEAM_WORLD); break;
    case BROADCAST: shmem_uint32_broadcast(SHMEM_TEAM_WORLD, dst, src, n, 0); break;
    case FCOLLECT: shmem_uint32_fcollect(SHMEM_TEAM_WORLD, dst, src, n); break;
    case SUM: shmem_int_sum_reduce(SHMEM_TEAM_WORLD, (int *)dst, (int *)src, n); break;
#else
    case SYNC: shmem_sync_all(); break;
    default: break; /* no team form before 1.5: has_team_form() says so */
#endif
    }
}

/* Microseconds per call: the median over the batches. */
static double time_form(enum call c, int active, size_t n, int reps) {
    double *per = malloc(sizeof(double) * batches);
    one(c, active, n, 0); /* warm-up: first-use costs stay out of the batches */
    one(c, active, n, 1);
    for (int b = 0; b < batches; b++) {
        shmem_barrier_all();
        double t = now_us();
        for (int i = 0; i < reps; i++) one(c, active, n, i);
        per[b] = (now_us() - t) / reps;
    }
    qsort(per, batches, sizeof(double), cmp_double);
    double m = per[batches / 2];
    free(per);
    return m;
}

static void row(enum call c, size_t bytes) {
    size_t n = bytes / sizeof(uint32_t);
    /* Fewer calls per batch for the large sizes, so a run stays short. */
    int reps = bytes >= (1 << 20) ? (iters / 10 > 0 ? iters / 10 : 1) : iters;
    double a = time_form(c, 1, n, reps);
    if (!has_team_form(c)) {
        if (shmem_my_pe() == 0) printf("%s,%zu,%.2f,-,-\n", names[c], bytes, a);
        return;
    }
    double t = time_form(c, 0, n, reps);
    if (shmem_my_pe() == 0)
        printf("%s,%zu,%.2f,%.2f,%.2f\n", names[c], bytes, a, t, a / t);
}

int main(int argc, char **argv) {
    size_t max_bytes = 1 << 20;
    if (argc > 1) batches = atoi(argv[1]);
    if (argc > 2) iters = atoi(argv[2]);
    if (argc > 3) max_bytes = (size_t)atol(argv[3]);
    if (batches < 1 || iters < 1 || max_bytes < 8) {
        fprintf(stderr, "usage: active_latency [batches >= 1] [iters >= 1] [max_bytes >= 8]\n");
        return 2;
    }
    shmem_init();
    npes = shmem_n_pes();
    size_t max_n = max_bytes / sizeof(uint32_t);
    for (int k = 0; k < 2; k++) {
        psync[k] = shmem_malloc(sizeof(long) * SHMEM_REDUCE_SYNC_SIZE);
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[k][i] = SHMEM_SYNC_VALUE;
    }
    size_t wrk = max_n / 2 + 1;
    if (wrk < SHMEM_REDUCE_MIN_WRKDATA_SIZE) wrk = SHMEM_REDUCE_MIN_WRKDATA_SIZE;
    pwrk = shmem_malloc(sizeof(int) * wrk);
    dst = shmem_malloc(sizeof(uint32_t) * max_n * npes);
    src = shmem_malloc(sizeof(uint32_t) * max_n);
    if (!psync[0] || !psync[1] || !pwrk || !dst || !src) {
        fprintf(stderr, "PE %d: shmem_malloc failed\n", shmem_my_pe());
        shmem_global_exit(1);
    }
    for (size_t i = 0; i < max_n; i++) src[i] = (uint32_t)(i + shmem_my_pe());
    memset(dst, 0, sizeof(uint32_t) * max_n * npes);
    shmem_barrier_all();

    if (shmem_my_pe() == 0) printf("call,bytes,active_us,team_us,ratio\n");
    row(BARRIER, 0);
    row(SYNC, 0);
    size_t sizes[] = {8, 4096, 1 << 20};
    for (int c = BROADCAST; c <= SUM; c++)
        for (int s = 0; s < 3; s++)
            if (sizes[s] <= max_bytes) row((enum call)c, sizes[s]);

    shmem_barrier_all();
    shmem_free(src);
    shmem_free(dst);
    shmem_free(pwrk);
    shmem_free(psync[1]);
    shmem_free(psync[0]);
    shmem_finalize();
    return 0;
}
