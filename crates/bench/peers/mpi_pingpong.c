/* Minimal MPI ping-pong: ranks 0 and 1 exchange SIZE-byte messages.
 * Usage: mpi_pingpong SIZE WARMUP PER_ROUND ROUNDS
 * Prints one line per round: the one-way latency in nanoseconds
 * (round trip / 2), measured with MPI_Wtime on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 5) {
        if (rank == 0) fprintf(stderr, "usage: %s SIZE WARMUP PER_ROUND ROUNDS\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    int size = atoi(argv[1]);
    long warmup = atol(argv[2]), per_round = atol(argv[3]), rounds = atol(argv[4]);
    char *buf = malloc(size > 0 ? size : 1);
    memset(buf, 0x5a, size > 0 ? size : 1);
    int peer = 1 - rank;
    for (long r = -1; r < rounds; r++) {
        long n = r < 0 ? warmup : per_round;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long i = 0; i < n; i++) {
            if (rank == 0) {
                MPI_Send(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                MPI_Recv(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            }
        }
        double t = MPI_Wtime() - t0;
        if (rank == 0 && r >= 0) printf("%.1f\n", t * 1e9 / n / 2.0);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
