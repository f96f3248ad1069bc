#include "ddp/comm/mpi_backend.hpp"

#include "ddp/comm/detail/shm_allreduce.hpp"
#include "ddp/comm/detail/work_queue.hpp"
#include "ddp/comm/mpi_error.hpp"
#include "ddp/comm/mpi_session.hpp"

#include <mpi.h>

#include <fmt/format.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

namespace ddp::comm {
namespace {

// MPI has no 16-bit floats: they travel as 2-byte integers and reduce through user operators.
template <DType D, ReduceOp Op>
void reduce16(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  reduceInto(inout, in, D, static_cast<size_t>(*len), Op);
}

template <DType D>
void create16BitOps(MPI_Op (&ops)[4]) {
  DDP_CHECK_MPI(MPI_Op_create(&reduce16<D, ReduceOp::kSum>, 1, &ops[0]));
  DDP_CHECK_MPI(MPI_Op_create(&reduce16<D, ReduceOp::kProd>, 1, &ops[1]));
  DDP_CHECK_MPI(MPI_Op_create(&reduce16<D, ReduceOp::kMin>, 1, &ops[2]));
  DDP_CHECK_MPI(MPI_Op_create(&reduce16<D, ReduceOp::kMax>, 1, &ops[3]));
}

int toInt(size_t count) {
  if (count > static_cast<size_t>(INT_MAX)) {
    throw CommError(fmt::format("mpi backend: count {} exceeds MPI's limit of {} elements", count, INT_MAX));
  }
  return static_cast<int>(count);
}

class MpiBackend final : public Backend {
 public:
  MpiBackend(const WorldInfo& world, const BackendOptions& options) : session_(MpiSession::instance()) {
    std::lock_guard<std::mutex> lock(session_.mutex());
    if (world.size != session_.worldSize()) {
      throw ConfigError(
          fmt::format("mpi backend: the environment describes {} ranks ({}) but MPI_COMM_WORLD has {}: "
                      "start the program with mpirun or ddprun",
                      world.size, worldSourceName(world.source), session_.worldSize()));
    }
    DDP_CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    DDP_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
    DDP_CHECK_MPI(MPI_Comm_size(comm_, &size_));
    create16BitOps<DType::kFloat16>(halfOps_);
    create16BitOps<DType::kBFloat16>(bf16Ops_);
    shm_ = std::make_unique<detail::ShmAllreduce>(comm_, options.shmRanksPerHost);
  }

  ~MpiBackend() override {
    queue_.reset();  // runs what is queued, then joins, before the communicator goes
    std::lock_guard<std::mutex> lock(session_.mutex());
    shm_.reset();
    for (auto* ops : {halfOps_, bf16Ops_}) {
      for (int i = 0; i < 4; ++i) MPI_Op_free(&ops[i]);
    }
    MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view name() const override { return "mpi"; }
  Memory& memory() override { return hostMemory(); }

  std::shared_ptr<Work> allreduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) override {
    const int n = toInt(count);
    const void* in = send == recv ? MPI_IN_PLACE : send;
    return run(
        [=] {
          if (shm_->serves(count * dtypeSize(dtype))) {
            shm_->run(send, recv, count, dtype, op, mpiType(dtype), mpiOp(dtype, op));
            return;
          }
          DDP_CHECK_MPI(MPI_Allreduce(in, recv, n, mpiType(dtype), mpiOp(dtype, op), comm_));
          if (op == ReduceOp::kAvg) divideInPlace(recv, dtype, count, size_);
        },
        count * dtypeSize(dtype));
  }

  std::shared_ptr<Work> broadcast(void* buffer, size_t count, DType dtype, int root) override {
    checkRoot(root);
    const int n = toInt(count);
    return run([=] { DDP_CHECK_MPI(MPI_Bcast(buffer, n, mpiType(dtype), root, comm_)); }, count * dtypeSize(dtype));
  }

  std::shared_ptr<Work> allgather(const void* send, void* recv, size_t count, DType dtype) override {
    const int n = toInt(count);
    const bool inPlace = send == static_cast<char*>(recv) + rank_ * count * dtypeSize(dtype);
    const void* in = inPlace ? MPI_IN_PLACE : send;
    return run([=] { DDP_CHECK_MPI(MPI_Allgather(in, n, mpiType(dtype), recv, n, mpiType(dtype), comm_)); },
               count * dtypeSize(dtype) * size_);
  }

