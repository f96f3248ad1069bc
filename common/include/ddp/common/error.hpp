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

}  // namespace ddp
