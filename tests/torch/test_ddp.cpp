// DistributedDataParallel under mpirun: closed-form averaged gradients over every bucket layout,
// overlap on and off, no_sync accumulation, unused parameters, buffer broadcast. Every rank runs
// the same test cases in the same order. Usage: mpirun -np N test_ddp --backend mpi|gloo

#define CATCH_CONFIG_RUNNER
#include "ddp/comm/distributed_data_parallel.hpp"
#include "ddp/comm/registry.hpp"
#include "ddp/common/error.hpp"
#include "support/backend_session.hpp"

#include <torch/torch.h>
#include <catch2/catch.hpp>

using namespace ddp;
using namespace ddp::comm;

namespace {

std::unique_ptr<Backend> gBackend;

int rank() { return gBackend->rank(); }
int worldSize() { return gBackend->size(); }

// Parameters of assorted shapes; the loss is sum(p * x_p) over the used ones, so the gradient
// of p on rank r is x_p = (r + 1) * (index + 1) and its average over n ranks is
// (n + 1) / 2 * (index + 1): exact in float.
struct Toy : torch::nn::Module {
  Toy() {
    const std::vector<std::vector<int64_t>> shapes = {{1000}, {7}, {3, 5}, {64, 33}, {1}};
    for (size_t i = 0; i < shapes.size(); ++i)
      params.push_back(register_parameter("p" + std::to_string(i), torch::randn(shapes[i])));
    running = register_buffer("running", torch::zeros({4}));
  }
  torch::Tensor forward(const std::vector<bool>& use) {
    torch::Tensor loss = torch::zeros({});
    for (size_t i = 0; i < params.size(); ++i)
      if (use[i]) loss = loss + (params[i] * inputFor(i)).sum();
    if (is_training()) running.add_(static_cast<float>(rank() + 1));
    return loss;
  }
  static float inputFor(size_t i) { return static_cast<float>((rank() + 1) * (i + 1)); }
  static float expectedGrad(size_t i) { return (worldSize() + 1) / 2.0f * static_cast<float>(i + 1); }
  std::vector<torch::Tensor> params;
  torch::Tensor running;
};

const std::vector<bool> kAll(5, true);

void checkAveraged(Toy& toy, float times = 1) {
  for (size_t i = 0; i < toy.params.size(); ++i) {
    INFO("parameter p" << i << " grad " << toy.params[i].grad().flatten().slice(0, 0, 3) << " expected "
                       << times * Toy::expectedGrad(i));
    REQUIRE(toy.params[i].grad().defined());
    CHECK(torch::allclose(toy.params[i].grad(), torch::full_like(toy.params[i], times * Toy::expectedGrad(i)), 0, 0));
  }
}

bool sameOnAllRanks(DistributedDataParallel& ddp, torch::Tensor t) {
  auto reference = t.clone();
  ddp.broadcastTensors({reference}, 0);
  auto differs = torch::tensor({torch::equal(reference, t) ? 0 : 1}, torch::kInt);
  ddp.allreduceTensor(differs, ReduceOp::kSum);
  return differs.item<int>() == 0;
}

}  // namespace

TEST_CASE("construction makes every rank start from rank 0's parameters and buffers", "[ddp]") {
  torch::manual_seed(100 + static_cast<uint64_t>(rank()));
  auto toy = std::make_shared<Toy>();
  toy->running.fill_(static_cast<float>(rank()));
  DistributedDataParallel ddp(toy, *gBackend);
  for (auto& p : toy->params) CHECK(sameOnAllRanks(ddp, p.detach()));
  CHECK(toy->running.sum().item<float>() == 0);
}

TEST_CASE("gradients are averaged over ranks for every bucket layout, overlapped or not", "[ddp]") {
  for (double cap : {25.0, 0.004, 1e-6}) {
    for (bool overlap : {true, false}) {
      DYNAMIC_SECTION("bucket cap " << cap << " MiB, overlap " << overlap) {
        auto toy = std::make_shared<Toy>();
        DdpOptions options;
        options.bucketCapMb = options.firstBucketCapMb = cap;
        options.overlap = overlap;
        DistributedDataParallel ddp(toy, *gBackend, options);
        if (cap == 1e-6) CHECK(ddp.buckets().size() == toy->params.size());
        // Reverse registration order: the first bucket starts with the last parameter.
        CHECK(ddp.parameterNames().front() == "p4");
        torch::optim::SGD sgd(toy->parameters(), 0.1);
        for (int step = 0; step < 3; ++step) {
          ddp.forward([&] { return toy->forward(kAll); }).backward();
          checkAveraged(*toy);
          sgd.step();
          sgd.zero_grad();  // in place on the bucket; the next step copies nothing
        }
        for (auto& p : toy->params) CHECK(sameOnAllRanks(ddp, p.detach()));
      }
    }
  }
}

