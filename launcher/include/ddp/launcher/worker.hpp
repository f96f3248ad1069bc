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

#include <netinet/in.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ddp::launcher {

namespace probe {
struct GpuSample;
}

// What a worker can do only in a binary with the dynamic loader. ddprun's own (`ddprun worker`)
// gives both; ddprun-worker is linked static, so that each rank starts sooner, and gives neither
// (docs/launcher.md, "The binaries").
struct WorkerLibraries {
  // NVML's reader of a GPU (probe::openGpu: dlopen of libnvidia-ml).
  std::function<std::optional<probe::GpuSample>()> (*openGpu)(unsigned device) = nullptr;
  // A host name's address through the system's name service (io::resolveIpv4: getaddrinfo).
  bool (*resolve)(const std::string& host, in_addr& address, std::string& why) = nullptr;
};

// Returns the worker's exit code: 0 once ddprun has the record, else the program's shell code.
// A worker without a library it needs (the control address DDPRUN_CONTROL is a host name, or it
// is to sample a GPU) becomes `ddprun worker` beside its binary (exec, the same arguments); when
// that cannot be started, it goes on without: it cannot reach ddprun, or samples no GPU.
int runWorker(const std::vector<std::string>& program, const WorkerLibraries& libraries);

// What the worker needs that `libraries` lacks ("" when nothing): control is DDPRUN_CONTROL
// (host:port), samplesGpu whether it is to sample a GPU.
std::string missingLibrary(const std::optional<std::string>& control, bool samplesGpu,
                           const WorkerLibraries& libraries);
// Runs this rank as `ddprun worker`, the binary beside this one, which has the dynamic loader
// (exec: the same process, arguments and environment); returns only when that cannot be started.
void handOver(const std::vector<std::string>& program, const std::string& missing);

// GPUs this host has (/dev/nvidiaN device nodes); 0 without a driver.
int countGpus();

// The program's final status once the worker stops watching it: whatever is left in its process
// group is killed, and when the watch ended before the program did (status is empty: a poll
// error), the program is killed and reaped, so that its status is known.
ExitStatus settleProgram(Process& child, const std::optional<ExitStatus>& status);

}  // namespace ddp::launcher
