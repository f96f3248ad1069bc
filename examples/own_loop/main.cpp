// own_loop: a LibTorch program with a training loop of its own — its model, its optimizer and its
// gradient allreduce through c10d's ProcessGroupGloo, not ddp::comm's DistributedDataParallel —
// timed step by step with ddp::comm::StepTimer, so that `ddprun --profile` analyses it like
// `train` (docs/step-timer.md). Started by ddprun or torchrun: RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT come from the environment.
//
//   ddprun --profile -np 2 build/examples/own_loop --steps 200
#include "ddp/comm/step_timer.hpp"
#include "ddp/common/environment.hpp"
#include "ddp/common/error.hpp"

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>

namespace {

using ddp::Phase;
using ddp::comm::StepTimer;

struct Rendezvous {
  int rank = 0, world = 1;
  std::string host = "127.0.0.1";
  int port = 29500;
};

Rendezvous fromEnvironment(const ddp::Environment& e) {
  Rendezvous r;
  r.rank = static_cast<int>(e.getInt(ddp::env::kRank, 0, 1 << 20).value_or(0));
  r.world = static_cast<int>(e.getInt(ddp::env::kWorldSize, 1, 1 << 20).value_or(1));
  r.host = e.get(ddp::env::kMasterAddr).value_or(r.host);
  r.port = static_cast<int>(e.getInt(ddp::env::kMasterPort, 1, 65535).value_or(r.port));
  if (r.rank >= r.world) throw ddp::ConfigError(fmt::format("RANK {} is not below WORLD_SIZE {}", r.rank, r.world));
  return r;
}

c10::intrusive_ptr<c10d::ProcessGroupGloo> connect(const Rendezvous& r) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(r.port);
  options.isServer = r.rank == 0;
  options.numWorkers = static_cast<std::size_t>(r.world);
  auto store = c10::make_intrusive<c10d::TCPStore>(r.host, options);
  auto gloo = c10d::ProcessGroupGloo::Options::create();
  gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(r.host));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, r.rank, r.world, gloo);
}

// Every gradient in one flat buffer, summed over the ranks and divided by their number: the
// exchange a data-parallel step needs, timed as one collective.
void averageGradients(torch::nn::Module& model, c10d::ProcessGroupGloo& group, StepTimer& timer) {
  std::vector<torch::Tensor> grads;
  for (auto& p : model.parameters()) grads.push_back(p.grad().view(-1));
  std::vector<torch::Tensor> flat{torch::cat(grads)};
  const auto start = StepTimer::Clock::now();
  group.allreduce(flat)->wait();
  timer.recordCollective(ddp::CollectiveOp::kAllreduce, 0, flat[0].numel() * flat[0].element_size(), start,
                         StepTimer::Clock::now() - start);
  flat[0].div_(group.getSize());
  int64_t offset = 0;
  for (auto& p : model.parameters()) {
    const int64_t n = p.grad().numel();
    p.grad().view(-1).copy_(flat[0].slice(0, offset, offset + n));
    offset += n;
  }
}

int run(int argc, char** argv) {
  CLI::App app("own_loop: a LibTorch loop of its own over c10d's ProcessGroupGloo, timed with ddp::comm::StepTimer");
  int64_t steps = 100, batch = 64;
  app.add_option("--steps", steps, "Training steps")->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--batch-size", batch, "Samples per rank per step")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  CLI11_PARSE(app, argc, argv);

  const auto environment = ddp::Environment::fromProcess();
  const auto r = fromEnvironment(environment);
  torch::set_num_threads(1);
  auto group = connect(r);
  torch::manual_seed(0);  // the same initial weights on every rank
  torch::nn::Sequential model(torch::nn::Linear(64, 256), torch::nn::ReLU(), torch::nn::Linear(256, 10));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  auto generator = at::detail::createCPUGenerator(1000 + r.rank);  // each rank its own data
  const auto target = torch::randn({64, 10}, generator);

  auto timerOptions = ddp::comm::StepTimerOptions::fromEnvironment(environment, r.rank, r.world);
  timerOptions.device = "cpu";  // what the loop trains on, for the timings' source record
  StepTimer timer(timerOptions);
  double loss = 0;
  for (int64_t step = 0; step < steps; ++step) {
    timer.beginStep(step, batch);
    torch::Tensor x, y;
    {
      auto phase = timer.phase(Phase::kData);
      x = torch::randn({batch, 64}, generator);
      y = torch::matmul(x, target).argmax(1);
    }
    torch::Tensor out;
    {
      auto phase = timer.phase(Phase::kForward);
      out = torch::nn::functional::cross_entropy(model->forward(x), y);
    }
    {
      auto phase = timer.phase(Phase::kBackward);
      optimizer.zero_grad();
      out.backward();
    }
    {
      auto phase = timer.phase(Phase::kCommWait);
      averageGradients(*model, *group, timer);
    }
    {
      auto phase = timer.phase(Phase::kOptimizer);
      optimizer.step();
    }
    loss = out.item<double>();
    timer.setLoss(loss);
    timer.endStep();
  }
  // The ranks' weights must agree: their sum, allreduced, is world × this rank's.
  std::vector<torch::Tensor> sum{torch::zeros({1}, torch::kFloat64)};
  for (auto& p : model->parameters()) sum[0] += p.to(torch::kFloat64).sum();
  const double mine = sum[0].item<double>();
  group->allreduce(sum)->wait();
  const bool same = std::abs(sum[0].item<double>() - r.world * mine) <= 1e-9 * std::abs(r.world * mine) + 1e-9;
  if (r.rank == 0)
    std::printf("own_loop: %lld steps, loss %.4f, weights %s on %d ranks\n", static_cast<long long>(steps), loss,
                same ? "agree" : "DIFFER", r.world);
  return same ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const ddp::ConfigError& e) {
    std::fprintf(stderr, "own_loop: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "own_loop: %s\n", e.what());
    return 1;
  }
}
