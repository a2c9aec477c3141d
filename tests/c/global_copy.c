/* Put and get on global variables at every start and length around the
 * 8-byte words the library copies whole: bytes (putmem/getmem) at offsets
 * 0..15 and lengths 0..40, 16-, 32- and 64-bit elements at element offsets
 * 0..7 and lengths 0..20, and 1 MiB at an odd offset. Every byte of the
 * destination is checked, the ones around the copy unchanged included. */
#include <stdint.h>
#include <string.h>
#include "check.h"

#define BIG ((size_t)1 << 20)
#define PAD 64

static unsigned char g_bytes[BIG + 2 * PAD];
static unsigned char g_src[BIG + 2 * PAD];
static unsigned char local[BIG + 2 * PAD];
static unsigned char want[BIG + 2 * PAD];

static int me, npes, right, left;

/* The byte a PE's source holds at i (its own pattern). */
static unsigned char pat(int pe, size_t i) {
    return (unsigned char)((pe * 29 + i * 7 + (i >> 8) * 3 + 1) & 0xff);
}

/* Sets every PE's destination to 0xEE, then synchronizes. */
static void reset(size_t len) {
    memset(g_bytes, 0xEE, len);
    shmem_barrier_all();
}

/* Checks this PE's destination after the left PE put [at, at+n) bytes of
 * its pattern there. */
static void check_put(size_t at, size_t n, size_t len, const char *what) {
    for (size_t i = 0; i < len; i++) {
        unsigned char w = (i >= at && i < at + n) ? pat(left, i) : 0xEE;
        CHECK(g_bytes[i] == w, "%s at %zu, %zu bytes: byte %zu is %d, want %d", what, at, n, i,
              g_bytes[i], w);
    }
}

/* Puts `n` elements of `size` bytes at element `at` of the right PE's
 * destination with the typed form, and gets them back from the right
 * PE's source. */
static void typed(size_t size, size_t at, size_t n) {
    size_t len = 8 * 32;
    reset(len);
    void *d = g_bytes + at * size, *s = local + at * size;
    switch (size) {
    case 2: shmem_int16_put((int16_t *)d, (int16_t *)s, n, right); break;
    case 4: shmem_int32_put((int32_t *)d, (int32_t *)s, n, right); break;
    case 8: shmem_int64_put((int64_t *)d, (int64_t *)s, n, right); break;
    }
    shmem_barrier_all();
    check_put(at * size, n * size, len, "typed put");
    memset(want, 0xAB, len);
    void *g = want + at * size, *from = g_src + at * size;
    switch (size) {
    case 2: shmem_int16_get((int16_t *)g, (int16_t *)from, n, right); break;
    case 4: shmem_int32_get((int32_t *)g, (int32_t *)from, n, right); break;
    case 8: shmem_int64_get((int64_t *)g, (int64_t *)from, n, right); break;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char w = (i >= at * size && i < (at + n) * size) ? pat(right, i) : 0xAB;
        CHECK(want[i] == w, "typed get of %zu x %zu B at %zu: byte %zu", n, size, at, i);
    }
    shmem_barrier_all();
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
    for (size_t i = 0; i < sizeof local; i++) {
        local[i] = pat(me, i);
        g_src[i] = pat(me, i);
    }
    shmem_barrier_all();
    for (size_t at = 0; at < 16; at++)
        for (size_t n = 0; n <= 40; n++) {
            reset(PAD);
            shmem_putmem(g_bytes + at, local + at, n, right);
            shmem_barrier_all();
            check_put(at, n, PAD, "putmem");
            memset(want, 0xAB, PAD);
            shmem_getmem(want + at, g_src + at, n, left);
            for (size_t i = 0; i < PAD; i++)
                CHECK(want[i] == ((i >= at && i < at + n) ? pat(left, i) : 0xAB),
                      "getmem at %zu, %zu bytes: byte %zu", at, n, i);
            shmem_barrier_all();
        }
    for (size_t size = 2; size <= 8; size *= 2)
        for (size_t at = 0; at < 8; at++)
            for (size_t n = 0; n <= 20; n++)
                typed(size, at, n);
    /* 1 MiB at an odd offset, both ways. */
    reset(sizeof g_bytes);
    shmem_putmem(g_bytes + PAD + 3, local + PAD + 3, BIG, right);
    shmem_barrier_all();
    check_put(PAD + 3, BIG, sizeof g_bytes, "putmem 1 MiB");
    memset(want, 0xAB, sizeof want);
    shmem_getmem(want + 5, g_src + 5, BIG, right);
    for (size_t i = 0; i < sizeof want; i++)
        CHECK(want[i] == ((i >= 5 && i < 5 + BIG) ? pat(right, i) : 0xAB), "getmem 1 MiB: byte %zu", i);
    shmem_barrier_all();
    printf("global_copy: ok %d of %d\n", me, npes);
    shmem_finalize();
    return 0;
}
