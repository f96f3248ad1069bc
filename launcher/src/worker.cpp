#include "ddp/launcher/worker.hpp"

#include "ddp/comm/error.hpp"
#include "ddp/comm/files.hpp"
#include "ddp/comm/json_text.hpp"
#include "ddp/comm/timings.hpp"
#include "ddp/launcher/process.hpp"
#include "ddp/launcher/rank.hpp"
#include "io.hpp"
#include "sampler.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <memory>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ddp::launcher {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kRendezvousTimeoutS = 600;  // ddprun's own limit is shorter; this one only guards an orphan
constexpr auto kDrainAfterExit = std::chrono::milliseconds(300);

// Where the program's two streams go: whole lines to the rank log and (tagged) to the console.
class Relay {
 public:
  Relay(int logFd, std::string tag, bool console) : logFd_(logFd), tag_(std::move(tag)), console_(console) {}

  void add(int stream, const char* data, size_t size) {
    auto& b = buffers_[static_cast<size_t>(stream)];
    b.append(data, size);
    while (auto line = b.next()) emit(stream, *line);
    if (b.pendingSize() > 65536) emit(stream, b.rest());  // a very long line goes out in pieces
  }

  void flush(int stream) {
    auto rest = buffers_[static_cast<size_t>(stream)].rest();
    if (!rest.empty()) emit(stream, rest);
  }

  // ddprun's own lines about this rank (not the program's).
  void note(const std::string& text) { emit(1, "ddprun: " + text); }

 private:
  void emit(int stream, const std::string& line) {
    if (logFd_ >= 0) io::writeAll(logFd_, line + "\n");
    if (console_) io::writeAll(stream == 1 ? STDOUT_FILENO : STDERR_FILENO, tag_ + line + "\n");
  }
  int logFd_;
  std::string tag_;
  bool console_;
  std::array<io::LineBuffer, 3> buffers_;
};

struct Control {
  int fd = -1;
  io::LineBuffer in;

  void send(const std::string& line) {
    if (fd >= 0 && !io::writeAll(fd, line + "\n")) close();
  }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  // Reads what is there; false on EOF or error (ddprun is gone).
  bool read() {
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) return true;
    if (n <= 0) return false;
    in.append(buf, static_cast<size_t>(n));
    return true;
  }
};

// The heartbeat: what the program's step timer says it is doing. timings/rank-NNNNN.progress
// ("STEP PHASE", rewritten at each phase) when the program has one; else the step of the last
// line of timings/rank-NNNNN.jsonl (a program that writes only the timings contract).
class Heartbeat {
 public:
  explicit Heartbeat(const std::string& timingsPath)
      : jsonl_(timingsPath), progress_(timingsPath.empty() ? "" : comm::progressPath(timingsPath)) {}
  // "STEP PHASE" when it changed since the last call.
  std::optional<std::string> poll() {
    if (jsonl_.empty()) return std::nullopt;
    std::string now = read(progress_, 64, false);
    if (now.empty()) now = read(jsonl_, 8192, true);
    if (now.empty() || now == last_) return std::nullopt;
    last_ = now;
    return now;
  }

 private:
  static std::string read(const std::string& path, size_t bytes, bool jsonl) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    struct stat st {};
    ::fstat(fd, &st);
    std::string buf(bytes, '\0');
    const off_t from = jsonl ? std::max<off_t>(0, st.st_size - static_cast<off_t>(bytes)) : 0;
    ssize_t n = ::pread(fd, buf.data(), bytes, from);
    ::close(fd);
    if (n <= 0) return "";
    buf.resize(static_cast<size_t>(n));
    if (!jsonl) {
      auto end = buf.find_last_not_of(" \n");
      return end == std::string::npos ? "" : buf.substr(0, end + 1);
    }
    auto end = buf.rfind('\n');
    if (end == std::string::npos) return "";
    auto begin = end == 0 ? std::string::npos : buf.rfind('\n', end - 1);
    const size_t first = begin == std::string::npos ? 0 : begin + 1;
    try {
      return std::to_string(comm::parseStepRecord(std::string_view(buf).substr(first, end - first)).step) + " done";
    } catch (const std::exception&) {  // a line cut by the tail window, or not a step record
      return "";
    }
  }
  std::string jsonl_, progress_, last_;
};

