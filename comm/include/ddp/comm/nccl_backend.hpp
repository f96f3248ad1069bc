#pragma once
// Backend "nccl": NCCL collectives on CUDA device buffers (docs/comm.md). Compiled only when
// CUDA and NCCL are found (DDP_HAVE_NCCL).

#include "ddp/comm/backend.hpp"

#include <memory>

namespace ddp::comm {

// Checks for a usable GPU first (cudaGetDeviceCount) and throws CommError with one clear line
// when there is none. The ncclUniqueId travels over MPI_Bcast; the device is the local rank
// modulo the visible devices unless options.device says otherwise; one CUDA stream per
// communicator.
std::unique_ptr<Backend> makeNcclBackend(const WorldInfo& world, const BackendOptions& options);

}  // namespace ddp::comm
