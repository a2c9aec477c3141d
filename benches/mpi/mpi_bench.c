/* mpi_bench: the peer baseline of vkshmem-bench (`cargo xtask bench --compare-mpi`).
 *
 * The same sweep through Open MPI on host memory, timed like vkshmem-bench's host
 * scope: the wall time of one call on rank 0 (MPI_Wtime), median, minimum and
 * maximum over --iters calls after --warmup calls. Sizes follow vkshmem-bench
 * (`--min-bytes`/`--max-bytes` take K, M and G suffixes): `bytes` is one rank's
 * contribution (one block of an alltoall).
 *
 * Collectives: barrier and sync (MPI_Barrier), broadcast (MPI_Bcast; each
 * broadcast row is followed by a `broadcast+barrier` row, MPI_Bcast then
 * MPI_Barrier: the guarantee vkshmem's broadcast gives, every member has
 * entered the call (and agreed on its arguments) when any returns, where MPI's
 * root may return before any other rank has entered), collect
 * (MPI_Allgatherv), fcollect (MPI_Allgather), alltoall and alltoalls
 * (MPI_Alltoall), reduce (MPI_Allreduce with --op).
 *
 * Prints CSV on rank 0: collective,type,op,npes,bytes,time_us,min_us,max_us.
 *
 * `--rma` (with `--peer P`, default the last rank): the baseline of
 * `vkshmem-bench --rma`, one-sided between rank 0 and P on a window
 * (MPI_Win_allocate, passive target, MPI_Win_lock_all): put (MPI_Put then
 * MPI_Win_flush: complete at the target, as vkshmem's put), get (MPI_Get,
 * flush), fetch_add (MPI_Fetch_and_op MPI_SUM on a uint64, flush) and the
 * put_signal round trip (MPI_Put of the data, flush, MPI_Accumulate of 1 on
 * the peer's signal word, flush; the waiter polls its own signal with
 * MPI_Fetch_and_op MPI_NO_OP). Prints CSV on rank 0:
 * op,scope,npes,peer,bytes,time_us,min_us,max_us (scope "mpi").
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *msg) {
    fprintf(stderr, "mpi_bench: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static MPI_Datatype type_of(const char *t, size_t *size) {
    struct { const char *name; MPI_Datatype ty; size_t size; } types[] = {
        {"float", MPI_FLOAT, 4},   {"double", MPI_DOUBLE, 8},
        {"int8", MPI_INT8_T, 1},   {"int16", MPI_INT16_T, 2},
        {"int32", MPI_INT32_T, 4}, {"int64", MPI_INT64_T, 8},
        {"uint8", MPI_UINT8_T, 1}, {"uint16", MPI_UINT16_T, 2},
        {"uint32", MPI_UINT32_T, 4}, {"uint64", MPI_UINT64_T, 8},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(t, types[i].name)) {
            *size = types[i].size;
            return types[i].ty;
        }
    die("unknown --type");
    return MPI_DATATYPE_NULL;
}

/* A byte count with an optional K, M or G suffix (powers of 1024). */
static uint64_t bytes_of(const char *v) {
    char *end;
    uint64_t n = strtoull(v, &end, 10);
    switch (*end) {
    case 'K': case 'k': return n << 10;
    case 'M': case 'm': return n << 20;
    case 'G': case 'g': return n << 30;
    case 0: return n;
    default: die("not a byte count"); return 0;
    }
}

static MPI_Op op_of(const char *o) {
    struct { const char *name; MPI_Op op; } ops[] = {
        {"and", MPI_BAND}, {"or", MPI_BOR}, {"xor", MPI_BXOR}, {"max", MPI_MAX},
        {"min", MPI_MIN},  {"sum", MPI_SUM}, {"prod", MPI_PROD},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(o, ops[i].name)) return ops[i].op;
    die("unknown --op");
    return MPI_OP_NULL;
}

static double median_of(double *t, int iters) {
    qsort(t, iters, sizeof(double), cmp_double);
    return iters % 2 ? t[iters / 2] : (t[iters / 2 - 1] + t[iters / 2]) / 2;
}

