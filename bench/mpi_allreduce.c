/* mpi_allreduce.c - OpenMPI's side of bench/comm.sh: the same measurement
 * as dtbench (the slowest rank's mean time over --iters calls after
 * --warmup untimed ones; sizes in bytes of one rank's f32 buffer, out of
 * place), printed as dtbench's --csv rows.
 *
 *   mpirun -np N mpi_allreduce [allreduce|barrier] -b MIN -e MAX -f F --iters N --warmup W */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K') v *= 1024;
    if (*end == 'M') v *= 1024 * 1024;
    if (*end == 'G') v *= 1024.0 * 1024 * 1024;
    return (size_t)v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    size_t min = 8, max = 64 << 20;
    double factor = 4;
    int iters = 20, warmup = 5, barrier = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(argv[i], "barrier")) barrier = 1;
        else if (!strcmp(argv[i], "allreduce")) continue;
        else if (!strcmp(argv[i], "-b")) min = parse_size(v), i++;
        else if (!strcmp(argv[i], "-e")) max = parse_size(v), i++;
        else if (!strcmp(argv[i], "-f")) factor = atof(v), i++;
        else if (!strcmp(argv[i], "--iters")) iters = atoi(v), i++;
        else if (!strcmp(argv[i], "--warmup")) warmup = atoi(v), i++;
    }
    if (barrier)
        min = max = 0;
    float *s = malloc(max + 64), *r = malloc(max + 64);
    memset(s, 0, max + 64);
    memset(r, 0, max + 64);
    if (rank == 0)
        printf("size,count,type,time_us,algbw_GBs,busbw_GBs,wrong\n");
    for (size_t bytes = min; bytes <= max; bytes = (size_t)(bytes * factor)) {
        int count = (int)(bytes / 4);
        for (size_t i = 0; i < (size_t)count; i++)
            s[i] = (float)((rank + (int)(i % 7)) % 4);
        for (int i = 0; i < warmup; i++)
            barrier ? MPI_Barrier(MPI_COMM_WORLD)
                    : MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            barrier ? MPI_Barrier(MPI_COMM_WORLD)
                    : MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double mine = (MPI_Wtime() - t0) / iters, slowest;
        MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        int wrong = 0, all_wrong;
        for (size_t i = 0; i < (size_t)count; i++) {
            float want = 0;
            for (int k = 0; k < n; k++)
                want += (float)((k + (int)(i % 7)) % 4);
            wrong += r[i] != want;
        }
        MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        double algbw = (double)bytes / slowest / 1e9;
        if (rank == 0)
            printf("%zu,%d,f32,%.3f,%.4f,%.4f,%d\n", bytes, count, slowest * 1e6, algbw,
                   algbw * 2.0 * (n - 1) / n, all_wrong);
        if (bytes == 0 || factor <= 1)
            break;
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
