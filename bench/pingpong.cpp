// The link's limit for the allreduce benchmark: large-message ping-pong between ranks 0 and 1;
// one-way bandwidth = bytes / (round trip / 2). One JSON object per size.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const long minBytes = argc > 1 ? std::atol(argv[1]) : 1024;
  const long maxBytes = argc > 2 ? std::atol(argv[2]) : 256L << 20;
  const int factor = argc > 3 ? std::atoi(argv[3]) : 4;
  const int iters = argc > 4 ? std::atoi(argv[4]) : 10;
  std::vector<char> buffer(static_cast<size_t>(maxBytes), 1);
  for (long bytes = minBytes; bytes <= maxBytes; bytes *= factor) {
    const int n = static_cast<int>(bytes);
    auto roundTrip = [&] {
      if (rank == 0) {
        MPI_Send(buffer.data(), n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buffer.data(), n, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buffer.data(), n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buffer.data(), n, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
      }
    };
    roundTrip();  // warm-up
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) roundTrip();
    const double oneWayUs = (MPI_Wtime() - t0) * 1e6 / iters / 2;
    if (rank == 0) {
      std::printf("{\"bytes\": %ld, \"time_us\": %.2f, \"bw_gbps\": %.4f}\n", bytes, oneWayUs,
                  static_cast<double>(bytes) / oneWayUs / 1e3);
    }
  }
  MPI_Finalize();
  return 0;
}
