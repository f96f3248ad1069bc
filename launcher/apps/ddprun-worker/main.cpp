// ddprun-worker: the per-rank worker that mpirun (or srun) starts once per rank, the same code as
// `ddprun worker` in a binary linked static, which loads no shared library, so that each rank
// starts sooner; a rank that needs one (NVML, the name service) it hands to `ddprun worker`
// (docs/launcher.md, "The binaries"). Not for use by hand.
// Usage: ddprun-worker [--] PROGRAM [ARGS...]
#include "ddp/common/error.hpp"
#include "ddp/common/log.hpp"
#include "ddp/launcher/worker.hpp"

#include <string>
#include <vector>

int main(int argc, char** argv) {
  try {
    std::vector<std::string> program(argv + 1, argv + argc);
    if (!program.empty() && program.front() == "--") program.erase(program.begin());
    return ddp::launcher::runWorker(program, {});
  } catch (const std::exception& e) {
    ddp::log::get("ddprun")->error("{}", e.what());
    return ddp::exitCodeFor(e);
  }
}
