#include "ddp/comm/distributed_data_parallel.hpp"

#include "ddp/common/error.hpp"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <fmt/format.h>

#include <unordered_set>

namespace ddp::comm {
namespace {

DType toDType(c10::ScalarType type, const std::string& what) {
  switch (type) {
    case c10::ScalarType::Float:
      return DType::kFloat32;
    case c10::ScalarType::Double:
      return DType::kFloat64;
    case c10::ScalarType::Int:
      return DType::kInt32;
    case c10::ScalarType::Long:
      return DType::kInt64;
    case c10::ScalarType::Half:
      return DType::kFloat16;
    case c10::ScalarType::BFloat16:
      return DType::kBFloat16;
    default:
      throw ConfigError(
          fmt::format("DistributedDataParallel: {} has dtype {}, which the comm "
                      "backends cannot carry",
                      what, c10::toString(type)));
  }
}

// True when grad is the parameter's slot of its bucket (it stays so across zero_grad()).
bool aliases(const torch::Tensor& grad, const torch::Tensor& slot) {
  return grad.defined() && grad.data_ptr() == slot.data_ptr() && grad.sizes() == slot.sizes();
}

int deviceIndex(const torch::Tensor& t) { return t.is_cuda() ? t.get_device() : -1; }

// The memory a collective runs on for one flat tensor: the tensor itself when the backend can
// use its storage (host tensors on a host backend, CUDA tensors on nccl), otherwise a staging
// copy in the backend's memory (through host memory for CUDA tensors).
class CommBuffer {
 public:
  CommBuffer(Backend& backend, torch::Tensor flat) : backend_(backend), flat_(std::move(flat)) {
    bool hostBackend = &backend.memory() == &hostMemory();
    bool direct = hostBackend ? !flat_.is_cuda() : (flat_.is_cuda() && backend.name() == "nccl");
    if (direct) return;
    if (flat_.is_cuda()) host_ = torch::empty_like(flat_, torch::TensorOptions().device(torch::kCPU));
    if (!hostBackend) device_ = backend.memory().allocate(bytes());
  }
  ~CommBuffer() {
    if (device_) backend_.memory().release(device_);
  }
  CommBuffer(const CommBuffer&) = delete;
  CommBuffer& operator=(const CommBuffer&) = delete;

  size_t bytes() const { return static_cast<size_t>(flat_.numel()) * flat_.element_size(); }
  const torch::Tensor& flat() const { return flat_; }

  // The pointer to run the collective on, holding the flat tensor's current contents.
  void* in() {
    if (flat_.is_cuda()) torch::cuda::synchronize(flat_.get_device());  // kernels writing it
    void* host = flat_.data_ptr();
    if (host_.defined()) {
      host_.copy_(flat_);
      host = host_.data_ptr();
    }
    if (!device_) return host;
    backend_.memory().copyFromHost(device_, host, bytes());
    return device_;
  }
  // Brings the collective's result back into the flat tensor.
  void out() {
    void* host = host_.defined() ? host_.data_ptr() : flat_.data_ptr();
    if (device_) backend_.memory().copyToHost(host, device_, bytes());
    if (host_.defined()) flat_.copy_(host_);
  }

 private:
  Backend& backend_;
  torch::Tensor flat_;
  torch::Tensor host_;
  void* device_ = nullptr;
};

}  // namespace

struct DistributedDataParallel::BucketState {
  BucketState(Backend& backend, torch::Tensor flat) : buffer(backend, std::move(flat)) {}
  CommBuffer buffer;
  std::vector<torch::Tensor> views;  // one per parameter, shaped like it
  size_t pending = 0;
  std::shared_ptr<Work> work;
  StepTimer::Clock::time_point launchedAt;
};

// What the autograd hooks reach; cleared when the DDP object goes away before its hooks do.
struct DistributedDataParallel::HookState {
  DistributedDataParallel* owner = nullptr;
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<torch::nn::Module> module, Backend& backend,
                                                 DdpOptions options)
    : module_(std::move(module)), backend_(backend), options_(options) {
  if (!module_) throw ConfigError("DistributedDataParallel: no module given");
  if (!(options_.bucketCapMb > 0) || !(options_.firstBucketCapMb > 0))
    throw ConfigError(
        fmt::format("DistributedDataParallel: bucket caps must be > 0 MiB (got {} "
                    "and first {})",
                    options_.bucketCapMb, options_.firstBucketCapMb));
  const auto named = module_->named_parameters(/*recurse=*/true).pairs();
  // Gradients become ready roughly in reverse registration order; so are buckets filled.
  for (auto it = named.rbegin(); it != named.rend(); ++it) {
    if (!it->second.requires_grad()) continue;
    names_.push_back(it->first);
    params_.push_back(it->second);
  }

  // Ranks may start from different initial values: rank 0's win.
  std::vector<torch::Tensor> initial;
  for (auto& p : module_->parameters()) initial.push_back(p);
  for (auto& b : module_->buffers()) initial.push_back(b);
  broadcastTensors(initial, 0);

  std::vector<BucketParam> sizes;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& p = params_[i];
    sizes.push_back({static_cast<size_t>(p.numel()) * p.element_size(),
                     toDType(p.scalar_type(), "parameter " + names_[i]), deviceIndex(p)});
  }
  constexpr double kMiB = 1024.0 * 1024.0;
  buckets_ = assignBuckets(sizes, static_cast<size_t>(options_.firstBucketCapMb * kMiB),
                           static_cast<size_t>(options_.bucketCapMb * kMiB));
  bucketOf_.resize(params_.size());
  slotOf_.resize(params_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    int64_t total = 0;
    for (size_t i : buckets_[b].params) total += params_[i].numel();
    const auto& first = params_[buckets_[b].params.front()];
    auto flat = torch::zeros({total}, first.options().requires_grad(false));
    auto state = std::make_unique<BucketState>(backend_, flat);
    int64_t offset = 0;
    for (size_t slot = 0; slot < buckets_[b].params.size(); ++slot) {
      size_t i = buckets_[b].params[slot];
      // An alias of the bucket, not an autograd view: optimizers detach_() gradients in
      // zero_grad(), which autograd refuses on views (PyTorch's gradient_as_bucket_view trap).
      auto* data = static_cast<char*>(flat.data_ptr()) + offset * flat.element_size();
      state->views.push_back(torch::from_blob(
          data, params_[i].sizes(), [keep = flat](void*) {}, flat.options()));
      offset += params_[i].numel();
      bucketOf_[i] = b;
      slotOf_[i] = slot;
    }
    state_.push_back(std::move(state));
  }

