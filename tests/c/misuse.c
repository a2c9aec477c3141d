/* Misuse that must end the job with a message naming the call, never
 * silent corruption. argv[1] picks the mistake. */
#include <stdlib.h>
#include <string.h>
#include <shmem.h>

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "before-init") == 0) {
        static int x;
        shmem_int_p(&x, 1, 0);
        return 0;
    }
    shmem_init();
    int local[4] = {0};
    int *heap = shmem_malloc(4 * sizeof(int));
    if (strcmp(what, "stack-dest") == 0) {
        shmem_int_put(local, heap, 4, 0); /* dest is not symmetric */
    } else if (strcmp(what, "bad-pe") == 0) {
        shmem_int_p(heap, 1, shmem_n_pes()); /* no such PE */
    } else if (strcmp(what, "past-heap-block") == 0) {
        shmem_int_put(heap + 2, local, 4000000, 0); /* runs past the heap */
    } else if (strcmp(what, "bad-cmp") == 0) {
        shmem_int_wait_until(heap, 42, 0);
    } else if (strcmp(what, "free-twice") == 0) {
        shmem_free(heap);
        shmem_free(heap);
    } else if (strcmp(what, "global-exit") == 0) {
        /* the others wait below */
        if (shmem_my_pe() == 1) shmem_global_exit(argc > 2 ? atoi(argv[2]) : 7);
        shmem_barrier_all();
    } else if (strcmp(what, "bad-root") == 0) {
        shmem_int_broadcast(SHMEM_TEAM_WORLD, heap, heap, 4, shmem_n_pes());
    }
    shmem_finalize();
    return 0;
}
