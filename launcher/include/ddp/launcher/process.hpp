#pragma once
// ProcessRunner: the only code in ddprun that starts processes. Argument vectors, never a
// shell; the executable is resolved on PATH first, so a missing or non-executable program is a
// ConfigError before anything starts, and a failed exec is reported with its errno.

#include "ddp/common/environment.hpp"
#include "ddp/common/exit_status.hpp"

#include <sys/resource.h>
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddp::launcher {

struct SpawnOptions {
  std::vector<std::string> argv;
  std::map<std::string, std::string> setEnv;       // on top of this process's environment
  std::vector<std::string> unsetEnv;               // removed from it
  bool newProcessGroup = false;                    // the child leads its own process group
  bool killWithParent = false;                     // PR_SET_PDEATHSIG(SIGKILL) in the child
  int stdinFd = -1, stdoutFd = -1, stderrFd = -1;  // dup2'd onto 0/1/2 when >= 0
};

class Process {
 public:
  Process() = default;
  // Starts argv[0] (resolved on PATH when it has no '/'). ConfigError when it cannot be found
  // or executed (the exec's errno, reported back through a close-on-exec pipe).
  static Process spawn(const SpawnOptions& options);

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !status_; }
  // Reaps the process if it has ended; never blocks.
  std::optional<ExitStatus> poll();
  ExitStatus wait();
  // Signals the process, or its whole group when it leads one; ESRCH is ignored.
  void signal(int sig) const;
  void signalGroup(int sig) const;

 private:
  std::optional<ExitStatus> reap(int flags);
  pid_t pid_ = -1;
  std::optional<ExitStatus> status_;
};

// The ExitStatus of a wait status and its rusage.
ExitStatus exitStatusOf(int waitStatus, const struct rusage& usage);

// The path of an executable: `name` itself when it contains '/', else the first match on PATH.
// ConfigError "program 'x': not found on PATH" / "...: not executable" otherwise.
std::string resolveExecutable(const std::string& name, const Environment& environment);

struct Captured {
  ExitStatus status;
  std::string output;  // stdout and stderr together, as written
  bool timedOut = false;
};
// Runs argv to completion (killed after timeoutS), capturing its output; stdin is /dev/null.
Captured runCapture(const std::vector<std::string>& argv, double timeoutS,
                    const std::map<std::string, std::string>& setEnv = {});

}  // namespace ddp::launcher
