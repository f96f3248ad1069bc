#pragma once
// The per-rank worker (`ddprun worker -- PROGRAM ARGS`), started by mpirun once per rank. It
// never calls MPI_Init. It maps the Open MPI / Slurm rank variables to the rank contract, meets
// ddprun over its control connection (DDPRUN_CONTROL, control.hpp) for the node ranks, starts
// PROGRAM in a process group of its own, writes its stdout/stderr to the rank log and to the
// console tagged [host:rank], forwards signals to that group, stops it on request (SIGTERM,
// then SIGKILL after the grace period) and records how it ended in its exit record and to
// ddprun. Without DDPRUN_CONTROL (started by hand under mpirun or srun) it runs alone and exits
// with the program's status.

#include "ddp/common/exit_status.hpp"
#include "ddp/launcher/process.hpp"

#include <optional>
#include <string>
#include <vector>

namespace ddp::launcher {

// Returns the worker's exit code: 0 once ddprun has the record, else the program's shell code.
int runWorker(const std::vector<std::string>& program);

// GPUs this host has (/dev/nvidiaN device nodes); 0 without a driver.
int countGpus();

// The program's final status once the worker stops watching it: whatever is left in its process
// group is killed, and when the watch ended before the program did (status is empty: a poll
// error), the program is killed and reaped, so that its status is known.
ExitStatus settleProgram(Process& child, const std::optional<ExitStatus>& status);

}  // namespace ddp::launcher
