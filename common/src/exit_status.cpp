#include "ddp/common/exit_status.hpp"

#include <fmt/format.h>

#include <cstring>

namespace ddp {

std::string signalName(int signal) {
  if (const char* abbrev = sigabbrev_np(signal)) return std::string("SIG") + abbrev;
  return fmt::format("signal {}", signal);
}

std::string ExitStatus::describe() const {
  if (signal) return "killed by " + signalName(*signal);
  return fmt::format("exit code {}", code.value_or(-1));
}

}  // namespace ddp
