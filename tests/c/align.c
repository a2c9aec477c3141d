/* shmem_align (OpenSHMEM 1.5, 9.3.1): "The shmem_align routine allocates a
 * block in the symmetric heap that has a byte alignment specified by the
 * alignment argument." Blocks aligned to 8 KiB, 64 KiB and 2 MiB: the address
 * on every PE (and every peer address shmem_ptr gives) is so aligned, a put
 * to the next PE lands at the same place in its block, and a sum reduction
 * over SHMEM_TEAM_WORLD reads and writes the blocks; every power of two to
 * 8 MiB is an aligned address too. An alignment above what
 * the heap mappings share returns NULL on every PE (the library names the
 * largest on stderr). Prints "align: ok" on every PE. */
#include <stdint.h>
#include "check.h"

#define N 1531 /* ints: odd, several pages */
#define NALIGN 3

static const size_t ALIGNS[NALIGN] = {8192, 65536, 2u << 20};

/* The value PE pe stores at index i of block k. */
static int val(int pe, int i, int k) { return (pe * 131 + i * 7 + k * 1009 + 3) % 100003; }

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int *blk[NALIGN];
    for (int k = 0; k < NALIGN; k++) {
        size_t a = ALIGNS[k];
        /* [0, N): this PE's values; [N, 2N): the left PE's; [2N, 3N): the sum. */
        blk[k] = shmem_align(a, 3 * N * sizeof(int));
        CHECK(blk[k] != NULL, "shmem_align(%zu) gave NULL", a);
        CHECK((uintptr_t)blk[k] % a == 0, "shmem_align(%zu) gave %p", a, (void *)blk[k]);
        for (int pe = 0; pe < n; pe++) {
            void *r = shmem_ptr(blk[k], pe);
            CHECK(r == NULL || (uintptr_t)r % a == 0, "shmem_ptr(block %zu, %d) = %p", a,
                  pe, r);
        }
        for (int i = 0; i < N; i++) {
            blk[k][i] = val(me, i, k);
            blk[k][N + i] = -1;
            blk[k][2 * N + i] = -1;
        }
    }
    shmem_barrier_all();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    for (int k = 0; k < NALIGN; k++)
        shmem_int_put(blk[k] + N, blk[k], N, right);
    shmem_barrier_all();
    for (int k = 0; k < NALIGN; k++)
        for (int i = 0; i < N; i++)
            CHECK(blk[k][N + i] == val(left, i, k), "block %zu [%d] from PE %d: %d, want %d",
                  ALIGNS[k], i, left, blk[k][N + i], val(left, i, k));
    /* Every PE's left neighbour's values, summed: the sum over all PEs. */
    for (int k = 0; k < NALIGN; k++)
        CHECK(shmem_int_sum_reduce(SHMEM_TEAM_WORLD, blk[k] + 2 * N, blk[k] + N, N) == 0,
              "sum_reduce in block %zu", ALIGNS[k]);
    for (int k = 0; k < NALIGN; k++)
        for (int i = 0; i < N; i++) {
            int want = 0;
            for (int pe = 0; pe < n; pe++)
                want += val(pe, i, k);
            CHECK(blk[k][2 * N + i] == want, "sum in block %zu [%d]: %d, want %d", ALIGNS[k],
                  i, blk[k][2 * N + i], want);
            CHECK(blk[k][i] == val(me, i, k), "block %zu [%d] overwritten", ALIGNS[k], i);
        }
    for (int k = NALIGN - 1; k >= 0; k--)
        shmem_free(blk[k]);
    /* Every power of two to 8 MiB, as the OpenSHMEM test suite's shmemalign
     * asks (the heap is larger than 16 MiB). */
    for (size_t a = 1; a <= (8u << 20); a <<= 1) {
        long *p = shmem_align(a, 257 * sizeof(long));
        CHECK(p && (uintptr_t)p % a == 0, "shmem_align(%zu) gave %p", a, (void *)p);
        p[256] = me;
        shmem_barrier_all();
        shmem_free(p);
    }
    /* More than any mapping gives (the library promises at most 1 GiB). */
    void *big = shmem_align((size_t)1 << 31, 64);
    CHECK(big == NULL, "shmem_align(2 GiB) gave %p", big);
    /* The heap still works after the refusal. */
    int *after = shmem_align(2u << 20, sizeof(int));
    CHECK(after && (uintptr_t)after % (2u << 20) == 0, "shmem_align(2 MiB) after: %p",
          (void *)after);
    shmem_free(after);
    printf("align: ok\n");
    shmem_finalize();
    return 0;
}
