#pragma once
// Hierarchical allreduce for large messages (docs/comm.md, "The shared-memory path"): ranks of
// a host reduce through an MPI-3 shared window, each owning 1/localSize of every segment
// (reduce-scatter), peers with the same local rank on other hosts allreduce their share over
// MPI, and every rank copies the others' shares out (allgather). Host memory is read and
// written about half as often as by a ring over the loopback transport.

#include "ddp/comm/types.hpp"

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace ddp::comm::detail {

// Not thread-safe: called only from the mpi backend's worker thread, under the MPI lock.
// Construction and every run() are collective over `comm`.
class ShmAllreduce {
 public:
  // `ranksPerHost` > 0 splits each host's ranks into groups of that many, treated as hosts
  // (DDP_MPI_SHM_RANKS_PER_HOST: tests the multi-host path on one machine).
  ShmAllreduce(MPI_Comm comm, int ranksPerHost);
  ~ShmAllreduce();
  ShmAllreduce(const ShmAllreduce&) = delete;
  ShmAllreduce& operator=(const ShmAllreduce&) = delete;

  // True when this path serves `bytes`: several ranks share a host, every host has the same
  // number of ranks, and the message is large enough for shared memory to beat MPI.
  bool serves(size_t bytes) const { return usable_ && bytes >= kMinBytes; }
  // recv = op over ranks of send (send == recv: in place). `mpiType` and `mpiOp` combine the
  // hosts' shares (for kAvg: the sum; the division happens here).
  void run(const void* send, void* recv, size_t count, DType dtype, ReduceOp op, MPI_Datatype mpiType, MPI_Op mpiOp);

  // True when every rank of the world is on this host and can meet at hostBarrier().
  bool wholeWorldHere() const { return usable_ && hosts_ == 1; }
  // Every rank of the host has arrived: a spin of a few microseconds, then a futex sleep, so a
  // rank whose peer is descheduled gives its core back (Open MPI's barrier busy-polls).
  void hostBarrier();

  static constexpr size_t kMinBytes = size_t{256} << 10;
  static constexpr size_t kSegmentBytes = size_t{512} << 10;
  // The host barrier's words, each on a cache line of its own, ahead of the slots.
  static constexpr size_t kHeaderBytes = 256;

 private:
  char* slot(int set, int index) const;
  uint32_t* word(int index) const { return reinterpret_cast<uint32_t*>(base_ + 64 * index); }

  MPI_Comm node_ = MPI_COMM_NULL;   // the ranks of this host
  MPI_Comm peers_ = MPI_COMM_NULL;  // the ranks with this local rank on every host
  MPI_Win window_ = MPI_WIN_NULL;
  char* base_ = nullptr;
  int localRank_ = 0;
  int localSize_ = 1;
  int hosts_ = 1;
  int worldSize_ = 1;
  bool usable_ = false;
};

}  // namespace ddp::comm::detail
