/* Atomics in every type table and form (fetching, non-fetching, _nbi, ctx,
 * C11 generic), on the heap and on global variables. Every PE hits PE 0's
 * counters at once, so the totals are exact only if the operations are
 * atomic across processes. */
#include <pthread.h>
#include "check.h"

#define ITERS 200

static int me, npes;

#define AMO_STD(X)                                                              \
    X(int, int) X(long, long) X(longlong, long long) X(uint, unsigned int)      \
    X(ulong, unsigned long) X(ulonglong, unsigned long long) X(int32, int32_t)  \
    X(int64, int64_t) X(uint32, uint32_t) X(uint64, uint64_t) X(size, size_t)   \
    X(ptrdiff, ptrdiff_t)
#define AMO_BIT(X)                                                              \
    X(uint, unsigned int) X(ulong, unsigned long) X(ulonglong, unsigned long long) \
    X(int32, int32_t) X(int64, int64_t) X(uint32, uint32_t) X(uint64, uint64_t)

/* Standard AMOs: fetch_add/add/inc/fetch_inc from every PE, then one
 * compare_swap chain, swap, set and fetch. */
#define TEST_STD(NAME, T)                                                       \
    static T g_##NAME[4];                                                       \
    static void std_##NAME(void) {                                              \
        T *h = shmem_calloc(4, sizeof(T));                                      \
        T *where[2] = {h, g_##NAME};                                            \
        for (int w = 0; w < 2; w++) {                                           \
            T *c = where[w];                                                    \
            c[0] = c[1] = c[2] = c[3] = 0;                                      \
            shmem_barrier_all();                                                \
            T sum = 0;                                                          \
            for (int i = 0; i < ITERS; i++) {                                   \
                T old = shmem_##NAME##_atomic_fetch_add(&c[0], (T)(me + 1), 0); \
                CHECK(old < (T)(ITERS * npes * (npes + 1)), #NAME " fetch_add old"); \
                shmem_##NAME##_atomic_add(&c[0], (T)1, 0);                      \
                shmem_##NAME##_atomic_inc(&c[1], 0);                            \
                sum += shmem_##NAME##_atomic_fetch_inc(&c[2], 0) >= 0;          \
            }                                                                   \
            shmem_atomic_add(c + 3, (T)2, 0);                                   \
            shmem_ctx_##NAME##_atomic_add(SHMEM_CTX_DEFAULT, &c[3], (T)1, 0);   \
            shmem_barrier_all();                                                \
            T expect = (T)(ITERS * (npes * (npes + 1) / 2 + npes));             \
            CHECK(shmem_##NAME##_atomic_fetch(&c[0], 0) == expect, #NAME " add total (%s)", \
                  w ? "global" : "heap");                                       \
            CHECK(shmem_atomic_fetch(&c[1], 0) == (T)(ITERS * npes), #NAME " inc total"); \
            CHECK(shmem_##NAME##_atomic_fetch(&c[2], 0) == (T)(ITERS * npes), #NAME " fetch_inc"); \
            CHECK(sum == ITERS, #NAME " fetch_inc results");                    \
            CHECK(shmem_##NAME##_atomic_fetch(&c[3], 0) == (T)(3 * npes), #NAME " ctx add"); \
            shmem_barrier_all();                                                \
            /* compare_swap: each PE moves the word from its number to the  \
             * next in turn, so all must succeed in order */                    \
            if (me == 0) shmem_##NAME##_atomic_set(&c[1], (T)0, 0);             \
            shmem_barrier_all();                                                \
            T seen;                                                             \
            do {                                                                \
                seen = shmem_##NAME##_atomic_compare_swap(&c[1], (T)me, (T)(me + 1), 0); \
            } while (seen != (T)me);                                            \
            shmem_barrier_all();                                                \
            CHECK(shmem_##NAME##_atomic_fetch(&c[1], 0) == (T)npes, #NAME " cswap chain"); \
            T f = 99;                                                           \
            shmem_##NAME##_atomic_compare_swap_nbi(&f, &c[1], (T)(npes + 7), (T)5, 0); \
            shmem_quiet();                                                      \
            CHECK(f == (T)npes, #NAME " cswap_nbi failing compare returns the old value"); \
            shmem_barrier_all();                                                \
            /* swap: the old values and the final one are the inputs */        \
            int right = (me + 1) % npes;                                        \
            if (me == 0) c[2] = 0;                                              \
            shmem_barrier_all();                                                \
            static T mine; /* a static local: symmetric too */                  \
            mine = shmem_##NAME##_atomic_swap(&c[2], (T)(me + 1), 0);           \
            T *olds = shmem_malloc(sizeof(T) * npes);                           \
            shmem_##NAME##_fcollect(SHMEM_TEAM_WORLD, olds, &mine, 1);          \
            T fin = shmem_##NAME##_atomic_fetch(&c[2], 0);                      \
            long long tot = (long long)fin;                                     \
            for (int i = 0; i < npes; i++) tot += (long long)olds[i];           \
            CHECK(tot == (long long)npes * (npes + 1) / 2, #NAME " swap multiset"); \
            shmem_free(olds);                                                   \
            shmem_##NAME##_atomic_fetch_add_nbi(&f, &c[3], (T)0, right);        \
            shmem_##NAME##_atomic_fetch_inc_nbi(&f, &c[3], right);              \
            shmem_##NAME##_atomic_swap_nbi(&f, &c[3], (T)1, right);             \
            shmem_##NAME##_atomic_fetch_nbi(&f, &c[3], right);                  \
            shmem_quiet();                                                      \
            shmem_barrier_all();                                                \
        }                                                                       \
        shmem_free(h);                                                          \
    }
AMO_STD(TEST_STD)

/* Bitwise AMOs: every PE sets, clears and flips its own bits of PE 0's word. */
#define TEST_BIT(NAME, T)                                                       \
    static T gb_##NAME[2];                                                      \
    static void bit_##NAME(void) {                                              \
        T *h = shmem_calloc(2, sizeof(T));                                      \
        T *where[2] = {h, gb_##NAME};                                           \
        for (int w = 0; w < 2; w++) {                                           \
            T *c = where[w];                                                    \
            c[0] = 0;                                                           \
            c[1] = (T)~(T)0;                                                    \
            shmem_barrier_all();                                                \
            T bit = (T)((T)1 << me), bit2 = (T)((T)1 << (me + 8));              \
            shmem_##NAME##_atomic_or(&c[0], bit, 0);                            \
            (void)shmem_##NAME##_atomic_fetch_or(&c[0], bit2, 0);               \
            shmem_##NAME##_atomic_and(&c[1], (T)~bit, 0);                       \
            (void)shmem_##NAME##_atomic_fetch_xor(&c[1], bit2, 0);              \
            shmem_atomic_xor(&c[0], bit2, 0);                                   \
            T f;                                                                \
            shmem_##NAME##_atomic_fetch_and_nbi(&f, &c[1], (T)~(T)0, 0);        \
            shmem_quiet();                                                      \
            shmem_barrier_all();                                                \
            T all = (T)(((T)1 << npes) - 1), all2 = (T)(all << 8);              \
            CHECK(shmem_##NAME##_atomic_fetch(&c[0], 0) == all, #NAME " or/xor (%s)", \
                  w ? "global" : "heap");                                       \
            CHECK(shmem_##NAME##_atomic_fetch(&c[1], 0) == (T)(~(T)0 & ~all & ~all2), \
                  #NAME " and/xor");                                            \
            shmem_barrier_all();                                                \
        }                                                                       \
        shmem_free(h);                                                          \
    }
AMO_BIT(TEST_BIT)

/* Extended AMOs on floating types: fetch, set, swap. */
static double gd[2];
static float gf[2];

static void extended(void) {
    double *hd = shmem_malloc(2 * sizeof(double));
    float *hf = shmem_malloc(2 * sizeof(float));
    double *ds[2] = {hd, gd};
    float *fs[2] = {hf, gf};
    for (int w = 0; w < 2; w++) {
        if (me == 0) {
            shmem_double_atomic_set(ds[w], 0.5, 0);
            shmem_atomic_set(fs[w], 0.25f, 0);
        }
        shmem_barrier_all();
        CHECK(shmem_double_atomic_fetch(ds[w], 0) == 0.5, "double fetch");
        CHECK(shmem_atomic_fetch(fs[w], 0) == 0.25f, "float fetch");
        shmem_barrier_all();
        static double od;
        static float of;
        od = shmem_double_atomic_swap(ds[w], me + 1.5, 0);
        of = shmem_float_atomic_swap(fs[w], me + 2.5f, 0);
        double *olds = shmem_malloc(sizeof(double) * npes);
        shmem_double_fcollect(SHMEM_TEAM_WORLD, olds, &od, 1);
        double tot = shmem_double_atomic_fetch(ds[w], 0);
        for (int i = 0; i < npes; i++) tot += olds[i];
        CHECK(tot == 0.5 + npes * (npes - 1) / 2.0 + 1.5 * npes, "double swap multiset");
        float *oldf = shmem_malloc(sizeof(float) * npes);
        shmem_float_fcollect(SHMEM_TEAM_WORLD, oldf, &of, 1);
        float totf = shmem_float_atomic_fetch(fs[w], 0);
        for (int i = 0; i < npes; i++) totf += oldf[i];
        CHECK(totf == 0.25f + npes * (npes - 1) / 2.0f + 2.5f * npes, "float swap multiset");
        shmem_free(oldf);
        shmem_free(olds);
        double fd;
        shmem_double_atomic_fetch_nbi(&fd, ds[w], 0);
        shmem_quiet();
        shmem_barrier_all();
    }
    shmem_free(hf);
    shmem_free(hd);
}

/* SHMEM_THREAD_MULTIPLE: threads of every PE add to PE 0's counters (heap
 * and global) at once, and put to their own slots of the right PE. */
#define THREADS 4
static long g_thread_count;
static long *h_thread_count, *h_slots;

static void *thread_body(void *arg) {
    long t = (long)arg;
    int right = (me + 1) % npes;
    for (int i = 0; i < 100; i++) {
        shmem_long_atomic_add(h_thread_count, 1, 0);
        shmem_long_atomic_fetch_add(&g_thread_count, 2, 0);
        shmem_long_p(&h_slots[me * THREADS + t], i, right);
    }
    shmem_quiet();
    return NULL;
}

static void threads(void) {
    h_thread_count = shmem_calloc(1, sizeof(long));
    h_slots = shmem_calloc((size_t)npes * THREADS, sizeof(long));
    g_thread_count = 0;
    shmem_barrier_all();
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, thread_body, (void *)t) == 0, "pthread_create");
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    shmem_barrier_all();
    CHECK(shmem_long_atomic_fetch(h_thread_count, 0) == 100L * THREADS * npes, "threads: heap total");
    CHECK(shmem_long_atomic_fetch(&g_thread_count, 0) == 200L * THREADS * npes, "threads: global total");
    int left = (me + npes - 1) % npes;
    for (int t = 0; t < THREADS; t++) CHECK(h_slots[left * THREADS + t] == 99, "threads: slot %d", t);
    shmem_barrier_all();
    shmem_free(h_slots);
    shmem_free(h_thread_count);
}

/* The deprecated AMO names (fadd, finc, add, inc, cswap, swap, fetch, set). */
static long g_dep[3];

static void deprecated(void) {
    long *h = shmem_calloc(3, sizeof(long));
    long *where[2] = {h, g_dep};
    for (int w = 0; w < 2; w++) {
        long *c = where[w];
        c[0] = c[1] = c[2] = 0;
        shmem_barrier_all();
        (void)shmem_long_fadd(&c[0], 3, 0);
        (void)shmem_long_finc(&c[0], 0);
        shmem_long_add(&c[0], 2, 0);
        shmem_long_inc(&c[0], 0);
        shmem_fadd(&c[1], 5L, 0);
        shmem_barrier_all();
        CHECK(shmem_long_fetch(&c[0], 0) == 7L * npes, "deprecated add total (%s)", w ? "global" : "heap");
        CHECK(shmem_fetch(&c[1], 0) == 5L * npes, "generic fadd");
        shmem_barrier_all();
        long seen;
        do {
            seen = shmem_long_cswap(&c[2], me, me + 1, 0);
        } while (seen != me);
        shmem_barrier_all();
        CHECK(shmem_long_fetch(&c[2], 0) == npes, "cswap chain");
        shmem_barrier_all();
        if (me == 0) shmem_long_set(&c[2], 42, 0);
        shmem_barrier_all();
        CHECK(shmem_swap(&c[2], 42L, 0) == 42, "untyped shmem_swap");
        CHECK(shmem_long_swap(&c[2], 42L, 0) == 42, "shmem_long_swap");
        shmem_barrier_all();
    }
    shmem_free(h);
}

int main(void) {
    int provided;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    me = shmem_my_pe();
    npes = shmem_n_pes();
#define RUN_STD(NAME, T) std_##NAME();
#define RUN_BIT(NAME, T) bit_##NAME();
    AMO_STD(RUN_STD)
    AMO_BIT(RUN_BIT)
    extended();
    deprecated();
    threads();
    shmem_barrier_all();
    printf("amo: ok (PE %d of %d)\n", me, npes);
    shmem_finalize();
    return 0;
}