// Stacks of a process's threads, for a hang report: gdb when it is installed and may attach,
// else what /proc says of each thread (kernel stack where readable, wait channel, state).
std::string captureStacks(pid_t pid) {
  std::string out;
  try {
    auto gdb = runCapture({"gdb", "-p", std::to_string(pid), "-batch", "-nx", "-ex", "set pagination off",
                           "-ex", "thread apply all bt"}, 15);
    if (!gdb.timedOut && gdb.output.find("Thread ") != std::string::npos) return "gdb thread apply all bt:\n" + gdb.output;
    out = "gdb could not attach:\n" + gdb.output + "\n";
  } catch (const std::exception& e) {
    out = std::string("no gdb (") + e.what() + ")\n";
  }
  out += "/proc/" + std::to_string(pid) + "/task/*:\n";
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = ::opendir(task.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      auto slurp = [](const std::string& path) {
        std::string text;
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return std::string("(unreadable)");
        char buf[4096];
        ssize_t n;
        while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
        ::close(fd);
        return text;
      };
      const std::string t = task + "/" + e->d_name;
      out += fmt::format("thread {}: {} wchan {}\n{}\n", e->d_name, slurp(t + "/comm").substr(0, 40), slurp(t + "/wchan"),
                         slurp(t + "/stack"));
    }
    ::closedir(d);
  }
  return out;
}

void writeRecord(const std::string& runDir, const RankRecord& record) {
  if (runDir.empty()) return;
  try {
    writeFileAtomically(rankFile(runDir, record.rank, ".exit.json"), jsonText(toJson(record), 2) + "\n");
  } catch (const std::exception& e) {
    io::writeAll(STDERR_FILENO, fmt::format("ddprun worker (rank {}): {}\n", record.rank, e.what()));
  }
}

}  // namespace

int countGpus() {
  int count = 0;
  if (DIR* d = ::opendir("/dev")) {
    while (dirent* e = ::readdir(d)) {
      std::string_view name(e->d_name);
      if (name.size() > 6 && name.substr(0, 6) == "nvidia" &&
          name.substr(6).find_first_not_of("0123456789") == std::string_view::npos)
        ++count;
    }
    ::closedir(d);
  }
  return count;
}

