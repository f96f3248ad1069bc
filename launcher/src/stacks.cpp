#include "stacks.hpp"

#include "ddp/launcher/process.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

namespace ddp::launcher {
namespace {

std::string slurp(const std::string& path) {
  std::string text;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "(unreadable)";
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return text;
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

}  // namespace

std::string captureStacks(pid_t pid) {
  std::string out;
  try {
    auto gdb = runCapture(
        {"gdb", "-p", std::to_string(pid), "-batch", "-nx", "-ex", "set pagination off", "-ex", "thread apply all bt"},
        15);
    if (!gdb.timedOut && gdb.output.find("Thread ") != std::string::npos)
      return "gdb thread apply all bt:\n" + gdb.output;
    out = "gdb could not attach:\n" + gdb.output + "\n";
  } catch (const std::exception& e) {
    out = std::string("no gdb (") + e.what() + ")\n";
  }
  return out + procStacks(pid);
}

}  // namespace ddp::launcher
