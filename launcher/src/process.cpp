#include "ddp/launcher/process.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

extern char** environ;

namespace ddp::launcher {
namespace {

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string errnoText(int err) { return std::strerror(err); }

// What the child of spawn() needs, all built before it starts.
struct ChildStart {
  const SpawnOptions* options;
  const char* path;
  char* const* argv;
  char* const* envp;
  int reportFd;  // the exec's errno goes here; close-on-exec, so an exec that works closes it
  pid_t parent;
};

// The child, until its exec. It shares the parent's memory (CLONE_VM) while the parent waits
// (CLONE_VFORK), so it makes system calls only, on a stack of its own: no allocation, no lock, no
// handler of the parent's (every signal is blocked until the handlers are reset).
__attribute__((no_sanitize("address", "undefined"))) int startChild(void* arg) {
  const auto& c = *static_cast<const ChildStart*>(arg);
  const SpawnOptions& o = *c.options;
  if (o.newProcessGroup) ::setpgid(0, 0);
  if (o.killWithParent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != c.parent) ::_exit(127);
  }
  if (o.stdinFd >= 0) ::dup2(o.stdinFd, 0);
  if (o.stdoutFd >= 0) ::dup2(o.stdoutFd, 1);
  if (o.stderrFd >= 0) ::dup2(o.stderrFd, 2);
  // Handled signals go back to their defaults (the parent's handlers are not the program's), as
  // do those this process ignores for itself; others that are ignored stay so, as exec keeps them.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction now {};
    if (sig == SIGKILL || sig == SIGSTOP || ::sigaction(sig, nullptr, &now) != 0) continue;
    const bool ownIgnore = sig == SIGPIPE || sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGUSR1 ||
                           sig == SIGUSR2 || sig == SIGCHLD;
    if (now.sa_handler != SIG_DFL && (now.sa_handler != SIG_IGN || ownIgnore)) ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(c.path, c.argv, c.envp);
  int err = errno;
  [[maybe_unused]] auto n = ::write(c.reportFd, &err, sizeof err);
  ::_exit(127);
}

// clone(CLONE_VM | CLONE_VFORK): the child does not copy the parent's page tables, which fork
// does and which on a virtual machine is much of a process start (docs/launcher.md, "Starting a
// process").
pid_t startProcess(ChildStart& start) {
  constexpr size_t kStackBytes = 64 * 1024;
  std::vector<char> stack(kStackBytes);
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  void* top = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(stack.data() + kStackBytes) & ~uintptr_t{15});
  const pid_t pid = ::clone(startChild, top, CLONE_VM | CLONE_VFORK | SIGCHLD, &start);
  const int err = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return pid;
}

}  // namespace

ExitStatus exitStatusOf(int waitStatus, const struct rusage& usage) {
  ExitStatus s;
  if (WIFEXITED(waitStatus)) s.code = WEXITSTATUS(waitStatus);
  if (WIFSIGNALED(waitStatus)) s.signal = WTERMSIG(waitStatus);
  s.maxRssKb = usage.ru_maxrss;
  return s;
}

std::string resolveExecutable(const std::string& name, const Environment& environment) {
  if (name.empty()) throw ConfigError("program '': an empty program name");
  auto check = [](const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return ENOENT;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    return ::access(path.c_str(), X_OK) == 0 ? 0 : EACCES;
  };
  if (name.find('/') != std::string::npos) {
    int err = check(name);
    if (err == ENOENT) throw ConfigError(fmt::format("program '{}': no such file", name));
    if (err == EISDIR) throw ConfigError(fmt::format("program '{}': is a directory", name));
    if (err) throw ConfigError(fmt::format("program '{}': not executable (chmod +x?)", name));
    return name;
  }
  std::string path = environment.get(ddp::env::kPath).value_or("/usr/local/bin:/usr/bin:/bin");
  bool sawNonExecutable = false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    int err = check(candidate);
    if (err == 0) return candidate;
    sawNonExecutable = sawNonExecutable || err == EACCES;
    start = end + 1;
  }
  throw ConfigError(fmt::format("program '{}': {} on PATH", name, sawNonExecutable ? "not executable" : "not found"));
}