int runWorker(const std::vector<std::string>& program) {
  if (program.empty()) throw ConfigError("ddprun --worker: no program (ddprun --worker -- PROGRAM [ARGS...])");
  const auto environment = Environment::fromProcess();
  const auto id = rankIdentityFrom(environment);
  if (!id)
    throw ConfigError("ddprun --worker: no rank in the environment (OMPI_COMM_WORLD_RANK, SLURM_PROCID or RANK): "
                      "it is started by ddprun through mpirun");
  const std::string runDir = environment.get(ddp::env::kRunDir).value_or("");
  const auto output = parseOutputMode(environment.get(env::kOutput).value_or("tag"), std::string(env::kOutput));
  const auto grace = std::chrono::seconds(environment.getInt(env::kGraceSeconds, 0, 3600).value_or(5));
  const bool gpuBinding = environment.get(env::kGpuBinding).value_or("local-rank") != "none";
  const std::string host = io::hostname();

  io::SignalPipe signals({SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD});
  ::signal(SIGPIPE, SIG_IGN);

  RankRecord record;
  record.rank = id->rank;
  record.host = host;
  record.workerPid = ::getpid();
  record.startUnixUs = comm::unixMicros();

  // Meet ddprun: it answers once every rank has said hello, with this rank's node index.
  Control control;
  int nodeRank = id->nodeRank.value_or(0), nodes = 1;
  if (auto address = environment.get(env::kControl)) {
    auto colon = address->rfind(':');
    std::string why = "malformed " + std::string(env::kControl) + " '" + *address + "'";
    if (colon != std::string::npos)
      control.fd = io::connectTcp(address->substr(0, colon), std::atoi(address->c_str() + colon + 1), 30, why);
    if (control.fd < 0) throw Error(fmt::format("rank {} on {}: cannot reach ddprun: {}", id->rank, host, why));
    control.send(formatHello({environment.get(env::kControlToken).value_or("-"), id->rank, ::getpid(), host}));
    const auto deadline = Clock::now() + std::chrono::duration<double>(kRendezvousTimeoutS);
    bool started = false;
    while (!started) {
      if (Clock::now() > deadline || control.fd < 0) break;
      pollfd fds[2] = {{control.fd, POLLIN, 0}, {signals.fd(), POLLIN, 0}};
      if (::poll(fds, 2, 200) < 0 && errno != EINTR) break;
      if (fds[1].revents) {
        auto got = signals.drain();
        bool stop = false;
        for (int s : got) stop = stop || (s != SIGCHLD && s != SIGUSR1 && s != SIGUSR2);
        if (stop) break;
      }
      if (fds[0].revents && !control.read()) control.close();
      while (auto line = control.in.next()) {
        if (std::sscanf(line->c_str(), "start %d %d", &nodeRank, &nodes) == 2) started = true;
        else if (*line == "terminate") break;
      }
    }
    if (!started) {  // torn down before the program began
      record.stopRequested = true;
      record.endUnixUs = comm::unixMicros();
      writeRecord(runDir, record);
      control.send("exit " + jsonText(toJson(record)));
      return 0;
    }
  }

  int logFd = -1;
  if (!runDir.empty()) {
    io::makeDirectories(runDir + "/ranks", "run directory");
    const std::string path = rankFile(runDir, id->rank, ".log");
    logFd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (logFd < 0) throw ConfigError(fmt::format("rank log {}: {}", path, std::strerror(errno)));
  }
  Relay relay(logFd, fmt::format("[{}:{}] ", host, id->rank), output.shows(id->rank));

  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) throw Error("pipe2 failed");
  SpawnOptions spawn;
  spawn.argv = program;
  const int gpus = countGpus();
  spawn.setEnv = rankEnvironment(*id, nodeRank, nodes, environment, gpus, gpuBinding);
  spawn.unsetEnv = {std::string(env::kControl), std::string(env::kControlToken)};
  spawn.newProcessGroup = true;
  spawn.killWithParent = true;
  spawn.stdoutFd = out[1];
  spawn.stderrFd = err[1];
  Process child;
  try {
    child = Process::spawn(spawn);
  } catch (const ConfigError& e) {
    relay.note(e.what());
    record.exitCode = 127;
    record.endUnixUs = comm::unixMicros();
    writeRecord(runDir, record);
    control.send("exit " + jsonText(toJson(record)));
    if (logFd >= 0) ::close(logFd);
    return control.fd >= 0 ? 0 : 127;
  }
  ::close(out[1]);
  ::close(err[1]);
  record.started = true;
  record.programPid = child.pid();
  control.send(fmt::format("started {}", child.pid()));

  Heartbeat heartbeat(runDir.empty() ? "" : comm::timingsPath(runDir, id->rank));
  auto nextBeatCheck = Clock::now();
  std::unique_ptr<UtilSampler> sampler;
  if (auto ms = environment.getInt(env::kSampleMs, 50, 60000); ms && !runDir.empty()) {
    std::optional<unsigned> gpu;
    auto visible = spawn.setEnv.find(std::string(env::kCudaVisibleDevices));
    const std::string devices = visible != spawn.setEnv.end() ? visible->second
                                                              : environment.get(env::kCudaVisibleDevices).value_or("");
    if (!devices.empty() && std::isdigit(static_cast<unsigned char>(devices[0])) && gpus > 0)
      gpu = static_cast<unsigned>(std::atoi(devices.c_str()));  // the first visible device
    try {
      io::makeDirectories(runDir + "/util", "utilisation directory");
      sampler = std::make_unique<UtilSampler>(utilisationPath(runDir, id->rank), id->rank, gpu, std::chrono::milliseconds(*ms));
    } catch (const std::exception& e) {
      relay.note(std::string("utilisation sampling off: ") + e.what());
    }
  }
  int streams[3] = {-1, out[0], err[0]};
  std::optional<ExitStatus> status;
  std::optional<Clock::time_point> killAt, drainUntil;
  auto requestStop = [&](int sig) {
    record.stopRequested = true;
    child.signalGroup(sig);
    if (!killAt) killAt = Clock::now() + grace;
  };
  for (;;) {
    std::vector<pollfd> fds;
    for (int s = 1; s <= 2; ++s)
      if (streams[s] >= 0) fds.push_back({streams[s], POLLIN, 0});
    fds.push_back({signals.fd(), POLLIN, 0});
    if (control.fd >= 0) fds.push_back({control.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), 50) < 0 && errno != EINTR) break;
    for (const auto& p : fds) {
      if (!p.revents) continue;
      if (p.fd == signals.fd()) {
        for (int sig : signals.drain()) {
          if (sig == SIGCHLD) continue;
          if (sig == SIGUSR1 || sig == SIGUSR2) child.signalGroup(sig);
          else requestStop(sig);
        }
      } else if (p.fd == control.fd) {
        if (!control.read()) {  // ddprun is gone: nobody will report or clean up, so stop here
          control.close();
          if (!status) requestStop(SIGTERM);
        }
        while (auto line = control.in.next()) {
          if (*line == "terminate" && !status) requestStop(SIGTERM);
          if (*line == "stacks" && !status && !runDir.empty()) {
            try {
              writeFileAtomically(rankFile(runDir, id->rank, ".stacks.txt"), captureStacks(child.pid()));
            } catch (const std::exception& e) {
              relay.note(std::string("stacks: ") + e.what());
            }
            control.send("stacks-done");
          }
        }
      } else {
        for (int s = 1; s <= 2; ++s) {
          if (p.fd != streams[s]) continue;
          char buf[65536];
          ssize_t n = ::read(streams[s], buf, sizeof buf);
          if (n > 0) {
            relay.add(s, buf, static_cast<size_t>(n));
          } else if (n == 0 || errno != EINTR) {
            relay.flush(s);
            ::close(streams[s]);
            streams[s] = -1;
          }
        }
      }
    }
    if (!status && (status = child.poll())) {
      record.endUnixUs = comm::unixMicros();
      drainUntil = Clock::now() + kDrainAfterExit;
    }
    const auto now = Clock::now();
    if (sampler && !status) sampler->poll(child.pid());
    if (now >= nextBeatCheck && control.fd >= 0) {
      nextBeatCheck = now + std::chrono::milliseconds(250);
      if (auto beat = heartbeat.poll()) control.send("beat " + *beat);
    }
    if (!status && killAt && now >= *killAt) {
      child.signalGroup(SIGKILL);
      killAt = now + std::chrono::hours(24);
    }
    if (status && ((streams[1] < 0 && streams[2] < 0) || now >= *drainUntil)) break;
  }
  child.signalGroup(SIGKILL);  // whatever the program left running in its group
  for (int s = 1; s <= 2; ++s) {
    if (streams[s] < 0) continue;
    relay.flush(s);
    ::close(streams[s]);
  }
  record.exitCode = status->code;
  record.signal = status->signal;
  record.peakRssKb = status->maxRssKb;
  if (logFd >= 0) ::close(logFd);
  writeRecord(runDir, record);
  control.send("exit " + jsonText(toJson(record)));
  if (control.fd >= 0) {
    ::shutdown(control.fd, SHUT_WR);
    control.close();
    return 0;
  }
  return status->shellCode();
}

}  // namespace ddp::launcher
