/* Put and get in every typed, sized and mem form (blocking, _nbi, p/g,
 * iput/iget, ctx forms and the C11 generic macros), on the symmetric heap
 * and on global variables, checked against the values each PE computes. */
#include <string.h>
#include "check.h"

#define N 67 /* odd: crosses no alignment by luck */

static int me, npes, right, left;
static shmem_team_t evens = SHMEM_TEAM_INVALID;
static shmem_ctx_t even_ctx = SHMEM_CTX_INVALID;

#define TEST_TYPE(NAME, T)                                                      \
    static T g_dst_##NAME[3 * N], g_src_##NAME[3 * N];                          \
    static void test_##NAME(void) {                                             \
        T *h_dst = shmem_malloc(sizeof(T) * 3 * N);                             \
        T *h_src = shmem_malloc(sizeof(T) * 3 * N);                             \
        T local[3 * N];                                                         \
        T *dsts[2] = {h_dst, g_dst_##NAME};                                     \
        T *srcs[2] = {h_src, g_src_##NAME};                                     \
        for (int w = 0; w < 2; w++) {                                           \
            T *dst = dsts[w], *src = srcs[w];                                   \
            for (int i = 0; i < 3 * N; i++) {                                   \
                src[i] = VAL(T, me, i);                                         \
                dst[i] = (T)0;                                                  \
                local[i] = VAL(T, me, i);                                       \
            }                                                                   \
            shmem_barrier_all();                                                \
            /* put, put_nbi + quiet, generic put of the tail */                 \
            shmem_##NAME##_put(dst, local, N, right);                           \
            shmem_##NAME##_put_nbi(dst + N, local + N, N - 1, right);           \
            shmem_quiet();                                                      \
            shmem_put(dst + 2 * N - 1, local + 2 * N - 1, 1, right);            \
            shmem_barrier_all();                                                \
            for (int i = 0; i < 2 * N; i++)                                     \
                CHECK(dst[i] == VAL(T, left, i), #NAME " put[%d] (%s)", i,      \
                      w ? "global" : "heap");                                   \
            /* get, get_nbi, generic get, g */                                  \
            T got[N];                                                           \
            shmem_##NAME##_get(got, src + 3, N - 3, right);                     \
            for (int i = 0; i < N - 3; i++)                                     \
                CHECK(got[i] == VAL(T, right, i + 3), #NAME " get[%d]", i);     \
            shmem_##NAME##_get_nbi(got, src + N, 5, left);                      \
            shmem_quiet();                                                      \
            for (int i = 0; i < 5; i++)                                         \
                CHECK(got[i] == VAL(T, left, N + i), #NAME " get_nbi[%d]", i);  \
            shmem_get(got, src + 7, 2, right);                                  \
            CHECK(got[1] == VAL(T, right, 8), #NAME " generic get");            \
            CHECK(shmem_##NAME##_g(src + 9, left) == VAL(T, left, 9), #NAME " g"); \
            CHECK(shmem_g(src + 10, right) == VAL(T, right, 10), #NAME " generic g"); \
            shmem_barrier_all();                                                \
            /* p into the third block, then strided iput/iget */                \
            shmem_##NAME##_p(dst + 2 * N, VAL(T, me, 1000), right);             \
            shmem_p(dst + 2 * N + 1, VAL(T, me, 1001), right);                  \
            shmem_##NAME##_iput(dst + 2 * N + 2, local, 3, 2, 10, right);       \
            shmem_barrier_all();                                                \
            CHECK(dst[2 * N] == VAL(T, left, 1000), #NAME " p");                \
            CHECK(dst[2 * N + 1] == VAL(T, left, 1001), #NAME " generic p");    \
            for (int i = 0; i < 10; i++)                                        \
                CHECK(dst[2 * N + 2 + 3 * i] == VAL(T, left, 2 * i), #NAME " iput[%d]", i); \
            T sparse[40];                                                       \
            shmem_##NAME##_iget(sparse, src, 4, 3, 9, right);                   \
            for (int i = 0; i < 9; i++)                                         \
                CHECK(sparse[4 * i] == VAL(T, right, 3 * i), #NAME " iget[%d]", i); \
            shmem_iget(sparse, src + 1, 1, 2, 3, left);                         \
            CHECK(sparse[2] == VAL(T, left, 5), #NAME " generic iget");         \
            /* ctx forms: the default context, and a context on the team of  \
             * even PEs, whose PE numbers are team numbers */                   \
            shmem_barrier_all();                                                \
            shmem_ctx_##NAME##_p(SHMEM_CTX_DEFAULT, dst, VAL(T, me, 2000), right); \
            if (even_ctx != SHMEM_CTX_INVALID) {                                \
                int tn = shmem_team_n_pes(evens);                               \
                int tme = shmem_team_my_pe(evens);                              \
                int tright = (tme + 1) % tn;                                    \
                shmem_ctx_##NAME##_put(even_ctx, dst + 1, local, 1, tright);    \
                shmem_put(even_ctx, dst + 2, local + 1, 1, tright);             \
                shmem_ctx_quiet(even_ctx);                                      \
            }                                                                   \
            shmem_barrier_all();                                                \
            CHECK(dst[0] == VAL(T, left, 2000), #NAME " ctx p");                \
            if (even_ctx != SHMEM_CTX_INVALID) {                                \
                int tn = shmem_team_n_pes(evens);                               \
                int tme = shmem_team_my_pe(evens);                              \
                int tleft = shmem_team_translate_pe(evens, (tme + tn - 1) % tn, \
                                                    SHMEM_TEAM_WORLD);          \
                CHECK(dst[1] == VAL(T, tleft, 0), #NAME " team ctx put");       \
                CHECK(dst[2] == VAL(T, tleft, 1), #NAME " generic team ctx put"); \
            }                                                                   \
            shmem_barrier_all();                                                \
        }                                                                       \
        shmem_free(h_src);                                                      \
        shmem_free(h_dst);                                                      \
    }
RMA_TYPES(TEST_TYPE)

/* Sized and mem forms on bytes of a heap block and a global. */
static unsigned char g_bytes[4096];

static void test_sized(void) {
    unsigned char *h = shmem_malloc(4096);
    unsigned char *where[2] = {h, g_bytes};
    unsigned char src[4096];
    for (int i = 0; i < 4096; i++) src[i] = (unsigned char)(me * 13 + i * 7);
    for (int w = 0; w < 2; w++) {
        unsigned char *d = where[w];
        memset(d, 0, 4096);
        shmem_barrier_all();
        shmem_putmem(d + 1, src + 1, 100, right);          /* odd address */
        shmem_put8(d + 101, src + 101, 27, right);
        shmem_put16(d + 128, src + 128, 32, right);
        shmem_put32(d + 192, src + 192, 16, right);
        shmem_put64(d + 256, src + 256, 8, right);
        shmem_put128(d + 320, src + 320, 4, right);
        shmem_putmem_nbi(d + 384, src + 384, 3008, right);
        shmem_put64_nbi(d + 3392, src + 3392, 2, right);
        shmem_ctx_putmem(SHMEM_CTX_DEFAULT, d + 3408, src + 3408, 608, right);
        shmem_iput32(d + 4016, src + 4016, 2, 1, 4, right); /* words 0,2,4,6 */
        shmem_quiet();
        shmem_barrier_all();
        for (int i = 1; i < 4016; i++)
            CHECK(d[i] == (unsigned char)(left * 13 + i * 7), "sized put byte %d (%s)", i,
                  w ? "global" : "heap");
        for (int k = 0; k < 4; k++)
            for (int b = 0; b < 4; b++)
                CHECK(d[4016 + 8 * k + b] == (unsigned char)(left * 13 + (4016 + 4 * k + b) * 7),
                      "iput32 word %d", k);
        unsigned char got[4096];
        shmem_getmem(got, d + 5, 2000, right);
        shmem_get64(got + 2000, d + 2008, 10, right);
        shmem_getmem_nbi(got + 2080, d + 2085, 11, left);
        shmem_quiet();
        for (int i = 0; i < 2000; i++)
            CHECK(got[i] == (unsigned char)(me * 13 + (i + 5) * 7), "getmem byte %d", i);
        for (int i = 0; i < 80; i++)
            CHECK(got[2000 + i] == (unsigned char)(me * 13 + (2008 + i) * 7), "get64 byte %d", i);
        int ll = (left + npes - 1) % npes;
        for (int i = 0; i < 11; i++)
            CHECK(got[2080 + i] == (unsigned char)(ll * 13 + (2085 + i) * 7), "getmem_nbi byte %d", i);
        shmem_barrier_all();
    }
    shmem_free(h);
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &evens);
    if (evens != SHMEM_TEAM_INVALID)
        CHECK(shmem_team_create_ctx(evens, 0, &even_ctx) == 0, "team_create_ctx");
#define RUN(NAME, T) test_##NAME();
    RMA_TYPES(RUN)
    test_sized();
    if (even_ctx != SHMEM_CTX_INVALID) shmem_ctx_destroy(even_ctx);
    if (evens != SHMEM_TEAM_INVALID) shmem_team_destroy(evens);
    shmem_barrier_all();
    printf("rma: ok (PE %d of %d)\n", me, npes);
    shmem_finalize();
    return 0;
}
