// ddprun: start a data-parallel job on many ranks through mpirun, with a rank environment that
// torchrun-style programs understand, per-rank logs, failure reports that name the culprit,
// and a profile at the end (docs/launcher.md).
// Examples: ddprun -np 4 train --model resnet18 --steps 100
//           ddprun --profile -H node1:8,node2:8 ./train
//           ddprun doctor
#include "ddp/common/error.hpp"
#include "ddp/common/log.hpp"
#include "ddp/launcher/cli.hpp"

#include <iostream>

int main(int argc, char** argv) {
  try {
    return ddp::launcher::ddprunMain({argv + 1, argv + argc}, std::cout, std::cerr);
  } catch (const std::exception& e) {
    ddp::log::get("ddprun")->error("{}", e.what());
    return ddp::exitCodeFor(e);
  }
}
