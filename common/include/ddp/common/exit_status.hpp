#pragma once
// How a process ended: its exit code or the signal that killed it, and its peak memory.

#include <optional>
#include <string>

namespace ddp {

struct ExitStatus {
  std::optional<int> code;    // exited normally
  std::optional<int> signal;  // killed by this signal
  long maxRssKb = 0;          // peak resident memory of the process (wait4)
  bool failed() const { return signal.has_value() || (code && *code != 0); }
  // What a shell would report: the code, or 128 + signal.
  int shellCode() const { return signal ? 128 + *signal : code.value_or(1); }
  // "exit code 7", "killed by SIGSEGV".
  std::string describe() const;
};

// "SIGKILL" for 9; "signal 77" for an unnamed one.
std::string signalName(int signal);

}  // namespace ddp
