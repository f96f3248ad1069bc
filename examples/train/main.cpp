// train: data-parallel training with ddp::comm::DistributedDataParallel (docs/train.md).
// Example: mpirun -np 4 train --model mlp --steps 50 --verify

#include "train.hpp"

#include "ddp/comm/mpi_session.hpp"
#include "ddp/comm/world.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/log_message.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <iostream>

using namespace ddp::train;

int main(int argc, char** argv) {
  TrainOptions o;
  CLI::App app{
      "train: data-parallel training of an MLP, a small CNN or a CIFAR ResNet with "
      "ddp::comm::DistributedDataParallel.\n"
      "Example: ddprun -np 4 train --model resnet18 --batch-size 32 --steps 100"};
  app.add_option("--model", o.model, "mlp | cnn | resnet18 | resnet50")
      ->check(CLI::IsMember({"mlp", "cnn", "resnet18", "resnet50"}))
      ->capture_default_str();
  app.add_option("--hidden", o.hidden, "MLP hidden widths, e.g. --hidden 512 512")->capture_default_str();
  app.add_option("--data", o.data, "synthetic | cifar10:DIR (cifar-10-batches-bin) | mnist:DIR (IDX files)")
      ->capture_default_str();
  app.add_option("--synthetic-size", o.syntheticSize, "Samples in the synthetic dataset")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  auto* steps = app.add_option("--steps", o.steps, "Training steps (default 100)")
                    ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--epochs", o.epochs, "Epochs over the dataset instead of --steps")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->excludes(steps);
  app.add_option("--batch-size", o.batchSize, "Samples per rank per micro-batch")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
      ->capture_default_str();
  app.add_option("--accumulate", o.accumulate, "Micro-batches per step; all but the last under no_sync")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16))
      ->capture_default_str();
  app.add_option("--lr", o.lr, "SGD learning rate")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--backend", o.backend,
                 "gloo | mpi | nccl (default: nccl on CUDA, gloo when started torchrun-style, else mpi)")
      ->check(CLI::IsMember({"gloo", "mpi", "nccl"}));
  app.add_option("--bucket-mb", o.bucketMb, "Gradient bucket size in MiB")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--first-bucket-mb", o.firstBucketMb, "First bucket size in MiB")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bool noOverlap = false;
  app.add_flag("--no-overlap", noOverlap, "All-reduce every bucket after backward instead of during it");
  app.add_flag("--find-unused-parameters", o.findUnused, "Parameters without a gradient contribute zeros");
  app.add_option("--threads", o.threads, "Intra-op threads per rank")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of the data, the sampler and the initial weights")->capture_default_str();
  app.add_option("--checkpoint", o.checkpointDir, "Directory for checkpoint.pt (written by rank 0 at the end)");
  app.add_option("--checkpoint-every", o.checkpointEvery, "Also checkpoint every K steps")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_flag("--resume", o.resume, "Continue from the checkpoint in --checkpoint when there is one");
  app.add_flag("--verify", o.verify, "After training, check that all ranks hold bitwise identical parameters");
  app.add_option("--dump-params", o.dumpParams,
                 "Rank 0 writes all parameters as raw little-endian float32; with %r in PATH every rank writes its own "
                 "(params.%r)");
  app.add_flag("--amp", o.amp, "Mixed precision: fp16 autocast + loss scaling on CUDA, bf16 autocast on CPU");
  app.add_option("--device", o.device, "auto | cpu | cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--timings", o.timings, "Timings file (default: $DDPRUN_RUN_DIR/timings/rank-NNNNN.jsonl)");
  app.add_option("--log-every", o.logEvery, "Progress line every N steps (default: ten lines)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));

  app.add_option("--fault", o.faults,
                 "Inject a fault, RANK:STEP:KIND[:ARG]: exit[:CODE], segv, kill, hang, "
                 "slow:MS (per step from STEP), data:MS (added to the data phase); repeatable");
  app.add_flag("--fault-once", o.faultOnce,
               "Faults fire only on a job's first attempt (ddprun --max-restarts sets DDPRUN_ATTEMPT)");
  const bool first = ddp::comm::isFirstRankProcess();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (first) ddp::log::error("train", fmt::format("{} (see --help)", e.what()));
    return 2;
  }
  o.overlap = !noOverlap;
  if (o.steps == 0 && o.epochs == 0) o.steps = 100;
  if (o.resume && o.checkpointDir.empty()) {
    if (first) ddp::log::error("train", "--resume needs --checkpoint DIR");
    return 2;
  }
  try {
    return runTraining(o);
  } catch (const std::exception& e) {
    const int code = ddp::exitCodeFor(e);
    if (!ddp::comm::MpiSession::active() || first || code != 2) ddp::log::error("train", e.what());
    ddp::comm::MpiSession::abortJob(code);
    return code;
  }
}
