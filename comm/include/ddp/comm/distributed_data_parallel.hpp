#pragma once
// DistributedDataParallel for LibTorch modules (docs/ddp.md): PyTorch's DDP semantics over any
// ddp::comm::Backend. The one public header of the comm layer that needs LibTorch (target
// ddp::torch).

#include "ddp/comm/backend.hpp"
#include "ddp/comm/buckets.hpp"
#include "ddp/comm/detail/torch_compat.hpp"
#include "ddp/comm/step_timer.hpp"

#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace ddp::comm {

struct DdpOptions {
  // Bucket caps in MiB: the first bucket is small so its allreduce starts early in backward.
  double bucketCapMb = 25;
  double firstBucketCapMb = 1;
  // false: no allreduce during backward; every bucket is all-reduced after it (for comparison).
  bool overlap = true;
  // true: parameters the forward pass did not use contribute zeros instead of being an error.
  bool findUnusedParameters = false;
  // Broadcast buffers (e.g. BatchNorm running statistics) from rank 0 before each forward in
  // training mode, as PyTorch's broadcast_buffers does.
  bool broadcastBuffers = true;
};

// Wraps a module whose parameters all ranks train together. Construction broadcasts parameters
// and buffers from rank 0 (a collective: every rank constructs at the same point). Each backward
// then all-reduces the gradients in buckets, averaged over ranks, each bucket launched as soon
// as all its gradients are accumulated; by the time loss.backward() returns every gradient is
// averaged, so optimizer.step() follows as usual.
//
// Per step, every rank must call forward() and backward() the same number of times, and
// noSync() around the same micro-batches. One training thread; not thread-safe. The module and
// backend must outlive this object.
class DistributedDataParallel {
 public:
  DistributedDataParallel(std::shared_ptr<torch::nn::Module> module, Backend& backend, DdpOptions options = {});
  ~DistributedDataParallel();  // waits for collectives still in flight
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  // Runs fn (the module's forward) with buffers synchronised before it and, with
  // findUnusedParameters, the unused parameters found from its output after it.
  template <typename Fn>
  torch::Tensor forward(Fn&& fn) {
    beginForward();
    torch::Tensor output = fn();
    endForward(output);
    return output;
  }
  void beginForward();
  void endForward(const torch::Tensor& output);

  // Gradients accumulate locally while the guard lives (gradient accumulation); the first
  // backward after it synchronises the accumulated sum.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& ddp) : ddp_(ddp), saved_(ddp.requireSync_) {
      ddp_.requireSync_ = false;
    }
    ~NoSyncGuard() { ddp_.requireSync_ = saved_; }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool saved_;
  };
  NoSyncGuard noSync() { return NoSyncGuard(*this); }

  // Completes the gradient synchronisation of the last backward if it is still open (the end
  // of backward normally does it). Throws ddp::Error naming parameters that got no gradient.
  void synchronize();

  // Bucket collectives are recorded into the timer's open step, and the wait for them at the
  // end of backward is its comm_wait phase. nullptr: none.
  void setTimer(StepTimer* timer) { timer_ = timer; }

  // Broadcasts tensors (any mix of dtypes) from `root` in place: a collective.
  void broadcastTensors(const std::vector<torch::Tensor>& tensors, int root);
  // All-reduces one contiguous tensor in place: a collective.
  void allreduceTensor(torch::Tensor& tensor, ReduceOp op);

  torch::nn::Module& module() { return *module_; }
  Backend& backend() { return backend_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }
  // The parameter names, in the bucket-assignment order (reverse registration).
  const std::vector<std::string>& parameterNames() const { return names_; }

 private:
  struct BucketState;
  struct HookState;

  void markReady(size_t param);
  void markUnused(size_t param);
  void launchReadyBuckets();
  void launch(size_t bucket);
  void finalize();
  void resetForBackward();

  std::shared_ptr<torch::nn::Module> module_;
  Backend& backend_;
  DdpOptions options_;
  std::vector<torch::Tensor> params_;  // reverse registration order
  std::vector<std::string> names_;
  std::vector<Bucket> buckets_;
  std::vector<std::unique_ptr<BucketState>> state_;
  std::vector<size_t> bucketOf_, slotOf_;      // per parameter
  std::vector<detail::NodePtr> accumulators_;  // keeps the hooked grad accumulators alive
  std::vector<uintptr_t> hookKeys_;
  std::shared_ptr<HookState> hookState_;
  std::vector<bool> ready_;
  std::vector<bool> unusedMarked_;
  size_t nextLaunch_ = 0;
  bool requireSync_ = true;
  bool syncing_ = false;  // a synchronised backward is under way (its end callback queued)
  StepTimer* timer_ = nullptr;
  std::thread::id owner_ = std::this_thread::get_id();
};

}  // namespace ddp::comm
