// Slurm's compressed node lists and tasks-per-node lists on arbitrary text: either expanded (no
// empty name, no count below 1, never more than the node cap) or a ConfigError. A target of its
// own: expansions of up to 100000 names make its runs slower than the hostfile parser's.
#include "ddp/comm/error.hpp"
#include "ddp/launcher/hosts.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto names = ddp::launcher::expandSlurmNodelist(text);
    if (names.size() > 100000) std::abort();
    for (const auto& name : names)
      if (name.empty()) std::abort();
  } catch (const ddp::ConfigError&) {
  }
  try {
    const auto tasks = ddp::launcher::expandSlurmTasksPerNode(text);
    if (tasks.size() > 100000) std::abort();
    for (int n : tasks)
      if (n < 1) std::abort();
  } catch (const ddp::ConfigError&) {
  }
  return 0;
}
