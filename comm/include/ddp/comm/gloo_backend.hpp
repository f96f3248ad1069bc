#pragma once
// Backend "gloo": c10d's ProcessGroupGloo from LibTorch (docs/comm.md). Only this target and
// the DDP module link LibTorch.

#include "ddp/comm/backend.hpp"

#include <memory>

namespace ddp::comm {

// Rendezvous: under mpirun/ddprun, rank 0 serves a TCPStore on a free port and sends its
// address over MPI; otherwise MASTER_ADDR/MASTER_PORT name it. Throws ConfigError when there is
// neither, or when the interface is unusable.
std::unique_ptr<Backend> makeGlooBackend(const WorldInfo& world, const BackendOptions& options);

}  // namespace ddp::comm
