/* mpi_world: one MPI program across every component of a heterogeneous Slurm step (MPICH under
 * `srun --mpi=pmi2`). Each rank prints "MPI RANK SIZE SUM HOST", where SUM is the sum of every
 * rank's number (an MPI_Allreduce): SIZE x (SIZE - 1) / 2 only if all ranks are one
 * MPI_COMM_WORLD. Built by tests/hetjob.rs with mpicc.mpich. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size, sum = 0;
    char host[256] = "?";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    gethostname(host, sizeof host - 1);
    printf("MPI %d %d %d %s\n", rank, size, sum, host);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