  std::shared_ptr<Work> reduceScatter(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) override {
    const int n = toInt(count);
    const size_t bytes = count * dtypeSize(dtype);
    const bool inPlace = recv == static_cast<const char*>(send) + rank_ * bytes;
    return run(
        [=] {
          if (inPlace) {
            // MPI leaves an in-place result at the start of the buffer; NCCL's layout wants it at
            // this rank's chunk, and the other chunks are scratch.
            void* whole = const_cast<void*>(send);
            DDP_CHECK_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, whole, n, mpiType(dtype), mpiOp(dtype, op), comm_));
            if (recv != whole && bytes != 0) std::memmove(recv, whole, bytes);
          } else {
            DDP_CHECK_MPI(MPI_Reduce_scatter_block(send, recv, n, mpiType(dtype), mpiOp(dtype, op), comm_));
          }
          if (op == ReduceOp::kAvg) divideInPlace(recv, dtype, count, size_);
        },
        bytes * size_);
  }

  std::shared_ptr<Work> alltoall(const void* send, void* recv, size_t count, DType dtype) override {
    if (send == recv && count != 0) throw Error("alltoall: send and recv must be different buffers");
    const int n = toInt(count);
    return run([=] { DDP_CHECK_MPI(MPI_Alltoall(send, n, mpiType(dtype), recv, n, mpiType(dtype), comm_)); },
               count * dtypeSize(dtype) * size_);
  }

  std::shared_ptr<Work> barrier() override {
    return run([=] { DDP_CHECK_MPI(MPI_Barrier(comm_)); });
  }

 private:
  // Small collectives run on the caller's thread when the queue is idle: their cost is
  // otherwise mostly the hand-off to the queue's thread and back.
  static constexpr size_t kInlineBytes = size_t{64} << 10;

  // Collectives that the queue's thread runs first wait, politely, until every rank has arrived
  // (below): from 1 MB across hosts (a non-blocking barrier costs a network round trip), and
  // all of them when the world is on one host (its shared-memory barrier is a few atomics).
  static constexpr size_t kPoliteBytes = size_t{1} << 20;

  template <typename F>
  std::shared_ptr<Work> run(F body, size_t bytes = 0) {
    const bool local = shm_->wholeWorldHere();
    auto task = [this, body, local, polite = bytes > kInlineBytes && (local || bytes >= kPoliteBytes)] {
      if (polite && local)
        shm_->hostBarrier();  // touches only the window: no MPI, no lock
      else if (polite)
        awaitAllRanks();
      std::lock_guard<std::mutex> lock(session_.mutex());
      body();
    };
    return bytes <= kInlineBytes ? queue_->runOrSubmit(task) : queue_->submit(task);
  }

  // Open MPI's blocking collectives busy-poll until the last rank arrives. Launched during
  // backward (DDP's overlap), a collective then spins on a core the rank's own compute thread
  // needs while slower ranks are still computing: on a CPU-bound host that made overlapped
  // steps slower than non-overlapped ones. So the queue's thread first waits for everyone
  // with a non-blocking barrier, spinning only briefly and then sleeping, with the MPI lock
  // released in between; the collective proper then starts with all ranks present.
  void awaitAllRanks() {
    MPI_Request request = MPI_REQUEST_NULL;
    {
      std::lock_guard<std::mutex> lock(session_.mutex());
      DDP_CHECK_MPI(MPI_Ibarrier(comm_, &request));
    }
    const auto spinUntil = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
    for (;;) {
      int done = 0;
      {
        std::lock_guard<std::mutex> lock(session_.mutex());
        DDP_CHECK_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
      }
      if (done) return;
      if (std::chrono::steady_clock::now() < spinUntil)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  void checkRoot(int root) const {
    if (root < 0 || root >= size_) {
      throw Error(fmt::format("root {} is not a rank of a world of {}", root, size_));
    }
  }

  static MPI_Datatype mpiType(DType dtype) {
    switch (dtype) {
      case DType::kFloat32:
        return MPI_FLOAT;
      case DType::kFloat64:
        return MPI_DOUBLE;
      case DType::kInt32:
        return MPI_INT32_T;
      case DType::kInt64:
        return MPI_INT64_T;
      case DType::kFloat16:
      case DType::kBFloat16:
        return MPI_UINT16_T;
    }
    return MPI_DATATYPE_NULL;
  }

  MPI_Op mpiOp(DType dtype, ReduceOp op) const {
    const int index = op == ReduceOp::kAvg ? 0 : static_cast<int>(op);
    if (dtype == DType::kFloat16) return halfOps_[index];
    if (dtype == DType::kBFloat16) return bf16Ops_[index];
    static const MPI_Op kBuiltin[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
    return kBuiltin[index];
  }

  MpiSession& session_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  MPI_Op halfOps_[4] = {};
  MPI_Op bf16Ops_[4] = {};
  std::unique_ptr<detail::ShmAllreduce> shm_;
  std::unique_ptr<detail::WorkQueue> queue_ = std::make_unique<detail::WorkQueue>();
};

}  // namespace

std::unique_ptr<Backend> makeMpiBackend(const WorldInfo& world, const BackendOptions& options) {
  return std::make_unique<MpiBackend>(world, options);
}

}  // namespace ddp::comm
