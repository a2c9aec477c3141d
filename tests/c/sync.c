/* Point-to-point synchronization (wait_until and test in every form),
 * signals, locks, barriers and the active-set barrier with a global pSync. */
#include <stdint.h>
#include <string.h>
#include "check.h"

static int me, npes;
static long pSync[SHMEM_BARRIER_SYNC_SIZE];      /* a global pSync */
static long g_flags[8];                          /* global ivars */
static uint64_t g_sig;
static long g_lock;                              /* zero: a free lock */
static int g_data[64];

#define SYNC_TYPES(X)                                                        \
    X(short, short) X(int, int) X(long, long) X(longlong, long long)         \
    X(ushort, unsigned short) X(uint, unsigned int) X(ulong, unsigned long)  \
    X(ulonglong, unsigned long long) X(int32, int32_t) X(int64, int64_t)     \
    X(uint32, uint32_t) X(uint64, uint64_t) X(size, size_t) X(ptrdiff, ptrdiff_t)

/* For each type: the left neighbour sets words of this PE one after the
 * other; this PE waits for them with each form. */
#define TEST_WAIT(NAME, T)                                                      \
    static T g_iv_##NAME[6];                                                    \
    static void wait_##NAME(void) {                                             \
        T *h = shmem_calloc(6, sizeof(T));                                      \
        T *where[2] = {h, g_iv_##NAME};                                         \
        int right = (me + 1) % npes;                                            \
        for (int w = 0; w < 2; w++) {                                           \
            T *iv = where[w];                                                   \
            memset(iv, 0, 6 * sizeof(T));                                       \
            shmem_barrier_all();                                                \
            CHECK(shmem_##NAME##_test(&iv[0], SHMEM_CMP_EQ, 0), #NAME " test"); \
            CHECK(!shmem_test(&iv[0], SHMEM_CMP_GT, (T)0), #NAME " generic test"); \
            shmem_barrier_all();                                                \
            shmem_##NAME##_p(&iv[0], (T)7, right);                              \
            shmem_##NAME##_wait_until(&iv[0], SHMEM_CMP_EQ, (T)7);             \
            shmem_barrier_all();                                                \
            shmem_##NAME##_p(&iv[1], (T)3, right);                              \
            shmem_wait_until(&iv[1], SHMEM_CMP_GE, (T)3);                       \
            shmem_barrier_all();                                                \
            /* all: words 2 and 3 both set (status leaves 0,1,4,5 out) */       \
            int status[6] = {1, 1, 0, 0, 1, 1};                                 \
            shmem_##NAME##_p(&iv[3], (T)1, right);                              \
            shmem_##NAME##_p(&iv[2], (T)1, right);                              \
            shmem_##NAME##_wait_until_all(iv, 6, status, SHMEM_CMP_NE, (T)0);   \
            CHECK(shmem_##NAME##_test_all(iv, 6, status, SHMEM_CMP_EQ, (T)1), #NAME " test_all"); \
            CHECK(!shmem_##NAME##_test_all(iv, 6, NULL, SHMEM_CMP_EQ, (T)1), #NAME " test_all without status"); \
            shmem_barrier_all();                                                \
            /* any and some: word 5 set */                                      \
            int st2[6] = {1, 1, 1, 1, 0, 0};                                    \
            CHECK(shmem_##NAME##_test_any(iv, 6, st2, SHMEM_CMP_GT, (T)0) == SIZE_MAX, #NAME " test_any none"); \
            shmem_barrier_all();                                                \
            shmem_##NAME##_p(&iv[5], (T)9, right);                              \
            size_t k = shmem_##NAME##_wait_until_any(iv, 6, st2, SHMEM_CMP_GT, (T)0); \
            CHECK(k == 5, #NAME " wait_until_any gave %zu", k);                 \
            size_t idx[6];                                                      \
            size_t c = shmem_##NAME##_wait_until_some(iv, 6, idx, NULL, SHMEM_CMP_EQ, (T)1); \
            CHECK(c == 2 && idx[0] == 2 && idx[1] == 3, #NAME " wait_until_some (%zu)", c); \
            c = shmem_##NAME##_test_some(iv, 6, idx, st2, SHMEM_CMP_EQ, (T)9);  \
            CHECK(c == 1 && idx[0] == 5, #NAME " test_some");                   \
            /* vector forms: a value per word */                                \
            T vals[6] = {7, 3, 1, 1, 0, 9};                                     \
            shmem_##NAME##_wait_until_all_vector(iv, 6, NULL, SHMEM_CMP_EQ, vals); \
            CHECK(shmem_##NAME##_test_all_vector(iv, 6, NULL, SHMEM_CMP_EQ, vals), #NAME " test_all_vector"); \
            vals[4] = 1;                                                        \
            CHECK(shmem_##NAME##_wait_until_any_vector(iv, 6, NULL, SHMEM_CMP_LT, vals) == 4, #NAME " any_vector"); \
            CHECK(shmem_##NAME##_test_any_vector(iv, 6, st2, SHMEM_CMP_LT, vals) == 4, #NAME " test_any_vector"); \
            CHECK(shmem_##NAME##_wait_until_some_vector(iv, 6, idx, NULL, SHMEM_CMP_NE, vals) == 1, #NAME " some_vector"); \
            CHECK(shmem_##NAME##_test_some_vector(iv, 6, idx, NULL, SHMEM_CMP_LE, vals) == 6, #NAME " test_some_vector"); \
            shmem_barrier_all();                                                \
        }                                                                       \
        shmem_free(h);                                                          \
    }
SYNC_TYPES(TEST_WAIT)

/* put_signal in every shape: data then signal, so once the signal is seen
 * the data is there. */
static void signals(void) {
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    uint64_t *hsig = shmem_calloc(1, sizeof(uint64_t));
    int *hdata = shmem_calloc(64, sizeof(int));
    uint64_t *sigs[2] = {hsig, &g_sig};
    int *datas[2] = {hdata, g_data};
    for (int w = 0; w < 4; w++) {
        uint64_t *sig = sigs[w & 1];
        int *data = datas[w >> 1];
        *sig = 0;
        memset(data, 0, 64 * sizeof(int));
        shmem_barrier_all();
        int src[64];
        for (int round = 1; round <= 3; round++) {
            for (int i = 0; i < 64; i++) src[i] = me * 1000 + round * 100 + i;
            if (round == 1)
                shmem_int_put_signal(data, src, 64, sig, 1, SHMEM_SIGNAL_ADD, right);
            else if (round == 2)
                shmem_putmem_signal_nbi(data, src, 64 * sizeof(int), sig, 2, SHMEM_SIGNAL_ADD, right);
            else
                shmem_put_signal(data, src, 64, sig, 10, SHMEM_SIGNAL_SET, right);
            uint64_t want = round == 3 ? 10 : (uint64_t)(round * (round + 1) / 2);
            uint64_t v = shmem_signal_wait_until(sig, SHMEM_CMP_EQ, want);
            CHECK(v == want, "signal value %llu", (unsigned long long)v);
            CHECK(shmem_signal_fetch(sig) == want, "signal_fetch");
            for (int i = 0; i < 64; i++)
                CHECK(data[i] == left * 1000 + round * 100 + i,
                      "put_signal data[%d] round %d (signal %s, data %s)", i, round,
                      (w & 1) ? "global" : "heap", (w >> 1) ? "global" : "heap");
            shmem_barrier_all();
        }
    }
    shmem_free(hdata);
    shmem_free(hsig);
}

/* Locks: a non-atomic read-modify-write of PE 0's counter under the lock
 * (heap and global lock words) must lose no update. */
static void locks(void) {
    long *hlock = shmem_calloc(1, sizeof(long));
    long *lockp[2] = {hlock, &g_lock};
    int *counter = shmem_calloc(1, sizeof(int));
    for (int w = 0; w < 2; w++) {
        long *lock = lockp[w];
        if (me == 0) *counter = 0;
        shmem_barrier_all();
        for (int i = 0; i < 50; i++) {
            if (i % 2 == 0) {
                shmem_set_lock(lock);
            } else {
                while (shmem_test_lock(lock)) {
                }
            }
            int v = shmem_int_g(counter, 0);
            shmem_int_p(counter, v + 1, 0);
            shmem_quiet();
            shmem_clear_lock(lock);
        }
        shmem_barrier_all();
        CHECK(shmem_int_g(counter, 0) == 50 * npes, "lock counter %d (%s lock)",
              shmem_int_g(counter, 0), w ? "global" : "heap");
        shmem_barrier_all();
    }
    shmem_free(counter);
    shmem_free(hlock);
}

/* Barriers: every PE's store before a barrier is seen after it; the
 * active-set barrier over the even PEs with a global pSync. */
static void barriers(void) {
    long *flags = shmem_calloc(8, sizeof(long));
    for (int round = 0; round < 10; round++) {
        for (int pe = 0; pe < npes; pe++) shmem_long_p(&flags[me % 8], round * 100 + me, pe);
        switch (round % 3) {
        case 0: shmem_barrier_all(); break;
        case 1: shmem_team_sync(SHMEM_TEAM_WORLD); shmem_quiet(); shmem_sync_all(); break;
        default: shmem_quiet(); shmem_sync_all(); break;
        }
        for (int pe = 0; pe < npes && pe < 8; pe++)
            CHECK(flags[pe] >= round * 100 + pe, "barrier round %d flag %d", round, pe);
        shmem_barrier_all();
    }
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    int nev = (npes + 1) / 2;
    if (me % 2 == 0) {
        for (int round = 0; round < 5; round++) {
            for (int k = 0; k < nev; k++) shmem_long_p(&g_flags[me % 8], round + 1, 2 * k);
            shmem_barrier(0, 1, nev, pSync);
            for (int k = 0; k < nev && 2 * k < 8; k++)
                CHECK(g_flags[2 * k] >= round + 1, "active-set barrier round %d", round);
            shmem_sync(0, 1, nev, pSync);
        }
        CHECK(pSync[0] == SHMEM_SYNC_VALUE, "pSync restored");
    }
    shmem_barrier_all();
    shmem_free(flags);
}

/* The symmetric heap's calls: malloc(0), align, hints, calloc, realloc
 * (contents kept), shmem_ptr and shmem_team_ptr. */
static void memory(void) {
    int right = (me + 1) % npes;
    CHECK(shmem_malloc(0) == NULL, "malloc(0)");
    char *a = shmem_align(4096, 100);
    CHECK(a && (uintptr_t)a % 4096 == 0, "align 4096: %p", (void *)a);
    long *h = shmem_malloc_with_hints(8 * sizeof(long), SHMEM_MALLOC_ATOMICS_REMOTE);
    CHECK(h != NULL, "malloc_with_hints");
    int *c = shmem_calloc(1000, sizeof(int));
    for (int i = 0; i < 1000; i++) CHECK(c[i] == 0, "calloc [%d]", i);
    for (int i = 0; i < 1000; i++) c[i] = me * 1000 + i;
    c = shmem_realloc(c, 5000 * sizeof(int));
    for (int i = 0; i < 1000; i++) CHECK(c[i] == me * 1000 + i, "realloc kept [%d]", i);
    shmem_int_p(&c[4999], me, right);
    shmem_barrier_all();
    CHECK(c[4999] == (me + npes - 1) % npes, "put into the grown block");
    int *peer = shmem_ptr(c, right);
    CHECK(peer == shmem_team_ptr(SHMEM_TEAM_WORLD, c, right), "team_ptr");
    if (peer) CHECK(peer[7] == right * 1000 + 7, "load through shmem_ptr");
    shmem_barrier_all();
    shmem_free(c);
    shmem_free(h);
    shmem_free(a);
    shmem_free(NULL);
    /* The deprecated allocator names. */
    long *old = shmalloc(10 * sizeof(long));
    old = shrealloc(old, 20 * sizeof(long));
    long *al = shmemalign(256, 8);
    CHECK(old && al && (uintptr_t)al % 256 == 0, "shmalloc/shrealloc/shmemalign");
    shfree(al);
    shfree(old);
    /* An invalid context: quiet, fence and destroy do nothing. */
    shmem_ctx_quiet(SHMEM_CTX_INVALID);
    shmem_ctx_fence(SHMEM_CTX_INVALID);
    shmem_ctx_destroy(SHMEM_CTX_INVALID);
    shmem_sync(SHMEM_TEAM_WORLD);
    /* The untyped deprecated waits on a long. */
    static long flag;
    shmem_long_p(&flag, 5, (me + 1) % npes);
    (shmem_wait_until)(&flag, SHMEM_CMP_EQ, 5);
    (shmem_wait)(&flag, 4);
    shmem_barrier_all();
}

int main(void) {
    int provided = -1;
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0, "init_thread");
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
    shmem_query_thread(&provided);
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "query_thread");
    me = shmem_my_pe();
    npes = shmem_n_pes();
    int major, minor;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION, "version");
    CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0, "name %s", name);
    CHECK(shmem_pe_accessible((me + 1) % npes) && !shmem_pe_accessible(npes), "pe_accessible");
    CHECK(shmem_addr_accessible(g_flags, (me + 1) % npes), "addr_accessible global");
    CHECK(!shmem_addr_accessible(&major, 0), "addr_accessible stack");
    CHECK(shmem_ptr(g_flags, me) == (void *)g_flags, "shmem_ptr self");
    memory();
#define RUN(NAME, T) wait_##NAME();
    SYNC_TYPES(RUN)
    signals();
    locks();
    barriers();
    printf("sync: ok (PE %d of %d)\n", me, npes);
    shmem_finalize();
    return 0;
}
