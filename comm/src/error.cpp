#include "ddp/comm/error.hpp"

#include <mpi.h>

#include <fmt/format.h>

#include <cstring>

namespace ddp {

int exitCodeFor(const std::exception& e) noexcept {
  return dynamic_cast<const ConfigError*>(&e) != nullptr ? 2 : 1;
}

namespace detail {

void throwMpiError(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    std::strncpy(text, "unknown MPI error", sizeof(text) - 1);
  }
  const char* base = std::strrchr(file, '/');
  throw CommError(fmt::format("{}:{}: {} failed: {}", base != nullptr ? base + 1 : file, line,
                              call, text));
}

}  // namespace detail
}  // namespace ddp
