/* MPI-3 one-sided (RMA) equivalents of Split-C's operations, for
 * `finegrain bench splitc`: rank 0 issues, rank 1 owns, passive target
 * (MPI_Win_lock_all) on a window from MPI_Win_allocate.
 * Usage: mpi_rma WARMUP REPS BULK_BYTES BULK_REPS
 * Prints one line per operation: NAME MEDIAN_NS P10_NS P90_NS for the
 * latencies (each repetition timed alone with MPI_Wtime), and
 * NAME MEDIAN_MBS P10_MBS P90_MBS for the bulk transfers:
 *   get    MPI_Get of one word + MPI_Win_flush (a blocking read)
 *   put    MPI_Put of one word + MPI_Win_flush
 *   store  MPI_Put of one word + flush, the owner polls its window until it
 *          sees it and puts one word back the same way: half the round trip
 *   store4 the same with 4 words (32 bytes)
 *   bulk_get / bulk_put  BULK_BYTES with one MPI_Get / MPI_Put + flush */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Prints NAME and the median, 10th and 90th percentiles of v[0..n). */
static void report(const char *name, double *v, long n) {
    qsort(v, n, sizeof *v, cmp);
    printf("%s %.1f %.1f %.1f\n", name, v[n / 2], v[n / 10], v[n * 9 / 10]);
}

/* Waits until word `at` of this rank's window holds `want`, making the
 * library progress meanwhile (an implementation may need the target to
 * progress for the origin's put to land). */
static void await_word(volatile uint64_t *base, long at, uint64_t want, MPI_Win win) {
    int flag;
    while (base[at] != want) {
        MPI_Win_sync(win);
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 5 || size != 2) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np 2 %s WARMUP REPS BULK_BYTES BULK_REPS\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    long warmup = atol(argv[1]), reps = atol(argv[2]), bulk = atol(argv[3]), bulk_reps = atol(argv[4]);
    long words = 64 + bulk / 8;
    uint64_t *base;
    MPI_Win win;
    MPI_Win_allocate(words * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, words * 8);
    uint64_t *local = calloc(words, 8);
    double *t = malloc(sizeof(double) * (reps > bulk_reps ? reps : bulk_reps));
    volatile uint64_t *vbase = base;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);

    /* get and put of one word: only rank 0 acts. */
    for (int op = 0; op < 2; op++) {
        if (rank == 0) {
            for (long i = -warmup; i < reps; i++) {
                double t0 = MPI_Wtime();
                if (op == 0) {
                    MPI_Get(local, 1, MPI_UINT64_T, 1, 0, 1, MPI_UINT64_T, win);
                } else {
                    local[0] = i;
                    MPI_Put(local, 1, MPI_UINT64_T, 1, 0, 1, MPI_UINT64_T, win);
                }
                MPI_Win_flush(1, win);
                if (i >= 0) t[i] = (MPI_Wtime() - t0) * 1e9;
            }
            report(op == 0 ? "get" : "put", t, reps);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* store ping-pong of 1 and 4 words: word 8.. carries the sequence
     * number in its last word, which the receiver polls. */
    for (int op = 0; op < 2; op++) {
        long n = op == 0 ? 1 : 4;
        for (long i = -warmup; i < reps; i++) {
            uint64_t seq = (uint64_t)(i + warmup + 1) + (op + 1) * 1000000000ull;
            for (long k = 0; k < n; k++) local[k] = seq;
            double t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Put(local, n, MPI_UINT64_T, 1, 8, n, MPI_UINT64_T, win);
                MPI_Win_flush(1, win);
                await_word(vbase, 8 + n - 1, seq, win);
            } else {
                await_word(vbase, 8 + n - 1, seq, win);
                MPI_Put(local, n, MPI_UINT64_T, 0, 8, n, MPI_UINT64_T, win);
                MPI_Win_flush(0, win);
            }
            if (i >= 0) t[i] = (MPI_Wtime() - t0) * 1e9 / 2.0;
        }
        if (rank == 0) report(op == 0 ? "store" : "store4", t, reps);
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* bulk get and put: MB/s per transfer. */
    for (int op = 0; op < 2; op++) {
        if (rank == 0) {
            for (long i = -2; i < bulk_reps; i++) {
                double t0 = MPI_Wtime();
                if (op == 0) {
                    MPI_Get(local + 64, bulk / 8, MPI_UINT64_T, 1, 64, bulk / 8, MPI_UINT64_T, win);
                } else {
                    MPI_Put(local + 64, bulk / 8, MPI_UINT64_T, 1, 64, bulk / 8, MPI_UINT64_T, win);
                }
                MPI_Win_flush(1, win);
                if (i >= 0) t[i] = bulk / (MPI_Wtime() - t0) / 1e6;
            }
            report(op == 0 ? "bulk_get" : "bulk_put", t, bulk_reps);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(local);
    free(t);
    MPI_Finalize();
    return 0;
}
