/* Active-set collectives (PE_start, logPE_stride, PE_size, pSync) as older
 * programs use them, each result checked against a reference computed here:
 * - consecutive calls on different sets that overlap ({0,1} then {0..3} ...),
 *   at sizes on both sides of the sync plane's 16 KiB data slot;
 * - a strided set (the even PEs) while the odd PEs, not members, do RMA and
 *   collectives of their own set at the same time;
 * - every set the job holds (strides 1, 2 and 4), twice over: more sets than
 *   the plane has slots for on 8 PEs, so some meet through the bootstrap.
 * Every PE prints "active_sets: ok" at the end. */
#include <string.h>
#include "check.h"

#define BIG 5000 /* elements: 20 KB, past the plane's data slot */
#define SRC_LEN (BIG + 64)
#define DST_LEN (BIG * 8 + 64)

static int me, npes, salt;
static int *src, *dst, *wrk, *ring;
static long *psync[2];

static int val(int pe, int i) { return (pe * 7919 + i * 31 + salt * 101) % 100003; }

static int pe_of(int start, int log, int j) { return start + (j << log); }

static void fill_dst(void) {
    for (int i = 0; i < DST_LEN; i++) dst[i] = -1;
}

/* Broadcast, fcollect, collect, alltoall, sum and max to_all, then a barrier,
 * over the set, with `n` elements; non-members return at once. */
static void on_set(int start, int log, int size, int n, int k) {
    int idx = -1;
    for (int j = 0; j < size; j++)
        if (pe_of(start, log, j) == me) idx = j;
    salt++;
    if (idx < 0) return;
    const char *w = "";
    long *ps = psync[k & 1], *ps2 = psync[(k + 1) & 1];
    for (int i = 0; i < SRC_LEN; i++) src[i] = val(me, i);

    int root = salt % size, rpe = pe_of(start, log, root);
    fill_dst();
    shmem_broadcast32(dst, src, n, root, start, log, size, ps);
    for (int i = 0; i < n; i++)
        CHECK(dst[i] == (me == rpe ? -1 : val(rpe, i)), "broadcast32 set (%d,%d,%d) n=%d [%d]%s",
              start, log, size, n, i, w);

    fill_dst();
    shmem_fcollect32(dst, src, n, start, log, size, ps2);
    for (int j = 0; j < size; j++)
        for (int i = 0; i < n; i++)
            CHECK(dst[j * n + i] == val(pe_of(start, log, j), i),
                  "fcollect32 set (%d,%d,%d) n=%d member %d [%d]", start, log, size, n, j, i);

    /* collect32: member j gives n / 2 + j % 3 elements. */
    fill_dst();
    shmem_collect32(dst, src, n / 2 + idx % 3, start, log, size, ps);
    for (int j = 0, at = 0; j < size; j++)
        for (int i = 0; i < n / 2 + j % 3; i++, at++)
            CHECK(dst[at] == val(pe_of(start, log, j), i),
                  "collect32 set (%d,%d,%d) n=%d member %d [%d]", start, log, size, n, j, i);

    /* alltoall32: m elements per pair. */
    int m = n / size + 1;
    fill_dst();
    shmem_alltoall32(dst, src, m, start, log, size, ps2);
    for (int j = 0; j < size; j++)
        for (int i = 0; i < m; i++)
            CHECK(dst[j * m + i] == val(pe_of(start, log, j), idx * m + i),
                  "alltoall32 set (%d,%d,%d) m=%d member %d [%d]", start, log, size, m, j, i);

    fill_dst();
    shmem_int_sum_to_all(dst, src, n, start, log, size, wrk, ps);
    for (int i = 0; i < n; i++) {
        int e = 0;
        for (int j = 0; j < size; j++) e += val(pe_of(start, log, j), i);
        CHECK(dst[i] == e, "int_sum_to_all set (%d,%d,%d) n=%d [%d]", start, log, size, n, i);
    }
    shmem_int_max_to_all(dst, src, n, start, log, size, wrk, ps2);
    for (int i = 0; i < n; i++) {
        int e = 0;
        for (int j = 0; j < size; j++)
            if (val(pe_of(start, log, j), i) > e) e = val(pe_of(start, log, j), i);
        CHECK(dst[i] == e, "int_max_to_all set (%d,%d,%d) n=%d [%d]", start, log, size, n, i);
    }
    shmem_barrier(start, log, size, ps);
}

