#pragma once
// The collectives ddpbench sweeps, each a small descriptor (nccl-tests' architecture): how a
// sweep size becomes element counts, the bus-bandwidth factor, how to run it, where its
// in-place input lives, and the closed-form value every output element must hold.

#include "ddp/comm/backend.hpp"

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace ddp::comm::bench {

// Element counts of one run. `param` is what the Backend call takes.
struct Counts {
  size_t send = 0;
  size_t recv = 0;
  size_t param = 0;
};

struct Collective {
  std::string_view name;
  bool hasReduceOp;
  bool hasRoot;
  bool supportsInPlace;
  // Counts for a sweep size of `bytes` total (nccl-tests' getCollByteCount).
  Counts (*counts)(size_t bytes, size_t typeSize, int nranks);
  // busbw = algbw * busFactor(n), as nccl-tests' PERFORMANCE.md.
  double (*busFactor)(int nranks);
  std::shared_ptr<Work> (*run)(Backend& backend, const void* send, void* recv, size_t param, DType dtype, ReduceOp op,
                               int root);
  // In place, one buffer of max(send, recv) elements holds both: the element offsets of the
  // send and the recv pointer in it (NCCL's layouts).
  std::pair<size_t, size_t> (*inPlaceOffsets)(const Counts& counts, int rank);
  // The exact value of output element `index` on `rank`, given every rank's input element i
  // is inputValue(rank, i, op).
  double (*expected)(size_t index, int rank, int nranks, const Counts& counts, ReduceOp op, int root, DType dtype);
};

// allreduce, allgather, reducescatter, broadcast, alltoall.
const std::vector<Collective>& collectives();
// nullptr when unknown.
const Collective* findCollective(std::string_view name);

// Input element `index` of `rank`: small integers, exact in every dtype and in every sum or
// product over up to 16 ranks; powers of two for prod.
double inputValue(int rank, size_t index, ReduceOp op);

// The bytes the table's "size" column shows for a run.
size_t reportedBytes(const Counts& counts, size_t typeSize);

}  // namespace ddp::comm::bench
