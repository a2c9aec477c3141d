/* Put and get of 1 MiB on global (static) variables against the same on
 * the symmetric heap and a local memcpy: PE 0 to PE 1, best of 3 rounds
 * of ITERS calls each (default 200).
 *
 *   oshcc -O2 -o global_rma benches/c/global_rma.c && oshrun -n 2 ./global_rma 200
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <shmem.h>

#include "timing.h"

#define N (1 << 20)

static char g_src[N], g_dst[N];
static char local[N];

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 200;
    shmem_init();
    int me = shmem_my_pe(), peer = (me + 1) % shmem_n_pes();
    char *h_src = shmem_malloc(N), *h_dst = shmem_malloc(N);
    memset(g_src, me + 1, N);
    memset(h_src, me + 1, N);
    memset(local, 3, N);
    static const char *names[] = {"putmem global", "getmem global", "long_put global",
                                  "int_get global", "putmem heap", "getmem heap",
                                  "memcpy local"};
    for (int k = 0; k < 7; k++) {
        double best = 1e30;
        for (int r = 0; r < 3; r++) {
            shmem_barrier_all();
            double t0 = now_us();
            for (int i = 0; i < iters && me == 0; i++) {
                switch (k) {
                case 0: shmem_putmem(g_dst, local, N, peer); break;
                case 1: shmem_getmem(local, g_src, N, peer); break;
                case 2: shmem_long_put((long *)g_dst, (long *)local, N / 8, peer); break;
                case 3: shmem_int_get((int *)local, (int *)g_src, N / 4, peer); break;
                case 4: shmem_putmem(h_dst, local, N, peer); break;
                case 5: shmem_getmem(local, h_src, N, peer); break;
                default: memcpy(g_dst, local, N); break;
                }
            }
            double t = (now_us() - t0) / iters;
            best = t < best ? t : best;
        }
        if (me == 0)
            printf("%-16s 1 MiB: %8.1f us\n", names[k], best);
    }
    shmem_barrier_all();
    shmem_free(h_dst);
    shmem_free(h_src);
    shmem_finalize();
    return 0;
}
