/* Collectives on teams (1.5) and active sets (pSync/pWrk), on the heap and
 * on global variables, on WORLD and on split teams, checked against what
 * each PE computes from the others' patterns. */
#include <complex.h>
#include <string.h>
#include "check.h"

#define N 300 /* elements per member: crosses small-message paths */

static int me, npes;
static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pSync2[SHMEM_BCAST_SYNC_SIZE];
static int g_src[N * 8], g_dst[N * 8 * 8];
static long g_pwrk[N];
static double _Complex g_cz[16];
/* Heap objects of team_int, allocated by every PE (shmem_malloc is a
 * collective over WORLD), used by the members of each team. */
static int *h_src, *h_dst;

/* The members of `team` as WORLD PEs. */
static int world_of(shmem_team_t team, int i) {
    return shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
}

/* Team collectives of ints on `team`; `heap` picks heap or global objects. */
static void team_int(shmem_team_t team, int heap) {
    if (team == SHMEM_TEAM_INVALID) return;
    int tn = shmem_team_n_pes(team), tme = shmem_team_my_pe(team);
    int *src = heap ? h_src : g_src;
    int *dst = heap ? h_dst : g_dst;
    const char *where = heap ? "heap" : "global";
    for (int root = 0; root < tn; root += 2) {
        for (int i = 0; i < N; i++) { src[i] = VAL(int, me, i); dst[i] = -1; }
        CHECK(shmem_int_broadcast(team, dst, src, N, root) == 0, "broadcast rc");
        for (int i = 0; i < N; i++)
            CHECK(dst[i] == VAL(int, world_of(team, root), i), "broadcast root %d [%d] (%s)", root, i, where);
        shmem_broadcastmem(team, dst, src, 3, root); /* bytes */
    }
    /* fcollect and collect (member k gives k+1 elements) */
    for (int i = 0; i < N; i++) src[i] = VAL(int, me, i);
    shmem_int_fcollect(team, dst, src, N);
    for (int k = 0; k < tn; k++)
        for (int i = 0; i < N; i++)
            CHECK(dst[k * N + i] == VAL(int, world_of(team, k), i), "fcollect [%d][%d] (%s)", k, i, where);
    shmem_collect(team, dst, src, (size_t)(tme + 1));
    int at = 0;
    for (int k = 0; k < tn; k++)
        for (int i = 0; i <= k; i++, at++)
            CHECK(dst[at] == VAL(int, world_of(team, k), i), "collect [%d][%d] (%s)", k, i, where);
    /* alltoall: block j of member k goes to member j */
    int per = N / tn;
    for (int j = 0; j < tn; j++)
        for (int i = 0; i < per; i++) src[j * per + i] = me * 10000 + j * 100 + i;
    shmem_int_alltoall(team, dst, src, per);
    for (int k = 0; k < tn; k++)
        for (int i = 0; i < per; i++)
            CHECK(dst[k * per + i] == world_of(team, k) * 10000 + tme * 100 + i, "alltoall (%s)", where);
    /* alltoalls with strides 3 (dest) and 2 (source) */
    int m = 4;
    for (int j = 0; j < tn * m; j++) src[2 * j] = me * 1000 + j;
    shmem_int_alltoalls(team, dst, src, 3, 2, m);
    for (int k = 0; k < tn; k++)
        for (int i = 0; i < m; i++)
            CHECK(dst[3 * (k * m + i)] == world_of(team, k) * 1000 + tme * m + i, "alltoalls (%s)", where);
    /* reductions, out of place and in place */
    for (int i = 0; i < N; i++) src[i] = VAL(int, me, i) - 50;
    long long sum[N];
    int mx[N], mn[N], an[N], orr[N], xo[N];
    for (int i = 0; i < N; i++) {
        sum[i] = 0; mx[i] = -1000; mn[i] = 1000; an[i] = -1; orr[i] = 0; xo[i] = 0;
        for (int k = 0; k < tn; k++) {
            int v = VAL(int, world_of(team, k), i) - 50;
            sum[i] += v; if (v > mx[i]) mx[i] = v; if (v < mn[i]) mn[i] = v;
            an[i] &= v; orr[i] |= v; xo[i] ^= v;
        }
    }
    shmem_int_sum_reduce(team, dst, src, N);
    for (int i = 0; i < N; i++) CHECK(dst[i] == sum[i], "sum_reduce [%d] (%s)", i, where);
    shmem_max_reduce(team, dst, src, N);
    for (int i = 0; i < N; i++) CHECK(dst[i] == mx[i], "max_reduce [%d] (%s)", i, where);
    shmem_int_min_reduce(team, dst, src, N);
    for (int i = 0; i < N; i++) CHECK(dst[i] == mn[i], "min_reduce [%d]", i);
    shmem_int32_and_reduce(team, dst, src, N);
    for (int i = 0; i < N; i++) CHECK(dst[i] == an[i], "and_reduce [%d]", i);
    shmem_int32_or_reduce(team, dst, src, N);
    for (int i = 0; i < N; i++) CHECK(dst[i] == orr[i], "or_reduce [%d]", i);
    shmem_int32_xor_reduce(team, dst, src, N);
    for (int i = 0; i < N; i++) CHECK(dst[i] == xo[i], "xor_reduce [%d]", i);
    shmem_int_sum_reduce(team, src, src, N); /* in place */
    for (int i = 0; i < N; i++) CHECK(src[i] == sum[i], "in-place sum_reduce [%d] (%s)", i, where);
    shmem_team_sync(team);
}

