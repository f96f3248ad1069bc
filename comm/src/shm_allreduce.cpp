#include "ddp/comm/detail/shm_allreduce.hpp"

#include "ddp/comm/mpi_error.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>

namespace ddp::comm::detail {

// Window layout: two sets (segments alternate between them) of localSize input slots and one
// result slot, kSegmentBytes each. With two sets, the barrier that opens segment k also
// guarantees every rank finished copying out segment k-2, whose set segment k reuses.
ShmAllreduce::ShmAllreduce(MPI_Comm comm, int ranksPerHost) {
  int rank = 0;
  DDP_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  DDP_CHECK_MPI(MPI_Comm_size(comm, &worldSize_));
  DDP_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_));
  DDP_CHECK_MPI(MPI_Comm_rank(node_, &localRank_));
  if (ranksPerHost > 0) {
    MPI_Comm group = MPI_COMM_NULL;
    DDP_CHECK_MPI(MPI_Comm_split(node_, localRank_ / ranksPerHost, localRank_, &group));
    MPI_Comm_free(&node_);
    node_ = group;
    DDP_CHECK_MPI(MPI_Comm_rank(node_, &localRank_));
  }
  DDP_CHECK_MPI(MPI_Comm_size(node_, &localSize_));
  DDP_CHECK_MPI(MPI_Comm_split(comm, localRank_, rank, &peers_));
  DDP_CHECK_MPI(MPI_Comm_size(peers_, &hosts_));
  int sizes[2] = {localSize_, -localSize_};
  DDP_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MAX, comm));
  usable_ = localSize_ > 1 && sizes[0] == -sizes[1] && hosts_ * localSize_ == worldSize_;
  if (!usable_) return;
  const auto bytes = static_cast<MPI_Aint>(kHeaderBytes + 2 * (localSize_ + 1) * kSegmentBytes);
  void* mine = nullptr;
  DDP_CHECK_MPI(MPI_Win_allocate_shared(localRank_ == 0 ? bytes : 0, 1, MPI_INFO_NULL, node_, &mine, &window_));
  MPI_Aint size = 0;
  int unit = 0;
  void* first = nullptr;
  DDP_CHECK_MPI(MPI_Win_shared_query(window_, 0, &size, &unit, &first));
  base_ = static_cast<char*>(first);
  if (localRank_ == 0) std::memset(base_, 0, kHeaderBytes);
  DDP_CHECK_MPI(MPI_Barrier(node_));
}

ShmAllreduce::~ShmAllreduce() {
  if (window_ != MPI_WIN_NULL) MPI_Win_free(&window_);
  if (peers_ != MPI_COMM_NULL) MPI_Comm_free(&peers_);
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
}

namespace {

// How long a rank spins for the others before it sleeps: about the imbalance of two ranks
// copying a segment when both run; beyond it the late one is most likely not running.
constexpr auto kSpin = std::chrono::microseconds(20);

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

long futex(uint32_t* word, int op, uint32_t value) {
  return ::syscall(SYS_futex, word, op, value, nullptr, nullptr, 0);  // shared: not FUTEX_PRIVATE
}

}  // namespace

// Sense by generation: the last rank to arrive resets the count, then opens the next
// generation and wakes the sleepers, if any (seq_cst on both sides: a rank that counts itself a
// sleeper and then sees the old generation is woken, or sees the new one).
void ShmAllreduce::hostBarrier() {
  uint32_t* arrived = word(0);
  uint32_t* generation = word(1);
  uint32_t* sleepers = word(2);
  const uint32_t mine = __atomic_load_n(generation, __ATOMIC_ACQUIRE);
  if (__atomic_add_fetch(arrived, 1, __ATOMIC_ACQ_REL) == static_cast<uint32_t>(localSize_)) {
    __atomic_store_n(arrived, 0, __ATOMIC_RELAXED);
    __atomic_add_fetch(generation, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(sleepers, __ATOMIC_SEQ_CST) > 0) futex(generation, FUTEX_WAKE, INT_MAX);
    return;
  }
  const auto spinUntil = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1; __atomic_load_n(generation, __ATOMIC_ACQUIRE) == mine; ++i) {
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= spinUntil) break;
    cpuRelax();
  }
  if (__atomic_load_n(generation, __ATOMIC_ACQUIRE) != mine) return;
  __atomic_add_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(generation, __ATOMIC_SEQ_CST) == mine) futex(generation, FUTEX_WAIT, mine);
  __atomic_sub_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
}

char* ShmAllreduce::slot(int set, int index) const {
  return base_ + kHeaderBytes +
         (static_cast<size_t>(set) * (localSize_ + 1) + static_cast<size_t>(index)) * kSegmentBytes;
}

void ShmAllreduce::run(const void* send, void* recv, size_t count, DType dtype, ReduceOp op, MPI_Datatype mpiType,
                       MPI_Op mpiOp) {
  const size_t typeSize = dtypeSize(dtype);
  // Segments hold whole elements, split into localSize shares of whole elements.
  const size_t perSegment = std::max(kSegmentBytes / typeSize / localSize_, size_t{1}) * localSize_;
  const auto* in = static_cast<const char*>(send);
  auto* out = static_cast<char*>(recv);
  int set = 0;
  for (size_t first = 0; first < count; first += perSegment, set ^= 1) {
    const size_t n = std::min(perSegment, count - first);
    const size_t share = (n + localSize_ - 1) / localSize_;
    const auto range = [&](int owner) {
      const size_t begin = std::min(n, share * owner);
      return std::make_pair(begin * typeSize, (std::min(n, begin + share) - begin) * typeSize);
    };
    const char* segIn = in + first * typeSize;
    char* segOut = out + first * typeSize;
    // 1. Publish the shares the other ranks reduce.
    for (int j = 0; j < localSize_; ++j) {
      if (j == localRank_) continue;
      const auto [offset, bytes] = range(j);
      std::memcpy(slot(set, localRank_) + offset, segIn + offset, bytes);
    }
    hostBarrier();
    // 2. Reduce this rank's share: own input plus every other rank's slot, into the result.
    const auto [offset, bytes] = range(localRank_);
    char* result = slot(set, localSize_) + offset;
    const char* mine = segIn + offset;
    for (int j = 0; j < localSize_; ++j) {
      if (j == localRank_) continue;
      combineInto(result, mine, slot(set, j) + offset, dtype, bytes / typeSize, op);
      mine = result;
    }
    if (hosts_ > 1 && bytes != 0) {
      // Every host reduced the same share: the peers combine theirs over the network.
      DDP_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, result, static_cast<int>(bytes / typeSize), mpiType, mpiOp, peers_));
    }
    if (op == ReduceOp::kAvg) divideInPlace(result, dtype, bytes / typeSize, worldSize_);
    std::memcpy(segOut + offset, result, bytes);
    hostBarrier();
    // 3. Copy the other ranks' shares out.
    for (int j = 0; j < localSize_; ++j) {
      if (j == localRank_) continue;
      const auto [o, b] = range(j);
      std::memcpy(segOut + o, slot(set, localSize_) + o, b);
    }
  }
}

}  // namespace ddp::comm::detail
