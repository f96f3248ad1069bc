#pragma once
// The collective-communication interface every backend implements (docs/comm.md).

#include "ddp/comm/types.hpp"
#include "ddp/comm/world.hpp"
#include "ddp/common/environment.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace ddp::comm {

inline constexpr std::chrono::milliseconds kNoTimeout{-1};

// One collective in flight. Thread-safe; owned by whoever started it. Buffers handed to the
// collective must stay alive and untouched until wait() returns or isCompleted() is true.
class Work {
 public:
  virtual ~Work() = default;
  // True once the result is in the output buffer. Never blocks.
  virtual bool isCompleted() = 0;
  // Blocks until completion; throws TimeoutError when `timeout` (not kNoTimeout) passes first
  // (the operation itself keeps running), CommError when it failed.
  virtual void wait(std::chrono::milliseconds timeout = kNoTimeout) = 0;
  // Time from start to completion; zero until completed.
  virtual std::chrono::nanoseconds duration() const = 0;
};

// Where a backend's buffers live (host memory, or CUDA device memory for nccl), and how the
// host reads and writes them. Thread-safe.
class Memory {
 public:
  virtual ~Memory() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* ptr) noexcept = 0;
  virtual void copyFromHost(void* dst, const void* hostSrc, size_t bytes) = 0;
  virtual void copyToHost(void* hostDst, const void* src, size_t bytes) = 0;
};

// Options every backend takes; a backend ignores what does not concern it. Backends never read
// the environment themselves: fromEnvironment() turns the DDP_* variables into options.
struct BackendOptions {
  // Default timeout of collectives (and of the rendezvous for gloo).
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
  // Network interface for gloo; empty: the one that reaches rank 0.
  std::string interface;
  // CUDA device for nccl; -1: the local rank modulo the visible devices.
  int device = -1;
  // mpi: > 0 splits each host's ranks into groups of this many for the shared-memory
  // allreduce, each group treated as a host (tests its multi-host path on one machine).
  int shmRanksPerHost = 0;

  // Defaults, with DDP_GLOO_IFNAME and DDP_MPI_SHM_RANKS_PER_HOST applied; throws ConfigError
  // for malformed values.
  static BackendOptions fromEnvironment(const Environment& environment);
};

// A process group: `size()` processes that call the same collectives in the same order.
//
// Contract: every rank calls every collective with the same count, dtype, op and root, in the
// same order. Counts are in elements. Passing the same pointer as input and output runs the
// collective in place (the layouts are NCCL's: see each method). Calls may come from any thread
// but must be ordered identically on every rank. Buffers come from memory().allocate() when
// memory() is not host memory.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string_view name() const = 0;
  virtual Memory& memory() = 0;

  // recv[i] = op over ranks of send[i], i < count.
  virtual std::shared_ptr<Work> allreduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) = 0;
  // buffer on every rank = buffer on `root`.
  virtual std::shared_ptr<Work> broadcast(void* buffer, size_t count, DType dtype, int root) = 0;
  // recv[r * count + i] = send of rank r [i]; in place when send == recv + rank() * count.
  virtual std::shared_ptr<Work> allgather(const void* send, void* recv, size_t count, DType dtype) = 0;
  // recv[i] = op over ranks of send[rank() * count + i]; in place when
  // recv == send + rank() * count.
  virtual std::shared_ptr<Work> reduceScatter(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) = 0;
  // recv[r * count + i] = send of rank r [rank() * count + i]; send and recv must differ.
  virtual std::shared_ptr<Work> alltoall(const void* send, void* recv, size_t count, DType dtype) = 0;
  virtual std::shared_ptr<Work> barrier() = 0;
};

// Host memory through malloc, for the CPU backends.
Memory& hostMemory();

}  // namespace ddp::comm
