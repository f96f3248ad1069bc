#pragma once
// Error hierarchy of ddprun (docs/errors.md). Libraries throw; only main() turns an exception
// into a one-line message and an exit code (ConfigError → 2, everything else → 1).

#include <stdexcept>
#include <string>

namespace ddp {

// Base of every error ddprun throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The user got something wrong: a flag, an environment variable, an input file.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A communication library or device failed (MPI, Gloo, NCCL, CUDA).
class CommError : public Error {
 public:
  using Error::Error;
};

// An operation did not finish within its timeout.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// Exit code for an exception caught in main(): 2 for bad input, 1 otherwise.
int exitCodeFor(const std::exception& e) noexcept;

namespace detail {
[[noreturn]] void throwMpiError(int code, const char* call, const char* file, int line);
}  // namespace detail

}  // namespace ddp

// Checks the return code of an MPI call and throws ddp::CommError with file:line and
// MPI's own error string.
#define DDP_CHECK_MPI(call)                                              \
  do {                                                                   \
    const int ddp_mpi_rc_ = (call);                                      \
    if (ddp_mpi_rc_ != 0) {                                              \
      ::ddp::detail::throwMpiError(ddp_mpi_rc_, #call, __FILE__, __LINE__); \
    }                                                                    \
  } while (0)
