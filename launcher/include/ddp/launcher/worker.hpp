#pragma once
// The per-rank worker (`ddprun --worker -- PROGRAM ARGS`), started by mpirun once per rank. It
// never calls MPI_Init. It maps the Open MPI / Slurm rank variables to the rank contract, meets
// ddprun over its control connection (DDPRUN_CONTROL) for the node ranks, starts PROGRAM in a
// process group of its own, writes its stdout/stderr to ranks/rank-NNNNN.log and to the console
// tagged [host:rank], forwards signals to that group, stops it on request (SIGTERM, then
// SIGKILL after the grace period) and records how it ended in ranks/rank-NNNNN.exit.json and to
// ddprun. Without DDPRUN_CONTROL (started by hand under mpirun or srun) it runs alone and exits
// with the program's status.

#include <string>
#include <vector>

namespace ddp::launcher {

// Returns the worker's exit code: 0 once ddprun has the record, else the program's shell code.
int runWorker(const std::vector<std::string>& program);

// GPUs this host has (/dev/nvidiaN device nodes); 0 without a driver.
int countGpus();

}  // namespace ddp::launcher
