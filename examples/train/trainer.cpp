// The training loop of the train example: set-up, steps with timed phases, checkpoints, the
// summary, --verify and --dump-params.

#include "checkpoint.hpp"
#include "data.hpp"
#include "models.hpp"
#include "train.hpp"

#include "ddp/comm/detail/torch_compat.hpp"
#include "ddp/comm/distributed_data_parallel.hpp"
#include "ddp/comm/registry.hpp"
#include "ddp/comm/step_timer.hpp"
#include "ddp/comm/world.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/files.hpp"
#include "ddp/common/log_message.hpp"

#include <ATen/autocast_mode.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/cuda.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <iostream>
#include <map>
#include <thread>

namespace ddp::train {
namespace {

// Mixed precision (docs/train.md): fp16 autocast with a dynamic loss scale on CUDA, bf16
// autocast on CPU. Gradients stay float32, so DDP is unchanged.
class Precision {
 public:
  Precision(bool amp, bool cuda) : amp_(amp), cuda_(cuda) {}
  std::string name() const { return !amp_ ? "fp32" : cuda_ ? "fp16-autocast" : "bf16-autocast"; }

  // Autocast for the lifetime of the returned object.
  struct Scope {
    Scope(bool on, bool cuda) : on_(on), cuda_(cuda) {
      if (on_) comm::detail::setAutocast(device(), true, cuda_ ? at::kHalf : at::kBFloat16);
    }
    ~Scope() {
      if (!on_) return;
      comm::detail::setAutocast(device(), false, cuda_ ? at::kHalf : at::kBFloat16);
      at::autocast::clear_cache();
    }
    at::DeviceType device() const { return cuda_ ? at::kCUDA : at::kCPU; }
    bool on_, cuda_;
  };
  Scope autocast() const { return Scope(amp_, cuda_); }

  bool scaling() const { return amp_ && cuda_; }
  torch::Tensor scale(const torch::Tensor& loss) const { return scaling() ? loss * scale_ : loss; }
  // Unscales the (already averaged, so identical on every rank) gradients; false when they
  // overflowed, in which case the step is skipped and the scale halved.
  bool unscale(torch::nn::Module& model) {
    if (!scaling()) return true;
    torch::NoGradGuard noGrad;
    bool finite = true;
    for (auto& p : model.parameters()) {
      if (!p.grad().defined()) continue;
      p.mutable_grad().div_(scale_);
      finite = finite && torch::isfinite(p.grad()).all().item<bool>();
    }
    if (!finite) {
      scale_ /= 2;
      goodSteps_ = 0;
    } else if (++goodSteps_ % 2000 == 0) {
      scale_ *= 2;
    }
    return finite;
  }

