#include "stacks.hpp"

#include "ddp/launcher/process.hpp"
#include "procfs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include <dirent.h>
#include <unistd.h>

namespace ddp::launcher {
namespace {

std::string slurp(const std::string& path) {
  return procfs::readSmallFile(path, std::string::npos).value_or("(unreadable)");
}

std::string procStacks(pid_t pid) {
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  std::string out = task + "/*:\n";
  if (DIR* d = ::opendir(task.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const std::string t = task + "/" + e->d_name;
      out += fmt::format("thread {}: {} wchan {}\n{}\n", e->d_name, slurp(t + "/comm").substr(0, 40),
                         slurp(t + "/wchan"), slurp(t + "/stack"));
    }
    ::closedir(d);
  }
  return out;
}

bool isPython(pid_t pid) {
  char exe[4096];
  const ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof exe - 1);
  if (n <= 0) return false;
  const std::string path(exe, static_cast<size_t>(n));
  const std::string name = path.substr(path.rfind('/') + 1);
  return name.rfind("python", 0) == 0 ||
         slurp("/proc/" + std::to_string(pid) + "/maps").find("libpython") != std::string::npos;
}

// py-spy: DDPRUN_PY_SPY, else the first on PATH, else the one of the torch-2 environment of the
// source tree ddprun was built from.
std::string pySpy() {
  if (const char* set = std::getenv("DDPRUN_PY_SPY"); set && *set) return set;
  if (const char* path = std::getenv("PATH")) {
    std::string dirs = path;
    for (size_t start = 0; start <= dirs.size();) {
      const size_t end = std::min(dirs.find(':', start), dirs.size());
      const std::string candidate = dirs.substr(start, end - start) + "/py-spy";
      if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
      start = end + 1;
    }
  }
#ifdef DDP_SOURCE_PY_SPY
  if (::access(DDP_SOURCE_PY_SPY, X_OK) == 0) return DDP_SOURCE_PY_SPY;
#endif
  return "";
}

// A Python process's stacks, as the interpreter sees them (py-spy dump), or why there are none.
std::string pythonStacks(pid_t pid) {
  const std::string spy = pySpy();
  if (spy.empty())
    return "no Python stacks: py-spy is not installed (pip install py-spy, or scripts/install-deps.sh)\n\n";
  try {
    auto dump = runCapture({spy, "dump", "--pid", std::to_string(pid)}, 5);
    if (!dump.timedOut && dump.status.code == 0) return "py-spy dump (Python stacks):\n" + dump.output + "\n";
    return "py-spy could not read the Python stacks" + std::string(dump.timedOut ? " (timed out)" : "") + ":\n" +
           dump.output + "\n";
  } catch (const std::exception& e) {
    return std::string("no Python stacks: ") + e.what() + "\n\n";
  }
}

}  // namespace

std::string captureStacks(pid_t pid) {
  std::string out = isPython(pid) ? pythonStacks(pid) : "";
  try {
    auto gdb = runCapture(
        {"gdb", "-p", std::to_string(pid), "-batch", "-nx", "-ex", "set pagination off", "-ex", "thread apply all bt"},
        15);
    if (!gdb.timedOut && gdb.output.find("Thread ") != std::string::npos)
      return out + "gdb thread apply all bt:\n" + gdb.output;
    out += "gdb could not attach:\n" + gdb.output + "\n";
  } catch (const std::exception& e) {
    out += std::string("no gdb (") + e.what() + ")\n";
  }
  return out + procStacks(pid);
}

}  // namespace ddp::launcher
