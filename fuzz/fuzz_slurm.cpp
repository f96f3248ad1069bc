// Slurm's compressed node lists and tasks-per-node lists on arbitrary text: either expanded (no
// empty name, no count below 1, never more than the node cap) or a ConfigError. The cap is 1000
// here, not 100000: the fuzzer explores the grammar, and lists of 100000 names would only make
// each run slower (the cap itself is a unit test, tests/launcher/test_hosts.cpp).
#include "ddp/common/error.hpp"
#include "ddp/launcher/hosts.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

constexpr size_t kCap = 1000;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto names = ddp::launcher::expandSlurmNodelist(text, kCap);
    if (names.size() > kCap) std::abort();
    for (const auto& name : names)
      if (name.empty()) std::abort();
  } catch (const ddp::ConfigError&) {
  }
  try {
    const auto tasks = ddp::launcher::expandSlurmTasksPerNode(text, kCap);
    if (tasks.size() > kCap) std::abort();
    for (int n : tasks)
      if (n < 1) std::abort();
  } catch (const ddp::ConfigError&) {
  }
  return 0;
}
