/* The specification's environment (OpenSHMEM 1.5, "Environment
 * Variables"), run by tests/c_abi.rs with SHMEM_SYMMETRIC_SIZE,
 * SHMEM_VERSION, SHMEM_INFO and SHMEM_DEBUG set:
 *
 *   spec_env          prints the header's version (PE 0) and "ok"
 *   spec_env big      as above, with a 1 GiB shmem_malloc (run with
 *                     SHMEM_SYMMETRIC_SIZE=1280M) written at its start,
 *                     middle and end, and a put into the next PE's block
 *                     at each place. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <shmem.h>
#include "check.h"

#define GIB ((size_t)1 << 30)

static void big(int me, int n) {
    char *b = shmem_malloc(GIB);
    CHECK(b != NULL, "shmem_malloc of 1 GiB returned NULL");
    size_t at[] = {0, GIB / 2 - 4096, GIB / 2 + 13, GIB - 4096, GIB - 8};
    size_t k = sizeof at / sizeof at[0];
    /* Local stores at each place, checked back. */
    for (size_t i = 0; i < k; i++)
        memset(b + at[i], 'a' + (int)((me + i) % 26), 8);
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < 8; j++)
            CHECK(b[at[i] + j] == 'a' + (int)((me + i) % 26), "local byte at %zu", at[i] + j);
    shmem_barrier_all();
    /* Puts into the next PE's block, at each place: 8 bytes naming this PE
     * and the place. */
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    for (size_t i = 0; i < k; i++) {
        uint64_t v = ((uint64_t)me << 32) | (uint64_t)at[i];
        shmem_putmem(b + at[i], &v, sizeof v, next);
    }
    shmem_barrier_all();
    for (size_t i = 0; i < k; i++) {
        uint64_t v;
        memcpy(&v, b + at[i], sizeof v);
        CHECK(v == (((uint64_t)prev << 32) | (uint64_t)at[i]),
              "at %zu: %llx", at[i], (unsigned long long)v);
    }
    /* And a get back from the previous PE, of what the one before it put. */
    uint64_t g;
    shmem_getmem(&g, b + at[k - 1], sizeof g, prev);
    CHECK(g == (((uint64_t)((prev + n - 1) % n) << 32) | (uint64_t)at[k - 1]),
          "get %llx", (unsigned long long)g);
    shmem_barrier_all();
    shmem_free(b);
}

int main(int argc, char **argv) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (me == 0) {
        int major = 0, minor = 0;
        char name[SHMEM_MAX_NAME_LEN];
        shmem_info_get_version(&major, &minor);
        shmem_info_get_name(name);
        CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION,
              "library %d.%d, header %d.%d", major, minor, SHMEM_MAJOR_VERSION,
              SHMEM_MINOR_VERSION);
        printf("spec_env: header %s %d.%d\n", name, SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
    }
    if (argc > 1 && strcmp(argv[1], "big") == 0)
        big(me, n);
    printf("spec_env: ok %d of %d\n", me, n);
    shmem_finalize();
    return 0;
}