TEST_CASE("no_sync accumulates locally and the next backward averages the sum", "[ddp]") {
  auto toy = std::make_shared<Toy>();
  DistributedDataParallel ddp(toy, *gBackend);
  {
    auto guard = ddp.noSync();
    ddp.forward([&] { return toy->forward(kAll); }).backward();
    // Still local: each rank holds its own input.
    CHECK(toy->params[1].grad()[0].item<float>() == Toy::inputFor(1));
  }
  ddp.forward([&] { return toy->forward(kAll); }).backward();
  checkAveraged(*toy, 2);
}

TEST_CASE("a parameter without a gradient is an error naming it", "[ddp]") {
  auto toy = std::make_shared<Toy>();
  DistributedDataParallel ddp(toy, *gBackend);
  std::vector<bool> use = kAll;
  use[2] = false;
  CHECK_THROWS_WITH(
      ddp.forward([&] { return toy->forward(use); }).backward(),
      Catch::Contains("received no gradient") && Catch::Contains("p2") && Catch::Contains("findUnusedParameters"));
  // The module stays usable after the error.
  toy->zero_grad();
  ddp.forward([&] { return toy->forward(kAll); }).backward();
  checkAveraged(*toy);
}

TEST_CASE("findUnusedParameters: parameters unused on some ranks contribute zeros", "[ddp]") {
  auto toy = std::make_shared<Toy>();
  DdpOptions options;
  options.findUnusedParameters = true;
  options.bucketCapMb = options.firstBucketCapMb = 1e-6;  // the unused one's bucket must not stall the rest
  DistributedDataParallel ddp(toy, *gBackend, options);
  std::vector<bool> use = kAll;
  use[3] = rank() == 0;  // p3 only on rank 0
  use[1] = false;        // p1 nowhere
  ddp.forward([&] { return toy->forward(use); }).backward();
  const float n = static_cast<float>(worldSize());
  CHECK(torch::allclose(toy->params[3].grad(), torch::full_like(toy->params[3], 4.0f / n)));
  CHECK(toy->params[1].grad().abs().sum().item<float>() == 0);
  CHECK(toy->params[0].grad()[0].item<float>() == Toy::expectedGrad(0));
}

TEST_CASE("buffers are broadcast from rank 0 before each training forward", "[ddp]") {
  auto toy = std::make_shared<Toy>();
  DistributedDataParallel ddp(toy, *gBackend);
  ddp.forward([&] { return toy->forward(kAll); }).backward();
  // Each rank's forward moved its buffer by its own amount...
  CHECK(toy->running[0].item<float>() == static_cast<float>(rank() + 1));
  // ...and the next forward starts from rank 0's.
  ddp.beginForward();
  CHECK(toy->running[0].item<float>() == 1.0f);
  CHECK(sameOnAllRanks(ddp, toy->running));
  ddp.endForward(torch::Tensor());
  toy->eval();
  toy->running.fill_(static_cast<float>(rank()));
  ddp.beginForward();  // not in eval mode
  CHECK(toy->running[0].item<float>() == static_cast<float>(rank()));
}

TEST_CASE("bucket collectives are recorded into the step timer", "[ddp]") {
  auto toy = std::make_shared<Toy>();
  DdpOptions options;
  options.bucketCapMb = options.firstBucketCapMb = 0.004;
  DistributedDataParallel ddp(toy, *gBackend, options);
  StepTimer timer(StepTimerOptions{});
  ddp.setTimer(&timer);
  timer.beginStep(0, 1);
  timer.beginPhase(Phase::kBackward);
  ddp.forward([&] { return toy->forward(kAll); }).backward();
  const auto& record = timer.endStep();
  size_t allreduces = 0;
  uint64_t bytes = 0;
  for (const auto& c : record.collectives) {
    if (c.op != CollectiveOp::kAllreduce) continue;
    ++allreduces;
    bytes += c.bytes;
  }
  CHECK(allreduces == ddp.buckets().size());
  CHECK(bytes == (1000 + 7 + 15 + 64 * 33 + 1) * sizeof(float));
  CHECK(record.phasesMs[Phase::kCommWait] > 0);  // the end of backward waited for the buckets
}

int main(int argc, char** argv) {
  torch::set_num_threads(1);
  return ddp::tests::runWithBackend(argc, argv, gBackend, "test_ddp");
}