static void rma_row(const char *op, int n, int peer, uint64_t bytes, double *t, int iters) {
    double med = median_of(t, iters);
    printf("%s,mpi,%d,%d,%llu,%.3f,%.3f,%.3f\n", op, n, peer, (unsigned long long)bytes, med * 1e6,
           t[0] * 1e6, t[iters - 1] * 1e6);
    fflush(stdout);
}

/* The one-sided sweep (see the header). The window holds the data area, then
 * the fetch_add word and the signal word (uint64 each). */
static void rma_sweep(int me, int n, int peer, uint64_t min_bytes, uint64_t max_bytes,
                      uint64_t factor, int iters, int warmup) {
    size_t room = (size_t)(max_bytes > 64 ? max_bytes : 64);
    char *base;
    MPI_Win win;
    MPI_Win_allocate(room + 16, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, room + 16);
    char *buf = calloc(room, 1);
    double *t = malloc(iters * sizeof(double));
    if (!buf || !t) die("out of memory");
    const MPI_Aint word = (MPI_Aint)room, sig = (MPI_Aint)room + 8;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    if (me == 0) printf("op,scope,npes,peer,bytes,time_us,min_us,max_us\n");
    for (int get = 0; get < 2; get++)
        for (uint64_t b = min_bytes < 1 ? 1 : min_bytes; b <= max_bytes; b *= factor) {
            if (me == 0) {
                for (int i = -warmup; i < iters; i++) {
                    double t0 = MPI_Wtime();
                    if (get) MPI_Get(buf, (int)b, MPI_BYTE, peer, 0, (int)b, MPI_BYTE, win);
                    else MPI_Put(buf, (int)b, MPI_BYTE, peer, 0, (int)b, MPI_BYTE, win);
                    MPI_Win_flush(peer, win);
                    if (i >= 0) t[i] = MPI_Wtime() - t0;
                }
                rma_row(get ? "get" : "put", n, peer, b, t, iters);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
    if (me == 0) {
        uint64_t one = 1, old;
        for (int i = -warmup; i < iters; i++) {
            double t0 = MPI_Wtime();
            MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, peer, word, MPI_SUM, win);
            MPI_Win_flush(peer, win);
            if (i >= 0) t[i] = MPI_Wtime() - t0;
        }
        rma_row("fetch_add", n, peer, 8, t, iters);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t rounds = 0;
    for (uint64_t b = min_bytes < 1 ? 1 : min_bytes; b <= max_bytes && b <= 65536; b *= factor) {
        int other = me == 0 ? peer : 0;
        if (me == 0 || me == peer) {
            for (int i = -warmup; i < iters; i++) {
                rounds++;
                double t0 = MPI_Wtime();
                for (int turn = 0; turn < 2; turn++) {
                    if ((turn == 0) == (me == 0)) {
                        uint64_t one = 1;
                        MPI_Put(buf, (int)b, MPI_BYTE, other, 0, (int)b, MPI_BYTE, win);
                        MPI_Win_flush(other, win);
                        MPI_Accumulate(&one, 1, MPI_UINT64_T, other, sig, 1, MPI_UINT64_T, MPI_SUM, win);
                        MPI_Win_flush(other, win);
                    } else {
                        uint64_t seen = 0, none = 0;
                        while (seen < rounds) {
                            MPI_Fetch_and_op(&none, &seen, MPI_UINT64_T, me, sig, MPI_NO_OP, win);
                            MPI_Win_flush(me, win);
                        }
                    }
                }
                if (i >= 0) t[i] = MPI_Wtime() - t0;
            }
            if (me == 0) rma_row("put_signal_rtt", n, peer, b, t, iters);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(buf);
    free(t);
}

int main(int argc, char **argv) {
    const char *colls = "barrier,sync,broadcast,collect,fcollect,alltoall,alltoalls,reduce";
    const char *type = "float", *opname = "sum";
    uint64_t min_bytes = 8, max_bytes = 1 << 20, factor = 4;
    int iters = 20, warmup = 3, root = 0, rma = 0, peer = -1;
    MPI_Init(&argc, &argv);
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--rma")) { rma = 1; i--; continue; }
        if (i + 1 >= argc) die("an option without its value");
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--collective")) colls = v;
        else if (!strcmp(k, "--type")) type = v;
        else if (!strcmp(k, "--op")) opname = v;
        else if (!strcmp(k, "--min-bytes")) min_bytes = bytes_of(v);
        else if (!strcmp(k, "--max-bytes")) max_bytes = bytes_of(v);
        else if (!strcmp(k, "--step-factor")) factor = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--iters")) iters = atoi(v);
        else if (!strcmp(k, "--warmup")) warmup = atoi(v);
        else if (!strcmp(k, "--root")) root = atoi(v);
        else if (!strcmp(k, "--peer")) peer = atoi(v);
        else die("unknown option");
    }
    if (factor < 2) factor = 2;
    if (iters < 1) iters = 1;
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (root < 0 || root >= n) die("--root outside the job");
    if (rma) {
        if (peer < 0) peer = n - 1;
        if (peer >= n) die("--peer outside the job");
        rma_sweep(me, n, peer, min_bytes, max_bytes, factor, iters, warmup);
        MPI_Finalize();
        return 0;
    }
    size_t es = 1;
    MPI_Datatype ty = type_of(type, &es);
    MPI_Op op = op_of(opname);
    size_t room = (size_t)(max_bytes > 64 ? max_bytes : 64) * n + 64;
    char *src = calloc(room, 1), *dst = calloc(room, 1);
    int *counts = malloc(n * sizeof(int)), *displs = malloc(n * sizeof(int));
    double *t = malloc(iters * sizeof(double));
    if (!src || !dst || !counts || !displs || !t) die("out of memory");
    if (me == 0) printf("collective,type,op,npes,bytes,time_us,min_us,max_us\n");
    char list[256];
    snprintf(list, sizeof list, "%s", colls);
    for (char *c = strtok(list, ","); c; c = strtok(NULL, ",")) {
      for (int synced = 0; synced < 1 + !strcmp(c, "broadcast"); synced++) {
        int sync = !strcmp(c, "barrier") || !strcmp(c, "sync");
        for (uint64_t b = min_bytes < es ? es : min_bytes; b <= max_bytes; b *= factor) {
            int count = (int)(b / es);
            uint64_t bytes = sync ? 0 : (uint64_t)count * es;
            for (int j = 0; j < n; j++) {
                counts[j] = count;
                displs[j] = j * count;
            }
            for (int i = -warmup; i < iters; i++) {
                double t0 = MPI_Wtime();
                if (sync) MPI_Barrier(MPI_COMM_WORLD);
                else if (!strcmp(c, "broadcast")) {
                    MPI_Bcast(dst, count, ty, root, MPI_COMM_WORLD);
                    if (synced) MPI_Barrier(MPI_COMM_WORLD);
                }
                else if (!strcmp(c, "collect"))
                    MPI_Allgatherv(src, count, ty, dst, counts, displs, ty, MPI_COMM_WORLD);
                else if (!strcmp(c, "fcollect"))
                    MPI_Allgather(src, count, ty, dst, count, ty, MPI_COMM_WORLD);
                else if (!strcmp(c, "alltoall") || !strcmp(c, "alltoalls"))
                    MPI_Alltoall(src, count, ty, dst, count, ty, MPI_COMM_WORLD);
                else if (!strcmp(c, "reduce"))
                    MPI_Allreduce(src, dst, count, ty, op, MPI_COMM_WORLD);
                else die("unknown --collective");
                if (i >= 0) t[i] = MPI_Wtime() - t0;
            }
            if (me == 0) {
                qsort(t, iters, sizeof(double), cmp_double);
                double med = iters % 2 ? t[iters / 2] : (t[iters / 2 - 1] + t[iters / 2]) / 2;
                printf("%s%s,%s,%s,%d,%llu,%.3f,%.3f,%.3f\n", c, synced ? "+barrier" : "", type,
                       strcmp(c, "reduce") ? "" : opname, n, (unsigned long long)bytes,
                       med * 1e6, t[0] * 1e6, t[iters - 1] * 1e6);
                fflush(stdout);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            if (sync) break;
        }
      }
    }
    free(src); free(dst); free(counts); free(displs); free(t);
    MPI_Finalize();
    return 0;
}
