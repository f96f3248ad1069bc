// ddprof: reads what a run left behind and says why it scaled the way it did (docs/profiler.md).
// Examples: ddprof report ddprun-runs/2026-11-29-train
//           ddprof nccl run/nccl/*.log --json
//           ddprof scaling runs/np1 runs/np2 runs/np4
//           ddprof compare runs/nvlink runs/eri --price-a 30 --price-b 12 --dataset-size 1281167
#include "ddp/common/error.hpp"
#include "ddp/common/log.hpp"
#include "ddp/profiler/cli.hpp"

#include <iostream>

int main(int argc, char** argv) {
  try {
    return ddp::profiler::ddprofMain({argv + 1, argv + argc}, std::cout);
  } catch (const std::exception& e) {
    ddp::log::get("ddprof")->error("{}", e.what());
    return ddp::exitCodeFor(e);
  }
}
