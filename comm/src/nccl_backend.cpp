#include "ddp/comm/nccl_backend.hpp"

#include "ddp/comm/mpi_session.hpp"
#include "ddp/common/error.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <fmt/format.h>

#include <cstring>
#include <thread>

#define DDP_CHECK_CUDA(call)                                                                                 \
  do {                                                                                                       \
    const cudaError_t ddp_cuda_rc_ = (call);                                                                 \
    if (ddp_cuda_rc_ != cudaSuccess) {                                                                       \
      throw ::ddp::CommError(fmt::format("{}:{}: {} failed: {} (CUDA error {})", __FILE__, __LINE__, #call,  \
                                         cudaGetErrorString(ddp_cuda_rc_), static_cast<int>(ddp_cuda_rc_))); \
    }                                                                                                        \
  } while (0)

#define DDP_CHECK_NCCL(call)                                                                                 \
  do {                                                                                                       \
    const ncclResult_t ddp_nccl_rc_ = (call);                                                                \
    if (ddp_nccl_rc_ != ncclSuccess) {                                                                       \
      throw ::ddp::CommError(fmt::format("{}:{}: {} failed: {} (ncclResult {})", __FILE__, __LINE__, #call,  \
                                         ncclGetErrorString(ddp_nccl_rc_), static_cast<int>(ddp_nccl_rc_))); \
    }                                                                                                        \
  } while (0)

namespace ddp::comm {
namespace {

ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return ncclFloat32;
    case DType::kFloat64:
      return ncclFloat64;
    case DType::kInt32:
      return ncclInt32;
    case DType::kInt64:
      return ncclInt64;
    case DType::kFloat16:
      return ncclFloat16;
    case DType::kBFloat16:
      return ncclBfloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t ncclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kProd:
      return ncclProd;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kAvg:
      return ncclAvg;
  }
  return ncclSum;
}

// Fails with one line, before NCCL is touched, when no GPU can be used here:
// ncclGetUniqueId succeeds without one, and ncclCommInitRank would then abort or hang.
int usableDeviceCount() {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    throw CommError(
        fmt::format("nccl backend: no usable CUDA device: cudaGetDeviceCount failed: "
                    "{} (CUDA error {})",
                    cudaGetErrorString(rc), static_cast<int>(rc)));
  }
  if (count == 0) throw CommError("nccl backend: no usable CUDA device: cudaGetDeviceCount is 0");
  return count;
}

class CudaMemory final : public Memory {
 public:
  explicit CudaMemory(int device) : device_(device) {}
  void* allocate(size_t bytes) override {
    DDP_CHECK_CUDA(cudaSetDevice(device_));
    void* ptr = nullptr;
    DDP_CHECK_CUDA(cudaMalloc(&ptr, bytes == 0 ? 1 : bytes));
    return ptr;
  }
  void release(void* ptr) noexcept override { cudaFree(ptr); }
  void copyFromHost(void* dst, const void* src, size_t bytes) override {
    DDP_CHECK_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  }
  void copyToHost(void* dst, const void* src, size_t bytes) override {
    DDP_CHECK_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  }

 private:
  int device_;
};

// Completion of everything enqueued on the stream up to the collective.
class CudaWork final : public Work {
 public:
  CudaWork(cudaStream_t stream, ncclComm_t comm) : comm_(comm) {
    DDP_CHECK_CUDA(cudaEventCreate(&start_));
    DDP_CHECK_CUDA(cudaEventCreate(&end_));
    DDP_CHECK_CUDA(cudaEventRecord(start_, stream));
  }
  ~CudaWork() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(end_);
  }
  void recordEnd(cudaStream_t stream) { DDP_CHECK_CUDA(cudaEventRecord(end_, stream)); }

  bool isCompleted() override {
    const cudaError_t rc = cudaEventQuery(end_);
    if (rc == cudaErrorNotReady) {
      ncclResult_t async = ncclSuccess;
      DDP_CHECK_NCCL(ncclCommGetAsyncError(comm_, &async));
      DDP_CHECK_NCCL(async);
      return false;
    }
    DDP_CHECK_CUDA(rc);
    return true;
  }

  void wait(std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!isCompleted()) {
      if (timeout >= std::chrono::milliseconds::zero() && std::chrono::steady_clock::now() > deadline) {
        throw TimeoutError(fmt::format("nccl collective did not complete within {} ms", timeout.count()));
      }
      std::this_thread::yield();
    }
  }

  std::chrono::nanoseconds duration() const override {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, start_, end_) != cudaSuccess) return std::chrono::nanoseconds(0);
    return std::chrono::nanoseconds(static_cast<long long>(ms * 1e6));
  }

 private:
  ncclComm_t comm_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t end_ = nullptr;
};

