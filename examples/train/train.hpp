#pragma once
// The train example: data-parallel training of an MLP, a small CNN or a CIFAR ResNet with
// ddp::comm::DistributedDataParallel (docs/train.md).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace ddp::train {

struct TrainOptions {
  std::string model = "mlp";              // mlp | cnn | resnet18 | resnet50
  std::vector<int64_t> hidden{512, 512};  // mlp hidden layer widths
  std::string data = "synthetic";         // synthetic | cifar10:DIR | mnist:DIR
  int64_t syntheticSize = 60000;          // samples in the synthetic dataset
  int64_t steps = 0;                      // 0: from epochs
  int64_t epochs = 0;
  int64_t batchSize = 32;  // per rank, per micro-batch
  int64_t accumulate = 1;  // micro-batches per step (all but the last under no_sync)
  double lr = 0.05;
  double momentum = 0.9;
  std::string backend;  // empty: mpi under mpirun/ddprun, else gloo
  double bucketMb = 25;
  double firstBucketMb = 1;
  bool overlap = true;
  bool findUnused = false;
  int threads = 1;
  uint64_t seed = 1;
  std::string checkpointDir;
  int64_t checkpointEvery = 0;  // 0: only at the end
  bool resume = false;
  bool verify = false;
  std::string dumpParams;
  bool amp = false;
  std::string device = "auto";      // auto | cpu | cuda
  std::string timings;              // timings file; empty: $DDPRUN_RUN_DIR/timings/rank-NNNNN.jsonl
  int64_t logEvery = 0;             // 0: about ten progress lines
  std::vector<std::string> faults;  // --fault RANK:STEP:KIND[:ARG] (docs/train.md)
  bool faultOnce = false;           // --fault-once: only on the first attempt (DDPRUN_ATTEMPT unset or 0)
};

// An injected fault: from step `step` on, rank `rank` misbehaves (docs/train.md).
struct Fault {
  enum class Kind { kExit, kSegv, kKill, kHang, kSlow, kData };
  int rank = 0;
  int64_t step = 0;
  Kind kind = Kind::kExit;
  int64_t arg = 0;  // exit code, or milliseconds for slow/data
};
// Parses "RANK:STEP:KIND[:ARG]"; throws ConfigError naming the spec.
Fault parseFault(const std::string& spec);

// Image shape of one sample.
struct SampleShape {
  int64_t channels = 1, height = 28, width = 28;
  int64_t numel() const { return channels * height * width; }
};

// Returns the exit code: 0, or 1 when --verify finds ranks that differ.
int runTraining(const TrainOptions& options);

}  // namespace ddp::train