/* Reductions over the other types on WORLD (heap). */
#define RED_TYPES(X)                                                          \
    X(char, char) X(schar, signed char) X(short, short) X(long, long)         \
    X(longlong, long long) X(ptrdiff, ptrdiff_t) X(uchar, unsigned char)      \
    X(ushort, unsigned short) X(uint, unsigned int) X(ulong, unsigned long)   \
    X(ulonglong, unsigned long long) X(int8, int8_t) X(int16, int16_t)        \
    X(int64, int64_t) X(uint8, uint8_t) X(uint16, uint16_t) X(uint32, uint32_t) \
    X(uint64, uint64_t) X(size, size_t) X(float, float) X(double, double)
#define TEST_RED(NAME, T)                                                     \
    static void red_##NAME(void) {                                            \
        T *s = shmem_malloc(sizeof(T) * 40), *d = shmem_malloc(sizeof(T) * 40); \
        for (int i = 0; i < 40; i++) s[i] = (T)((me + i) % 7 + 1);            \
        shmem_##NAME##_sum_reduce(SHMEM_TEAM_WORLD, d, s, 40);                \
        for (int i = 0; i < 40; i++) {                                        \
            T e = 0;                                                          \
            for (int k = 0; k < npes; k++) e = (T)(e + (T)((k + i) % 7 + 1)); \
            CHECK(d[i] == e, #NAME " sum [%d]", i);                           \
        }                                                                     \
        shmem_##NAME##_prod_reduce(SHMEM_TEAM_WORLD, d, s, 40);               \
        for (int i = 0; i < 40; i++) {                                        \
            T e = 1;                                                          \
            for (int k = 0; k < npes; k++) e = (T)(e * (T)((k + i) % 7 + 1)); \
            CHECK(d[i] == e, #NAME " prod [%d]", i);                          \
        }                                                                     \
        shmem_##NAME##_max_reduce(SHMEM_TEAM_WORLD, d, s, 40);                \
        for (int i = 0; i < 40; i++) {                                        \
            T e = 0;                                                          \
            for (int k = 0; k < npes; k++) if ((T)((k + i) % 7 + 1) > e) e = (T)((k + i) % 7 + 1); \
            CHECK(d[i] == e, #NAME " max [%d]", i);                           \
        }                                                                     \
        shmem_free(d);                                                        \
        shmem_free(s);                                                        \
    }
RED_TYPES(TEST_RED)

/* Active-set collectives with pSync (global and heap) and pWrk. */
static void active_sets(void) {
    long *hsync = shmem_malloc(sizeof(long) * SHMEM_REDUCE_SYNC_SIZE);
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSync[i] = hsync[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) pSync2[i] = SHMEM_SYNC_VALUE;
    long *hsrc = shmem_malloc(sizeof(long) * N * 8), *hdst = shmem_malloc(sizeof(long) * N * 8);
    long *hwrk = shmem_malloc(sizeof(long) * (N / 2 + 1));
    static long gsrc[N * 8], gdst[N * 8];
    shmem_barrier_all();
    /* the odd PEs when there are two or more, else PE 0 alone */
    int start = npes > 1 ? 1 : 0, log = 1, size = npes > 1 ? npes / 2 : 1;
    int member = npes > 1 ? (me % 2 == 1 && me / 2 < size) : 1;
    if (member) {
        for (int w = 0; w < 2; w++) {
            long *src = w ? gsrc : hsrc, *dst = w ? gdst : hdst;
            long *ps = w ? pSync : hsync;
            long *wrk = w ? g_pwrk : hwrk;
            const char *where = w ? "global" : "heap";
            int idx = (me - start) >> log;
            for (int i = 0; i < N; i++) { src[i] = VAL(long, me, i); dst[i] = -7; }
            shmem_broadcast64(dst, src, N, 0, start, log, size, ps);
            for (int i = 0; i < N; i++)
                CHECK(dst[i] == (idx == 0 ? -7 : VAL(long, start, i)), "broadcast64 [%d] (%s)", i, where);
            shmem_fcollect64(dst, src, N, start, log, size, pSync2);
            for (int k = 0; k < size; k++)
                for (int i = 0; i < N; i++)
                    CHECK(dst[k * N + i] == VAL(long, start + (k << log), i), "fcollect64 (%s)", where);
            shmem_collect32(dst, src, (size_t)(2 * (idx + 1)), start, log, size, ps); /* 2(idx+1) ints */
            int *d32 = (int *)dst, *s32 = (int *)src, at = 0;
            for (int k = 0; k < size; k++)
                for (int i = 0; i < 2 * (k + 1); i++, at++) {
                    long v = VAL(long, start + (k << log), i / 2);
                    CHECK(d32[at] == ((int *)&v)[i % 2], "collect32 (%s)", where);
                }
            (void)s32;
            for (int j = 0; j < size * 3; j++) src[j] = me * 100 + j;
            shmem_alltoall64(dst, src, 3, start, log, size, ps);
            for (int k = 0; k < size; k++)
                for (int i = 0; i < 3; i++)
                    CHECK(dst[k * 3 + i] == (start + (k << log)) * 100 + idx * 3 + i, "alltoall64 (%s)", where);
            for (int j = 0; j < size * 2; j++) src[3 * j] = me * 100 + j;
            shmem_alltoalls64(dst, src, 2, 3, 2, start, log, size, ps);
            for (int k = 0; k < size; k++)
                for (int i = 0; i < 2; i++)
                    CHECK(dst[2 * (k * 2 + i)] == (start + (k << log)) * 100 + idx * 2 + i, "alltoalls64 (%s)", where);
            for (int i = 0; i < N; i++) src[i] = VAL(long, me, i);
            shmem_long_sum_to_all(dst, src, N, start, log, size, wrk, ps);
            for (int i = 0; i < N; i++) {
                long e = 0;
                for (int k = 0; k < size; k++) e += VAL(long, start + (k << log), i);
                CHECK(dst[i] == e, "sum_to_all [%d] (%s)", i, where);
            }
            shmem_long_max_to_all(src, src, N, start, log, size, wrk, ps); /* in place */
            for (int i = 0; i < N; i++) {
                long e = 0;
                for (int k = 0; k < size; k++) if (VAL(long, start + (k << log), i) > e) e = VAL(long, start + (k << log), i);
                CHECK(src[i] == e, "max_to_all in place [%d] (%s)", i, where);
            }
            shmem_barrier(start, log, size, ps);
            CHECK(ps[0] == SHMEM_SYNC_VALUE, "pSync restored (%s)", where);
        }
    }
    shmem_barrier_all();
    shmem_free(hwrk);
    shmem_free(hdst);
    shmem_free(hsrc);
    shmem_free(hsync);
}

/* Complex sums and products (host-reduced), team and active set. */
static void complex_reductions(void) {
    double _Complex *h = shmem_malloc(sizeof(double _Complex) * 16);
    static double _Complex d[16];
    for (int i = 0; i < 16; i++) { h[i] = (me + 1) + i * I; g_cz[i] = h[i]; }
    shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, d, h, 16);
    for (int i = 0; i < 16; i++) {
        double _Complex e = 0;
        for (int k = 0; k < npes; k++) e += (k + 1) + i * I;
        CHECK(d[i] == e, "complexd sum [%d]", i);
    }
    shmem_complexd_prod_reduce(SHMEM_TEAM_WORLD, d, g_cz, 16);
    for (int i = 0; i < 16; i++) {
        double _Complex e = 1;
        for (int k = 0; k < npes; k++) e *= (k + 1) + i * I;
        CHECK(cabs(d[i] - e) <= 1e-9 * cabs(e), "complexd prod [%d]", i);
    }
    static float _Complex fz[4], fd[4];
    static double _Complex zw[3];
    static long zs[SHMEM_REDUCE_SYNC_SIZE];
    for (int i = 0; i < 4; i++) fz[i] = 1.0f + me * I;
    shmem_complexf_sum_to_all(fd, fz, 4, 0, 0, npes, (float _Complex *)zw, zs);
    CHECK(crealf(fd[2]) == (float)npes && cimagf(fd[2]) == (float)(npes * (npes - 1) / 2), "complexf sum_to_all");
    shmem_barrier_all();
    shmem_free(h);
}

/* long double reductions (computed by the header's C code) on a team and
 * an active set, and the team form of shmem_sync. */
static void long_double_reductions(void) {
    long double *h = shmem_malloc(sizeof(long double) * 9);
    static long double d[9], w[9];
    static long ps[SHMEM_REDUCE_SYNC_SIZE];
    for (int i = 0; i < 9; i++) h[i] = (me + 1) * 0.5L + i;
    shmem_sync(SHMEM_TEAM_WORLD);
    shmem_longdouble_sum_reduce(SHMEM_TEAM_WORLD, d, h, 9);
    for (int i = 0; i < 9; i++) {
        long double e = 0;
        for (int k = 0; k < npes; k++) e += (k + 1) * 0.5L + i;
        CHECK(d[i] == e, "longdouble sum [%d]", i);
    }
    shmem_max_reduce(SHMEM_TEAM_WORLD, d, h, 9); /* through the generic macro */
    CHECK(d[3] == npes * 0.5L + 3, "longdouble max");
    shmem_longdouble_prod_to_all(h, h, 9, 0, 0, npes, w, ps); /* in place */
    long double e = 1;
    for (int k = 0; k < npes; k++) e *= (k + 1) * 0.5L + 2;
    CHECK(h[2] == e, "longdouble prod_to_all");
    static double _Complex zs[2], zd[2];
    zs[0] = me + 1.0;
    zs[1] = 2.0 * I;
    shmem_sum_reduce(SHMEM_TEAM_WORLD, zd, zs, 2); /* complex through the generic macro */
    CHECK(creal(zd[0]) == npes * (npes + 1) / 2.0 && cimag(zd[1]) == 2.0 * npes, "complex generic sum");
    shmem_barrier_all();
    shmem_free(h);
}

/* Teams: split_strided, split_2d, get_config, translate, destroy. */
static void teams(void) {
    shmem_team_config_t conf = {.num_contexts = 2}, got = {0};
    shmem_team_t odd = SHMEM_TEAM_INVALID, x = SHMEM_TEAM_INVALID, y = SHMEM_TEAM_INVALID;
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, npes > 1 ? 1 : 0, 2, npes > 1 ? npes / 2 : 1,
                                      &conf, SHMEM_TEAM_NUM_CONTEXTS, &odd);
    CHECK(rc == 0, "split_strided rc %d", rc);
    if (odd != SHMEM_TEAM_INVALID) {
        CHECK(shmem_team_get_config(odd, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 2, "get_config");
        CHECK(shmem_team_translate_pe(odd, 0, SHMEM_TEAM_WORLD) == (npes > 1 ? 1 : 0), "translate");
    } else {
        CHECK(shmem_team_my_pe(odd) == -1 && shmem_team_n_pes(odd) == -1, "invalid team queries");
    }
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, SHMEM_TEAM_SHARED) >= 0, "translate to SHARED");
    team_int(odd, 1);
    team_int(odd, 0);
    rc = shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &x, NULL, 0, &y);
    CHECK(rc == 0 && x != SHMEM_TEAM_INVALID && y != SHMEM_TEAM_INVALID, "split_2d");
    CHECK(shmem_team_my_pe(x) == me % 2 && shmem_team_my_pe(y) == me / 2, "2d numbers");
    team_int(x, 1);
    team_int(y, 0);
    shmem_team_destroy(x);
    shmem_team_destroy(y);
    if (odd != SHMEM_TEAM_INVALID) shmem_team_destroy(odd);
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    h_src = shmem_malloc(sizeof(int) * N * 8);
    h_dst = shmem_malloc(sizeof(int) * N * 8 * 8);
    team_int(SHMEM_TEAM_WORLD, 1);
    team_int(SHMEM_TEAM_WORLD, 0);
#define RUN(NAME, T) red_##NAME();
    RED_TYPES(RUN)
    active_sets();
    complex_reductions();
    long_double_reductions();
    teams();
    shmem_free(h_dst);
    shmem_free(h_src);
    printf("coll: ok (PE %d of %d)\n", me, npes);
    shmem_finalize();
    return 0;
}
