#pragma once
// Stacks of a hung rank's program for ddprun's hang report (docs/launcher.md, "--timeout").

#include <sys/types.h>

#include <string>

namespace ddp::launcher {

// A Python program's Python stacks first (py-spy dump, 5 s at most), then the native ones:
// gdb's "thread apply all bt" when gdb is installed and may attach (15 s at most), else what
// /proc says of each thread (kernel stack where readable, wait channel, state).
std::string captureStacks(pid_t pid);

}  // namespace ddp::launcher