Process Process::spawn(const SpawnOptions& o) {
  if (o.argv.empty()) throw ConfigError("nothing to start: an empty command");
  auto current = Environment::fromProcess().all();
  for (const auto& [k, v] : o.setEnv) current[k] = v;
  for (const auto& k : o.unsetEnv) current.erase(k);
  const std::string path = resolveExecutable(o.argv.front(), Environment(current));

  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<std::string> envStrings;
  for (const auto& [k, v] : current) envStrings.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : envStrings) envp.push_back(e.data());
  envp.push_back(nullptr);

  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) throw Error("pipe2: " + errnoText(errno));
  ChildStart start{&o, path.c_str(), argv.data(), envp.data(), report[1], ::getpid()};
  const pid_t pid = startProcess(start);
  if (pid < 0) {
    int err = errno;
    ::close(report[0]);
    ::close(report[1]);
    throw Error(fmt::format("starting '{}': {}", path, errnoText(err)));
  }
  ::close(report[1]);
  if (o.newProcessGroup) ::setpgid(pid, pid);  // also here, so no signal can race the child's call
  int err = 0;
  ssize_t n;
  do n = ::read(report[0], &err, sizeof err);
  while (n < 0 && errno == EINTR);
  ::close(report[0]);
  Process p;
  p.pid_ = pid;
  if (n == static_cast<ssize_t>(sizeof err)) {
    p.wait();
    throw ConfigError(fmt::format("program '{}': cannot execute: {}", path, errnoText(err)));
  }
  return p;
}

std::optional<ExitStatus> Process::reap(int flags) {
  if (status_ || pid_ <= 0) return status_;
  int ws = 0;
  struct rusage usage {};
  pid_t r;
  do r = ::wait4(pid_, &ws, flags, &usage);
  while (r < 0 && errno == EINTR);
  if (r == pid_) status_ = exitStatusOf(ws, usage);
  return status_;
}

std::optional<ExitStatus> Process::poll() { return reap(WNOHANG); }

ExitStatus Process::wait() {
  auto s = reap(0);
  return s ? *s : ExitStatus{};
}

void Process::signal(int sig) const {
  if (pid_ > 0 && !status_) ::kill(pid_, sig);
}

void Process::signalGroup(int sig) const {
  if (pid_ > 0) ::kill(-pid_, sig);
}

Captured runCapture(const std::vector<std::string>& argv, double timeoutS,
                    const std::map<std::string, std::string>& setEnv) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw Error("pipe2: " + errnoText(errno));
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  SpawnOptions o;
  o.argv = argv;
  o.setEnv = setEnv;
  o.newProcessGroup = true;
  o.killWithParent = true;
  o.stdinFd = devnull;
  o.stdoutFd = out[1];
  o.stderrFd = out[1];
  Process p;
  try {
    p = Process::spawn(o);
  } catch (...) {
    ::close(out[0]);
    ::close(out[1]);
    closeFd(devnull);
    throw;
  }
  ::close(out[1]);
  closeFd(devnull);
  Captured c;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutS);
  char buf[4096];
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      c.timedOut = true;
      p.signalGroup(SIGKILL);
      break;
    }
    struct pollfd pfd {
      out[0], POLLIN, 0
    };
    int r = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 100)));
    if (r < 0 && errno == EINTR) continue;
    if (r > 0) {
      ssize_t n = ::read(out[0], buf, sizeof buf);
      if (n > 0)
        c.output.append(buf, static_cast<size_t>(n));
      else if (n == 0)
        break;
    }
  }
  ::close(out[0]);
  c.status = p.wait();
  p.signalGroup(SIGKILL);  // nothing the command started outlives it
  return c;
}

}  // namespace ddp::launcher