/* Consecutive calls on sets that overlap, in changing order. */
static void overlapping(void) {
    int sets[][3] = {
        {0, 0, npes}, {0, 0, npes < 2 ? 1 : 2}, {0, 0, npes < 4 ? npes : 4},
        {npes > 1 ? 1 : 0, 0, npes > 1 ? npes - 1 : 1}, {0, 1, (npes + 1) / 2},
        {0, 0, npes}, {npes - 1, 0, 1},
    };
    int ns = sizeof sets / sizeof sets[0];
    int sizes[] = {1, 7, 1000, BIG};
    for (int r = 0; r < 3; r++)
        for (int s = 0; s < ns; s++) {
            int t = (s * (r + 1)) % ns; /* a different order each round */
            on_set(sets[t][0], sets[t][1], sets[t][2], sizes[(s + r) % 4], s + r);
        }
}

/* The even PEs' strided set while the odd PEs put around their own ring
 * and run collectives of their set (disjoint: it may share a plane slot). */
static void strided_with_others(void) {
    int evens = (npes + 1) / 2, odds = npes / 2;
    for (int r = 0; r < 4; r++) {
        int n = r % 2 ? BIG : 9;
        if (me % 2 == 0) {
            on_set(0, 1, evens, n, r);
            salt -= 1; /* keep salt in step with the odd PEs */
        } else {
            int j = me / 2, next = 2 * ((j + 1) % odds) + 1;
            for (int i = 0; i < 64; i++) shmem_int_p(&ring[i], me * 1000 + i + r, next);
            shmem_barrier(1, 1, odds, psync[1]);
            int prev = 2 * ((j + odds - 1) % odds) + 1;
            for (int i = 0; i < 64; i++)
                CHECK(ring[i] == prev * 1000 + i + r, "ring from PE %d [%d] round %d", prev, i, r);
            shmem_barrier(1, 1, odds, psync[1]);
            on_set(1, 1, odds, n, r + 1);
            salt -= 1;
        }
        salt += 1;
    }
    shmem_barrier_all();
}

/* Every set of the job (logPE_stride 0, 1, 2), twice. */
static void every_set(void) {
    for (int pass = 0; pass < 2; pass++)
        for (int log = 0; log < 3; log++)
            for (int start = 0; start < npes; start++)
                for (int size = 1; start + ((size - 1) << log) < npes; size++)
                    on_set(start, log, size, (start + size + pass) % 2 ? 300 : 3, start + size);
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    src = shmem_malloc(sizeof(int) * SRC_LEN);
    dst = shmem_malloc(sizeof(int) * DST_LEN);
    wrk = shmem_malloc(sizeof(int) * (BIG / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE));
    ring = shmem_calloc(64, sizeof(int));
    for (int k = 0; k < 2; k++) {
        psync[k] = shmem_malloc(sizeof(long) * SHMEM_REDUCE_SYNC_SIZE);
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[k][i] = SHMEM_SYNC_VALUE;
    }
    CHECK(src && dst && wrk && ring && psync[0] && psync[1], "shmem_malloc");
    shmem_barrier_all();
    overlapping();
    shmem_barrier_all();
    strided_with_others();
    every_set();
    shmem_barrier_all();
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
            CHECK(psync[k][i] == SHMEM_SYNC_VALUE, "pSync %d [%d] restored", k, i);
    printf("active_sets: ok (PE %d of %d)\n", me, npes);
    shmem_finalize();
    return 0;
}
