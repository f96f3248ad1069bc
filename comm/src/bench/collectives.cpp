#include "ddp/comm/bench/collectives.hpp"

#include <algorithm>
#include <cmath>

namespace ddp::comm::bench {
namespace {

double reduceOver(int nranks, ReduceOp op, size_t index, DType dtype) {
  double acc = inputValue(0, index, op);
  for (int r = 1; r < nranks; ++r) {
    const double v = inputValue(r, index, op);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        acc += v;
        break;
      case ReduceOp::kProd:
        acc *= v;
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, v);
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, v);
        break;
    }
  }
  if (op == ReduceOp::kAvg) acc = isFloating(dtype) ? acc / nranks : std::trunc(acc / nranks);
  return acc;
}

double one(int) { return 1.0; }
double ringFactor(int n) { return static_cast<double>(n - 1) / n; }
double allreduceFactor(int n) { return 2.0 * (n - 1) / n; }
std::pair<size_t, size_t> noOffset(const Counts&, int) { return {0, 0}; }
std::pair<size_t, size_t> rankChunk(const Counts& c, int rank) { return {0, static_cast<size_t>(rank) * c.param}; }

const std::vector<Collective> kCollectives = {
    {"allreduce", true, false, true,
     [](size_t bytes, size_t ts, int) {
       const size_t c = bytes / ts;
       return Counts{c, c, c};
     },
     allreduceFactor,
     [](Backend& b, const void* s, void* r, size_t n, DType d, ReduceOp op, int) {
       return b.allreduce(s, r, n, d, op);
     },
     noOffset, [](size_t i, int, int n, const Counts&, ReduceOp op, int, DType d) { return reduceOver(n, op, i, d); }},
    {"allgather", false, false, true,
     [](size_t bytes, size_t ts, int n) {
       const size_t base = bytes / ts / static_cast<size_t>(n);
       return Counts{base, base * n, base};
     },
     ringFactor,
     [](Backend& b, const void* s, void* r, size_t n, DType d, ReduceOp, int) { return b.allgather(s, r, n, d); },
     [](const Counts& c, int rank) {
       return std::pair<size_t, size_t>{static_cast<size_t>(rank) * c.param, 0};
     },
     [](size_t i, int, int, const Counts& c, ReduceOp op, int, DType) {
       return inputValue(static_cast<int>(i / c.param), i % c.param, op);
     }},
    {"reducescatter", true, false, true,
     [](size_t bytes, size_t ts, int n) {
       const size_t base = bytes / ts / static_cast<size_t>(n);
       return Counts{base * n, base, base};
     },
     ringFactor,
     [](Backend& b, const void* s, void* r, size_t n, DType d, ReduceOp op, int) {
       return b.reduceScatter(s, r, n, d, op);
     },
     rankChunk,
     [](size_t i, int rank, int n, const Counts& c, ReduceOp op, int, DType d) {
       return reduceOver(n, op, static_cast<size_t>(rank) * c.param + i, d);
     }},
    {"broadcast", false, true, true,
     [](size_t bytes, size_t ts, int) {
       const size_t c = bytes / ts;
       return Counts{c, c, c};
     },
     one,
     [](Backend& b, const void*, void* r, size_t n, DType d, ReduceOp, int root) { return b.broadcast(r, n, d, root); },
     noOffset, [](size_t i, int, int, const Counts&, ReduceOp op, int root, DType) { return inputValue(root, i, op); }},
    {"alltoall", false, false, false,
     [](size_t bytes, size_t ts, int n) {
       const size_t base = bytes / ts / static_cast<size_t>(n);
       return Counts{base * n, base * n, base};
     },
     ringFactor,
     [](Backend& b, const void* s, void* r, size_t n, DType d, ReduceOp, int) { return b.alltoall(s, r, n, d); },
     noOffset,
     [](size_t i, int rank, int, const Counts& c, ReduceOp op, int, DType) {
       const size_t from = i / c.param;
       return inputValue(static_cast<int>(from), static_cast<size_t>(rank) * c.param + i % c.param, op);
     }},
};

}  // namespace

const std::vector<Collective>& collectives() { return kCollectives; }

const Collective* findCollective(std::string_view name) {
  for (const auto& c : kCollectives) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

double inputValue(int rank, size_t index, ReduceOp op) {
  if (op == ReduceOp::kProd) return static_cast<double>(1 + (static_cast<size_t>(rank) + index) % 2);
  return static_cast<double>(1 + (static_cast<size_t>(rank) * 3 + index) % 7);
}

size_t reportedBytes(const Counts& counts, size_t typeSize) { return std::max(counts.send, counts.recv) * typeSize; }

}  // namespace ddp::comm::bench
