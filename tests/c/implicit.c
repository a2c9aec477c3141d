/* Implicit finalization, from the OpenSHMEM 1.5 text on start_pes: "the
 * OpenSHMEM library is implicitly finalized when the program exits.
 * Implicit finalization is collective and includes a global
 * synchronization". vkshmem finalizes a program that called shmem_init
 * and not shmem_finalize the same way (as the reference implementations
 * do). Every mode ends without shmem_finalize, after a collective:
 *
 *   implicit start-pes   start_pes(0), return from main
 *   implicit init        shmem_init(), return from main
 *   implicit exit        start_pes(0), exit(0) from a function
 *   implicit late        as start-pes, PE 0 leaves main a second after
 *                        the others (they wait in the implicit finalize)
 *   implicit fail        as start-pes, PE 1 (the last PE on one PE)
 *                        returns 3: a failure, reported as such
 *
 * The last line each PE prints stays in C's buffer (stdout is a pipe)
 * until the exit flushes it, after the implicit finalize. */
#define _POSIX_C_SOURCE 199309L /* nanosleep under -std=c11 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <shmem.h>
#include "check.h"

static long psync[SHMEM_REDUCE_SYNC_SIZE];
static int pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static int src, total;

static void leave(void) {
    exit(0);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "start-pes";
    if (strcmp(mode, "init") == 0)
        shmem_init();
    else
        start_pes(0);
    int me = shmem_my_pe(), n = shmem_n_pes();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    int *heap = shmem_malloc(sizeof(int));
    CHECK(heap != NULL, "shmem_malloc");
    *heap = -1;
    shmem_barrier_all();
    /* Each PE puts its number into the next one's heap int. */
    shmem_int_p(heap, me, (me + 1) % n);
    shmem_barrier_all();
    CHECK(*heap == (me + n - 1) % n, "got %d from the previous PE", *heap);
    /* The last step: a reduction over the active set of every PE. */
    src = me + 1;
    shmem_int_sum_to_all(&total, &src, 1, 0, 0, n, pwrk, psync);
    CHECK(total == n * (n + 1) / 2, "sum %d", total);
    printf("implicit: ok %d of %d (%s, sum %d)\n", me, n, mode, total);
    if (strcmp(mode, "exit") == 0)
        leave();
    if (strcmp(mode, "late") == 0 && me == 0) {
        struct timespec t = {1, 0};
        nanosleep(&t, NULL);
    }
    if (strcmp(mode, "fail") == 0 && me == (n > 1 ? 1 : 0))
        return 3;
    return 0;
}