 private:
  bool amp_, cuda_;
  double scale_ = 65536.0;
  int64_t goodSteps_ = 0;
};

torch::Tensor flatParameters(torch::nn::Module& model) {
  std::vector<torch::Tensor> parts;
  for (const auto& p : model.parameters()) parts.push_back(p.detach().to(torch::kCPU, torch::kFloat).reshape({-1}));
  return torch::cat(parts).contiguous();
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Every rank compares its parameters with rank 0's; returns the ranks that differ.
std::vector<int> differingRanks(comm::DistributedDataParallel& ddp, torch::nn::Module& model) {
  auto mine = flatParameters(model);
  auto reference = mine.clone();
  ddp.broadcastTensors({reference}, 0);
  auto flags = torch::zeros({ddp.backend().size()}, torch::kInt);
  flags[ddp.backend().rank()] = torch::equal(mine, reference) ? 0 : 1;
  ddp.allreduceTensor(flags, comm::ReduceOp::kSum);
  std::vector<int> ranks;
  for (int r = 0; r < flags.numel(); ++r)
    if (flags[r].item<int>()) ranks.push_back(r);
  return ranks;
}

// LibTorch's thread setting does not reach OpenBLAS, whose pool (one thread per core, spinning
// between calls) then fights the other ranks for the cores: steps became up to 10x slower at
// random. OpenBLAS is found at run time, as the BLAS alternative may be another library.
void setBlasThreads(int threads) {
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(threads);
}

// Fires this rank's faults for `step` in `phase` (compute faults in forward, data faults in
// the data phase).
void injectFaults(const std::vector<Fault>& faults, int rank, int64_t step, Phase phase) {
  for (const auto& f : faults) {
    if (f.rank != rank || step < f.step) continue;
    const bool once = step == f.step;
    if (phase == Phase::kData) {
      if (f.kind == Fault::Kind::kData) std::this_thread::sleep_for(std::chrono::milliseconds(f.arg));
      continue;
    }
    switch (f.kind) {
      case Fault::Kind::kSlow:
        std::this_thread::sleep_for(std::chrono::milliseconds(f.arg));
        break;
      case Fault::Kind::kExit:
        if (once) {
          log::error("train", fmt::format("rank {}: injected fault: exit {} at step {}", rank, f.arg, step));
          std::_Exit(static_cast<int>(f.arg));
        }
        break;
      case Fault::Kind::kSegv:
        if (once) std::raise(SIGSEGV);
        break;
      case Fault::Kind::kKill:
        if (once) std::raise(SIGKILL);
        break;
      case Fault::Kind::kHang:
        if (once)
          for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
        break;
      case Fault::Kind::kData:
        break;
    }
  }
}

std::string defaultBackend(const comm::WorldInfo& world, bool cuda) {
  if (cuda) return "nccl";
  return world.source == comm::WorldSource::kTorchrun ? "gloo" : "mpi";
}

// --dump-params PATH: rank 0 writes PATH; with %r in PATH every rank writes its own file.
std::string paramDumpPath(const std::string& pattern, int rank) {
  const auto at = pattern.find("%r");
  if (at == std::string::npos) return rank == 0 ? pattern : "";
  return pattern.substr(0, at) + std::to_string(rank) + pattern.substr(at + 2);
}

}  // namespace

Fault parseFault(const std::string& spec) {
  std::vector<std::string> parts;
  for (size_t b = 0;;) {
    size_t e = spec.find(':', b);
    parts.push_back(spec.substr(b, e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  auto bad = [&](const std::string& why) {
    return ConfigError(
        fmt::format("--fault '{}': {} (expected RANK:STEP:KIND[:ARG], KIND one of exit, segv, kill, "
                    "hang, slow, data)",
                    spec, why));
  };
  if (parts.size() < 3 || parts.size() > 4) throw bad("wrong number of fields");
  auto integer = [&](const std::string& text, const char* what) {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(text, &used);
    } catch (const std::exception&) {
    }
    if (used != text.size() || v < 0) throw bad(fmt::format("{} '{}' is not a non-negative integer", what, text));
    return static_cast<int64_t>(v);
  };
  Fault f;
  f.rank = static_cast<int>(integer(parts[0], "rank"));
  f.step = integer(parts[1], "step");
  static const std::map<std::string, Fault::Kind> kKinds = {{"exit", Fault::Kind::kExit}, {"segv", Fault::Kind::kSegv},
                                                            {"kill", Fault::Kind::kKill}, {"hang", Fault::Kind::kHang},
                                                            {"slow", Fault::Kind::kSlow}, {"data", Fault::Kind::kData}};
  auto kind = kKinds.find(parts[2]);
  if (kind == kKinds.end()) throw bad(fmt::format("unknown kind '{}'", parts[2]));
  f.kind = kind->second;
  const bool needsArg = f.kind == Fault::Kind::kSlow || f.kind == Fault::Kind::kData;
  if (needsArg && parts.size() != 4) throw bad("slow and data need milliseconds");
  f.arg = parts.size() == 4 ? integer(parts[3], "argument") : (f.kind == Fault::Kind::kExit ? 1 : 0);
  return f;
}

int runTraining(const TrainOptions& o) {
  const auto environment = Environment::fromProcess();
  const auto world = comm::discoverWorld(environment);
  const bool first = world.rank == 0;

  torch::set_num_threads(o.threads);
  setBlasThreads(o.threads);
  bool cuda = o.device == "cuda" || (o.device == "auto" && torch::cuda::is_available());
  if (cuda && !torch::cuda::is_available())
    throw ConfigError("--device cuda: this LibTorch has no CUDA or no GPU is visible");
  torch::Device device =
      cuda ? torch::Device(torch::kCUDA,
                           static_cast<int>(world.localRank % std::max<int64_t>(1, torch::cuda::device_count())))
           : torch::Device(torch::kCPU);

  // Everything a user can get wrong is checked before the first collective.
  std::vector<Fault> faults;
  for (const auto& spec : o.faults) faults.push_back(parseFault(spec));
  const auto attempt = ddp::Environment::fromProcess().getInt(ddp::env::kAttempt, 0, 1 << 20).value_or(0);
  if (o.faultOnce && attempt > 0) faults.clear();
  auto dataset = openDataset(o.data, o.model, o.syntheticSize, o.seed);
  ShardSampler sampler(dataset->size(), o.batchSize, o.accumulate, world.size, o.seed);
  const int64_t totalSteps = o.steps > 0 ? o.steps : o.epochs * sampler.stepsPerEpoch();
  if (!o.checkpointDir.empty() && first) checkCheckpointDir(o.checkpointDir);
  const std::string dumpPath = paramDumpPath(o.dumpParams, world.rank);
  if (!dumpPath.empty()) checkWritableParent(dumpPath, "--dump-params");
  // Ranks start from different weights on purpose: DDP makes rank 0's everyone's.
  torch::manual_seed(o.seed * 1000003 + static_cast<uint64_t>(world.rank));
  auto model = makeModel(o.model, dataset->shape(), o.hidden);
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(o.lr).momentum(o.momentum));
  const auto signature = modelSignature(o.model, *model);
  int64_t startStep = 0;
  if (o.resume && !o.checkpointDir.empty()) {
    if (auto step = loadCheckpoint(o.checkpointDir, signature, *model, optimizer)) startStep = *step;
  }
  comm::StepTimerOptions timerOptions = comm::StepTimerOptions::fromEnvironment(environment, world.rank, world.size);
  if (!o.timings.empty()) timerOptions.path = o.timings;
  timerOptions.device = device.str();
  comm::StepTimer timer(timerOptions);

  const std::string backendName = o.backend.empty() ? defaultBackend(world, cuda) : o.backend;
  auto backend = comm::builtinBackends().create(backendName, world, comm::BackendOptions::fromEnvironment(environment));
  comm::DdpOptions ddpOptions;
  ddpOptions.bucketCapMb = o.bucketMb;
  ddpOptions.firstBucketCapMb = o.firstBucketMb;
  ddpOptions.overlap = o.overlap;
  ddpOptions.findUnusedParameters = o.findUnused;
  comm::DistributedDataParallel ddp(model, *backend, ddpOptions);
  ddp.setTimer(&timer);
  if (o.resume) {
    // A checkpoint directory that not every host sees would silently mix steps.
    auto low = torch::tensor({startStep}, torch::kLong), high = low.clone();
    ddp.allreduceTensor(low, comm::ReduceOp::kMin);
    ddp.allreduceTensor(high, comm::ReduceOp::kMax);
    if (low.item<int64_t>() != high.item<int64_t>())
      throw ConfigError(
          fmt::format("ranks resumed from different steps ({} to {}): --checkpoint {} must be "
                      "a directory every host sees",
                      low.item<int64_t>(), high.item<int64_t>(), o.checkpointDir));
  }
  Precision precision(o.amp, cuda);

  int64_t parameterCount = 0;
  for (const auto& p : model->parameters()) parameterCount += p.numel();
  if (first) {
    std::cout << fmt::format(
        "train: model={} params={} data={} backend={} world={} batch={}x{}/rank "
        "buckets={} overlap={} precision={} device={}{}\n",
        o.model, parameterCount, dataset->describe(), backendName, world.size, o.batchSize, o.accumulate,
        ddp.buckets().size(), o.overlap ? "on" : "off", precision.name(), device.str(),
        timer.writing() ? " timings=" + timer.path() : "");
    if (startStep > 0) std::cout << fmt::format("train: resumed from step {} of {}\n", startStep, o.checkpointDir);
    std::cout << std::flush;
  }

  const int64_t logEvery = o.logEvery > 0 ? o.logEvery : std::max<int64_t>(1, totalSteps / 10);
  std::vector<double> stepMs;
  double lastLoss = 0;
  model->train();
  for (int64_t step = startStep; step < totalSteps; ++step) {
    timer.beginStep(step, o.batchSize * o.accumulate);
    double stepLoss = 0;
    for (int64_t micro = 0; micro < o.accumulate; ++micro) {
      timer.beginPhase(Phase::kData);
      if (micro == 0) injectFaults(faults, world.rank, step, Phase::kData);
      torch::Tensor x, y;
      dataset->load(sampler.indices(step, world.rank, micro), x, y);
      x = x.to(device);
      y = y.to(device);
      timer.beginPhase(Phase::kForward);
      if (micro == 0) injectFaults(faults, world.rank, step, Phase::kForward);
      // All but the last micro-batch accumulate locally; the last one's backward all-reduces.
      std::optional<comm::DistributedDataParallel::NoSyncGuard> noSync;
      if (micro + 1 < o.accumulate) noSync.emplace(ddp);
      torch::Tensor loss;
      {
        auto scope = precision.autocast();
        auto output = ddp.forward([&] { return model->forward(x); });
        loss = torch::nn::functional::cross_entropy(output.to(torch::kFloat), y) / static_cast<double>(o.accumulate);
      }
      timer.beginPhase(Phase::kBackward);
      precision.scale(loss).backward();  // ends in comm_wait: DDP waits for the last buckets
      stepLoss += loss.item<double>();
    }
    timer.beginPhase(Phase::kOptimizer);
    if (precision.unscale(*model)) optimizer.step();
    optimizer.zero_grad();
    timer.setLoss(stepLoss);
    stepMs.push_back(timer.endStep().stepMs);
    lastLoss = stepLoss;

    const int64_t done = step + 1;
    if (first && !o.checkpointDir.empty() && o.checkpointEvery > 0 && done % o.checkpointEvery == 0 &&
        done < totalSteps)
      saveCheckpoint(o.checkpointDir, signature, *model, optimizer, done);
    if (first && (done % logEvery == 0 || done == totalSteps))
      std::cout << fmt::format("train: step {}/{} loss {:.4f} step_ms {:.2f}\n", done, totalSteps, stepLoss,
                               stepMs.back())
                << std::flush;
  }
  timer.flush();
  if (first && !o.checkpointDir.empty() && totalSteps > startStep)
    saveCheckpoint(o.checkpointDir, signature, *model, optimizer, totalSteps);

  // The loss of the last step, averaged over ranks.
  auto lossTensor = torch::tensor({lastLoss}, torch::kDouble);
  ddp.allreduceTensor(lossTensor, comm::ReduceOp::kAvg);
  const double loss = lossTensor.item<double>();
  if (first) {
    double ms = median(stepMs);
    double samplesPerSecond = ms > 0 ? static_cast<double>(sampler.globalBatch()) * 1000.0 / ms : 0;
    std::cout << fmt::format("train: steps={} step_ms_median={:.3f} samples_per_s={:.1f} loss={:.4f} precision={}\n",
                             stepMs.size(), ms, samplesPerSecond, loss, precision.name())
              << std::flush;
  }

  int exitCode = 0;
  if (o.verify) {
    auto ranks = differingRanks(ddp, *model);
    if (first) {
      if (ranks.empty())
        std::cout << fmt::format("train: verify: parameters bitwise identical on {} ranks\n", world.size);
      else
        log::error("train",
                   fmt::format("verify: parameters of rank(s) {} differ from rank 0's", fmt::join(ranks, ", ")));
    }
    if (!ranks.empty()) exitCode = 1;
  }
  if (!dumpPath.empty()) {
    static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "--dump-params writes the host's float32");
    auto flat = flatParameters(*model);
    ddp::writeFileAtomically(dumpPath, std::string_view(static_cast<const char*>(flat.data_ptr()),
                                                        static_cast<size_t>(flat.numel()) * sizeof(float)));
  }
  std::cout << std::flush;
  return exitCode;
}

}  // namespace ddp::train