class NcclBackend final : public Backend {
 public:
  NcclBackend(const WorldInfo& world, const BackendOptions& options) : rank_(world.rank), size_(world.size) {
    const int devices = usableDeviceCount();
    device_ = options.device >= 0 ? options.device : world.localRank % devices;
    if (device_ >= devices) {
      throw ConfigError(fmt::format("nccl backend: device {} requested but {} visible", device_, devices));
    }
    if (size_ > 1 && !world.hasMpi()) {
      throw ConfigError("nccl backend: the ncclUniqueId travels over MPI: start under mpirun or ddprun");
    }
    DDP_CHECK_CUDA(cudaSetDevice(device_));
    ncclUniqueId id{};
    if (rank_ == 0) DDP_CHECK_NCCL(ncclGetUniqueId(&id));
    if (size_ > 1) {
      const auto bytes = mpiBroadcastString(std::string(id.internal, sizeof id.internal), 0);
      std::memcpy(id.internal, bytes.data(), sizeof id.internal);
    }
    DDP_CHECK_NCCL(ncclCommInitRank(&comm_, size_, id, rank_));
    DDP_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    memory_ = std::make_unique<CudaMemory>(device_);
    scratch_ = memory_->allocate(sizeof(float));
    DDP_CHECK_CUDA(cudaMemset(scratch_, 0, sizeof(float)));
  }

  ~NcclBackend() override {
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    if (scratch_ != nullptr) memory_->release(scratch_);
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view name() const override { return "nccl"; }
  Memory& memory() override { return *memory_; }

  std::shared_ptr<Work> allreduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) override {
    return enqueue(
        [&] { DDP_CHECK_NCCL(ncclAllReduce(send, recv, count, ncclType(dtype), ncclOp(op), comm_, stream_)); });
  }
  std::shared_ptr<Work> broadcast(void* buffer, size_t count, DType dtype, int root) override {
    return enqueue(
        [&] { DDP_CHECK_NCCL(ncclBroadcast(buffer, buffer, count, ncclType(dtype), root, comm_, stream_)); });
  }
  std::shared_ptr<Work> allgather(const void* send, void* recv, size_t count, DType dtype) override {
    return enqueue([&] { DDP_CHECK_NCCL(ncclAllGather(send, recv, count, ncclType(dtype), comm_, stream_)); });
  }
  std::shared_ptr<Work> reduceScatter(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) override {
    return enqueue(
        [&] { DDP_CHECK_NCCL(ncclReduceScatter(send, recv, count, ncclType(dtype), ncclOp(op), comm_, stream_)); });
  }
  std::shared_ptr<Work> alltoall(const void* send, void* recv, size_t count, DType dtype) override {
    if (send == recv && count != 0) throw Error("alltoall: send and recv must be different buffers");
    const size_t bytes = count * dtypeSize(dtype);
    return enqueue([&] {
      DDP_CHECK_NCCL(ncclGroupStart());
      for (int peer = 0; peer < size_; ++peer) {
        DDP_CHECK_NCCL(
            ncclSend(static_cast<const char*>(send) + peer * bytes, count, ncclType(dtype), peer, comm_, stream_));
        DDP_CHECK_NCCL(ncclRecv(static_cast<char*>(recv) + peer * bytes, count, ncclType(dtype), peer, comm_, stream_));
      }
      DDP_CHECK_NCCL(ncclGroupEnd());
    });
  }
  std::shared_ptr<Work> barrier() override {
    return enqueue([&] { DDP_CHECK_NCCL(ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, stream_)); });
  }

 private:
  template <typename Launch>
  std::shared_ptr<Work> enqueue(Launch launch) {
    DDP_CHECK_CUDA(cudaSetDevice(device_));
    auto work = std::make_shared<CudaWork>(stream_, comm_);
    launch();
    work->recordEnd(stream_);
    return work;
  }

  int rank_;
  int size_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CudaMemory> memory_;
  void* scratch_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> makeNcclBackend(const WorldInfo& world, const BackendOptions& options) {
  return std::make_unique<NcclBackend>(world, options);
}

}  // namespace ddp::comm