  hookState_ = std::make_shared<HookState>();
  hookState_->owner = this;
  for (size_t i = 0; i < params_.size(); ++i) {
    // The accumulator runs after the gradient is summed into .grad, which is what no_sync
    // accumulation needs; the parameter holds it weakly, so it is kept alive here.
    auto accumulator = torch::autograd::impl::grad_accumulator(params_[i]);
    auto hook = std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [state = hookState_, i](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          if (state->owner) state->owner->markReady(i);
          return outputs;
        });
    hookKeys_.push_back(accumulator->add_post_hook(std::move(hook)));
    accumulators_.push_back(std::move(accumulator));
  }
  resetForBackward();
}

DistributedDataParallel::~DistributedDataParallel() {
  hookState_->owner = nullptr;
  for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(hookKeys_[i]);
  for (auto& state : state_) {
    if (!state->work) continue;
    try {
      state->work->wait();
    } catch (...) {
      // The buffer must outlive the collective; its failure was or will be reported elsewhere.
    }
  }
}

void DistributedDataParallel::resetForBackward() {
  ready_.assign(params_.size(), false);
  unusedMarked_.assign(params_.size(), false);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    state_[b]->pending = buckets_[b].params.size();
    state_[b]->work.reset();
  }
  nextLaunch_ = 0;
}

void DistributedDataParallel::beginForward() {
  if (!syncing_) resetForBackward();
  if (options_.broadcastBuffers && module_->is_training() && backend_.size() > 1) {
    auto buffers = module_->buffers();
    if (!buffers.empty()) broadcastTensors(buffers, 0);
  }
}

void DistributedDataParallel::endForward(const torch::Tensor& output) {
  if (!options_.findUnusedParameters || !requireSync_ || !torch::GradMode::is_enabled() || !output.defined()) return;
  // Every gradient accumulator reachable from the output will run in backward; the others
  // belong to parameters this forward did not use.
  std::unordered_set<const torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> stack;
  if (auto fn = output.grad_fn()) {
    stack.push_back(fn.get());
    seen.insert(fn.get());
  }
  while (!stack.empty()) {
    auto* node = stack.back();
    stack.pop_back();
    for (const auto& edge : node->next_edges()) {
      auto* next = edge.function.get();
      if (next && seen.insert(next).second) stack.push_back(next);
    }
  }
  for (size_t i = 0; i < params_.size(); ++i)
    if (!seen.count(accumulators_[i].get()) && !ready_[i]) markUnused(i);
}

void DistributedDataParallel::markUnused(size_t i) {
  ready_[i] = true;
  unusedMarked_[i] = true;
  auto& state = *state_[bucketOf_[i]];
  auto& view = state.views[slotOf_[i]];
  // An unused parameter contributes what it has accumulated (no_sync), else zeros.
  torch::NoGradGuard noGrad;
  const auto& grad = params_[i].grad();
  if (!grad.defined())
    view.zero_();
  else if (!aliases(grad, view))
    view.copy_(grad);
  --state.pending;
}

void DistributedDataParallel::markReady(size_t i) {
  if (!requireSync_) return;
  if (!syncing_) {
    // The first gradient of a synchronised backward: the synchronisation completes when this
    // backward ends, so gradients are averaged by the time backward() returns.
    syncing_ = true;
    torch::autograd::Engine::get_default_engine().queue_callback([state = hookState_] {
      if (state->owner) state->owner->finalize();
    });
  }
  if (ready_[i])
    throw Error(
        fmt::format("DistributedDataParallel: the gradient of {} became ready twice in "
                    "one backward (reentrant backward or a parameter marked unused "
                    "that was used)",
                    names_[i]));
  ready_[i] = true;
  auto& state = *state_[bucketOf_[i]];
  auto& view = state.views[slotOf_[i]];
  auto& grad = params_[i].mutable_grad();
  if (!aliases(grad, view)) {
    // The first backward (or one after set-to-none zeroing): move the gradient into the bucket
    // and make .grad a view of it, so later steps accumulate in place and copy nothing.
    torch::NoGradGuard noGrad;
    view.copy_(grad);
    grad = view;
  }
  if (--state.pending == 0 && options_.overlap) launchReadyBuckets();
}

