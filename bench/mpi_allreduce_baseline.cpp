// The baseline of the allreduce benchmark: a plain MPI_Allreduce loop, in place (as DDP reduces
// gradient buckets), timed like ddpbench (slowest rank's time per iteration). One JSON object
// per size.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long minBytes = argc > 1 ? std::atol(argv[1]) : 1024;
  const long maxBytes = argc > 2 ? std::atol(argv[2]) : 256L << 20;
  const int factor = argc > 3 ? std::atoi(argv[3]) : 4;
  const int iters = argc > 4 ? std::atoi(argv[4]) : 10;
  std::vector<float> send(static_cast<size_t>(maxBytes / 4), 1.0f);
  for (long bytes = minBytes; bytes <= maxBytes; bytes *= factor) {
    const int count = static_cast<int>(bytes / 4);
    for (int i = 0; i < 2; ++i) MPI_Allreduce(MPI_IN_PLACE, send.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) MPI_Allreduce(MPI_IN_PLACE, send.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double us = (MPI_Wtime() - start) * 1e6 / iters;
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
      const double algbw = static_cast<double>(bytes) / us / 1e3;
      std::printf("{\"bytes\": %ld, \"time_us\": %.2f, \"busbw_gbps\": %.4f}\n", bytes, us,
                  algbw * 2.0 * (size - 1) / size);
    }
  }
  MPI_Finalize();
  return 0;
}
