// Hostfiles and -H lists on arbitrary text: either parsed, with every host named and every slot
// count positive, or a ConfigError. Anything else is a bug. (Slurm's lists: fuzz_slurm.)
#include "ddp/common/error.hpp"
#include "ddp/launcher/hosts.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

void check(const std::vector<ddp::launcher::HostSlots>& hosts) {
  for (const auto& h : hosts)
    if (h.host.empty() || h.slots < 1) std::abort();
}

template <typename F>
void tryParse(F&& parse) {
  try {
    parse();
  } catch (const ddp::ConfigError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tryParse([&] { check(ddp::launcher::parseHostfile(text, "fuzz")); });
  tryParse([&] { check(ddp::launcher::parseHostList(text)); });
  return 0;
}