void DistributedDataParallel::launchReadyBuckets() {
  // Every rank launches buckets in index order, whatever order its gradients arrived in.
  while (nextLaunch_ < buckets_.size() && state_[nextLaunch_]->pending == 0) launch(nextLaunch_++);
}

void DistributedDataParallel::launch(size_t b) {
  auto& state = *state_[b];
  state.launchedAt = StepTimer::Clock::now();
  void* data = state.buffer.in();
  state.work = backend_.allreduce(data, data, static_cast<size_t>(state.buffer.flat().numel()), buckets_[b].dtype,
                                  ReduceOp::kAvg);
}

void DistributedDataParallel::synchronize() { finalize(); }

void DistributedDataParallel::finalize() {
  if (!syncing_) return;
  syncing_ = false;
  if (timer_ && std::this_thread::get_id() == owner_) timer_->beginPhase(Phase::kCommWait);

  std::vector<std::string> missing;
  for (size_t i = 0; i < params_.size(); ++i)
    if (!ready_[i]) missing.push_back(names_[i]);
  if (!missing.empty() && !options_.findUnusedParameters) {
    for (auto& state : state_)
      if (state->work) state->work->wait();
    resetForBackward();
    std::string list;
    for (size_t k = 0; k < missing.size() && k < 5; ++k) list += (k ? ", " : "") + missing[k];
    if (missing.size() > 5) list += fmt::format(" and {} more", missing.size() - 5);
    throw Error(
        fmt::format("DistributedDataParallel: {} parameter(s) received no gradient in "
                    "this backward: {}; make every parameter take part in the loss, or "
                    "set findUnusedParameters (train: --find-unused-parameters)",
                    missing.size(), list));
  }
  for (size_t i = 0; i < params_.size(); ++i)
    if (!ready_[i]) markUnused(i);
  for (size_t b = nextLaunch_; b < buckets_.size(); ++b) launch(b);
  nextLaunch_ = buckets_.size();

  for (size_t b = 0; b < buckets_.size(); ++b) {
    auto& state = *state_[b];
    state.work->wait();
    state.buffer.out();
    if (timer_)
      timer_->recordCollective(CollectiveOp::kAllreduce, static_cast<int>(b), state.buffer.bytes(), state.launchedAt,
                               StepTimer::Clock::now() - state.launchedAt);
  }
  for (size_t i = 0; i < params_.size(); ++i)
    if (unusedMarked_[i]) params_[i].mutable_grad() = state_[bucketOf_[i]]->views[slotOf_[i]];
  resetForBackward();
}

void DistributedDataParallel::broadcastTensors(const std::vector<torch::Tensor>& tensors, int root) {
  torch::NoGradGuard noGrad;
  // One collective per dtype and device, in a fixed order on every rank.
  std::map<std::pair<int, int>, std::vector<torch::Tensor>> groups;
  for (const auto& t : tensors) {
    if (t.numel() == 0) continue;
    toDType(t.scalar_type(), "a parameter or buffer");
    groups[{static_cast<int>(t.scalar_type()), deviceIndex(t)}].push_back(t);
  }
  for (auto& [key, group] : groups) {
    std::vector<torch::Tensor> flatParts;
    for (auto& t : group) flatParts.push_back(t.reshape({-1}));
    CommBuffer buffer(backend_, torch::cat(flatParts));
    auto start = StepTimer::Clock::now();
    void* data = buffer.in();
    backend_
        .broadcast(data, static_cast<size_t>(buffer.flat().numel()), toDType(buffer.flat().scalar_type(), "a buffer"),
                   root)
        ->wait();
    buffer.out();
    if (timer_)
      timer_->recordCollective(CollectiveOp::kBroadcast, -1, buffer.bytes(), start, StepTimer::Clock::now() - start);
    int64_t offset = 0;
    for (auto& t : group) {
      t.copy_(buffer.flat().narrow(0, offset, t.numel()).view_as(t));
      offset += t.numel();
    }
  }
}

void DistributedDataParallel::allreduceTensor(torch::Tensor& tensor, ReduceOp op) {
  torch::NoGradGuard noGrad;
  if (!tensor.is_contiguous()) throw Error("DistributedDataParallel::allreduceTensor: tensor is not contiguous");
  CommBuffer buffer(backend_, tensor.view({-1}));
  void* data = buffer.in();
  backend_.allreduce(data, data, static_cast<size_t>(tensor.numel()), toDType(tensor.scalar_type(), "a tensor"), op)
      ->wait();
  buffer.out();
}

}  // namespace ddp::comm
