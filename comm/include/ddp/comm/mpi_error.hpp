#pragma once
// DDP_CHECK_MPI: the check macro of the MPI C API (docs/errors.md).

#include "ddp/common/error.hpp"

namespace ddp::detail {
[[noreturn]] void throwMpiError(int code, const char* call, const char* file, int line);
}  // namespace ddp::detail

// Checks the return code of an MPI call and throws ddp::CommError with file:line and
// MPI's own error string.
#define DDP_CHECK_MPI(call)                                                 \
  do {                                                                      \
    const int ddp_mpi_rc_ = (call);                                         \
    if (ddp_mpi_rc_ != 0) {                                                 \
      ::ddp::detail::throwMpiError(ddp_mpi_rc_, #call, __FILE__, __LINE__); \
    }                                                                       \
  } while (0)
