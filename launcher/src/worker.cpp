#include "ddp/launcher/worker.hpp"

#include "ddp/common/clock.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/files.hpp"
#include "ddp/common/json_text.hpp"
#include "ddp/common/log.hpp"
#include "ddp/common/run_layout.hpp"
#include "ddp/launcher/control.hpp"
#include "ddp/launcher/process.hpp"
#include "ddp/launcher/rank.hpp"
#include "io.hpp"
#include "sampler.hpp"
#include "stacks.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>

namespace ddp::launcher {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kRendezvousTimeout =
    std::chrono::seconds(600);  // ddprun's own limit is shorter; this one guards an orphan
constexpr auto kDrainAfterExit = std::chrono::milliseconds(300);
constexpr auto kBeatInterval = std::chrono::milliseconds(250);
constexpr auto kBeatJitter = std::chrono::milliseconds(50);
constexpr int kPollMs = 50;

std::shared_ptr<spdlog::logger> logger() { return log::get("ddprun"); }

// What the worker is told by its environment (set by ddprun's plan).
struct WorkerConfig {
  RankIdentity id;
  std::optional<RunLayout> layout;  // none without DDPRUN_RUN_DIR (a worker started by hand)
  OutputMode output;
  std::chrono::seconds grace{5};
  bool gpuBinding = true;
  std::string host;
  std::optional<std::string> control, token;
  std::optional<long long> sampleMs;
};

WorkerConfig readConfig(const Environment& environment) {
  const auto id = rankIdentityFrom(environment);
  if (!id)
    throw ConfigError(
        "worker: no rank in the environment (OMPI_COMM_WORLD_RANK, SLURM_PROCID or RANK): "
        "it is started by ddprun through mpirun");
  WorkerConfig c;
  c.id = *id;
  if (auto dir = environment.get(env::kRunDir); dir && !dir->empty()) c.layout.emplace(*dir);
  c.output = parseOutputMode(environment.get(env::kOutput).value_or("tag"), std::string(env::kOutput));
  c.grace = std::chrono::seconds(environment.getInt(env::kGraceSeconds, 0, 3600).value_or(5));
  c.gpuBinding = environment.get(env::kGpuBinding).value_or("local-rank") != "none";
  c.host = io::hostname();
  c.control = environment.get(env::kControl);
  c.token = environment.get(env::kControlToken);
  c.sampleMs = environment.getInt(env::kSampleMs, 50, 60000);
  if (auto level = environment.get(env::kLogLevel)) log::setLevel(log::parseLevel(*level, std::string(env::kLogLevel)));
  return c;
}

// Where the program's two streams go: whole lines to the rank log and (tagged) to the console.
class Relay {
 public:
  Relay(int logFd, std::string tag, bool console) : logFd_(logFd), tag_(std::move(tag)), console_(console) {}
  ~Relay() {
    if (logFd_ >= 0) ::close(logFd_);
  }
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

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
  // ddprun's own lines about this rank, in its output (where the user reads the rank's story).
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

// The worker's end of the control connection (control.hpp).
class ControlLink {
 public:
  ~ControlLink() { close(); }
  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  void connect(const std::string& address, const WorkerConfig& c, io::Resolver resolve) {
    const auto colon = address.rfind(':');
    std::string why = fmt::format("malformed {} '{}'", env::kControl, address);
    if (colon != std::string::npos)
      fd_ = io::connectTcp(address.substr(0, colon), std::atoi(address.c_str() + colon + 1), 30, why, resolve);
    if (fd_ < 0) throw Error(fmt::format("rank {} on {}: cannot reach ddprun: {}", c.id.rank, c.host, why));
    send(control::Hello{c.token.value_or("-"), c.id.rank, ::getpid(), c.host});
  }
  void send(const control::WorkerMessage& message) {
    if (fd_ >= 0 && !io::writeAll(fd_, control::format(message) + "\n")) close();
  }
  // The messages that arrived; closes the link on EOF or an error (ddprun is gone).
  std::vector<control::LauncherMessage> read() {
    std::vector<control::LauncherMessage> out;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) return out;
    if (n <= 0) {
      close();
      return out;
    }
    lastHeard_ = Clock::now();
    in_.append(buf, static_cast<size_t>(n));
    while (auto line = in_.next()) {
      if (auto message = control::parseLauncherMessage(*line))
        out.push_back(*message);
      else
        logger()->debug("control: ignored '{}'", line->substr(0, 80));
    }
    return out;
  }
  // Says the worker is done (the last message sent) and closes.
  void finish() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
    close();
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // How long since ddprun last said anything (its pings come every control::kKeepalive).
  Clock::duration silentFor(Clock::time_point now) const { return now - lastHeard_; }

 private:
  int fd_ = -1;
  io::LineBuffer in_;
  Clock::time_point lastHeard_ = Clock::now();
};

// On a host cut off from ddprun, mpirun's daemon that started this worker would wait for its
// lost mpirun for minutes: it is stopped too, so nothing of the job stays on the host. (Under
// srun the parent is Slurm's slurmstepd, which Slurm itself cleans up: it is left alone.)
void stopOrphanedDaemon() {
  const pid_t parent = ::getppid();
  std::ifstream comm(fmt::format("/proc/{}/comm", parent));
  std::string name;
  if (std::getline(comm, name) && name == "orted") {
    logger()->warn("stopping mpirun's daemon on this host (pid {}): its mpirun is out of reach", parent);
    ::kill(parent, SIGTERM);
  }
}

bool isStopSignal(int sig) { return sig != SIGCHLD && sig != SIGUSR1 && sig != SIGUSR2; }

// Waits for ddprun's "start" (every rank has said hello). None when the rank is torn down
// first: "terminate", a stop signal, ddprun gone, a poll error, or the deadline.
std::optional<control::Start> awaitStart(ControlLink& link, io::SignalPipe& signals) {
  const auto deadline = Clock::now() + kRendezvousTimeout;
  while (link.connected() && Clock::now() < deadline) {
    pollfd fds[2] = {{link.fd(), POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    if (::poll(fds, 2, 200) < 0 && errno != EINTR) {
      logger()->error("waiting for ddprun: poll: {}", std::strerror(errno));
      return std::nullopt;
    }
    if (fds[1].revents)
      for (int sig : signals.drain())
        if (isStopSignal(sig)) return std::nullopt;
    if (!fds[0].revents) continue;
    std::optional<control::Start> start;
    for (const auto& message : link.read()) {
      // A terminate wins over a start that came with it: the job is being torn down.
      if (std::holds_alternative<control::Terminate>(message)) return std::nullopt;
      if (auto* s = std::get_if<control::Start>(&message)) start = *s;
    }
    if (start) return start;
  }
  return std::nullopt;
}

// The heartbeat: what the program's step timer says it is doing. Its progress file when the
// program has one; else the step of the last line of its timings file (a program that writes
// only the timings contract).
class Heartbeat {
 public:
  Heartbeat(const std::optional<RunLayout>& layout, int rank) {
    if (!layout) return;
    jsonl_ = layout->timings(rank);
    progress_ = layout->progress(rank);
  }
  // The progress when it changed since the last call.
  std::optional<StepProgress> poll() {
    if (jsonl_.empty()) return std::nullopt;
    auto now = parseStepProgress(read(progress_, 64, 0));
    if (!now) now = lastRecordDone();
    if (!now || (last_ && now->step == last_->step && now->phase == last_->phase)) return std::nullopt;
    last_ = now;
    return now;
  }

 private:
  std::optional<StepProgress> lastRecordDone() const {
    const std::string tail = read(jsonl_, 8192, -1);
    const auto end = tail.rfind('\n');
    if (end == std::string::npos) return std::nullopt;
    const auto begin = end == 0 ? std::string::npos : tail.rfind('\n', end - 1);
    const size_t first = begin == std::string::npos ? 0 : begin + 1;
    try {
      return StepProgress{parseStepRecord(std::string_view(tail).substr(first, end - first)).step, std::nullopt};
    } catch (const std::exception&) {  // a line cut by the tail window, or not a step record
      return std::nullopt;
    }
  }
  // Up to `bytes` from offset `from`; from < 0: the file's last bytes.
  static std::string read(const std::string& path, size_t bytes, off_t from) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    struct stat st {};
    ::fstat(fd, &st);
    if (from < 0) from = std::max<off_t>(0, st.st_size - static_cast<off_t>(bytes));
    std::string buf(bytes, '\0');
    const ssize_t n = ::pread(fd, buf.data(), bytes, from);
    ::close(fd);
    buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return buf;
  }
  std::string jsonl_, progress_;
  std::optional<StepProgress> last_;
};

void writeRecord(const WorkerConfig& c, const RankExitRecord& record) {
  if (!c.layout) return;
  try {
    makeDirectories(c.layout->ranksDir(), "run directory");
    writeFileAtomically(c.layout->rankExit(record.rank), jsonText(toJson(record), 2) + "\n");
  } catch (const std::exception& e) {
    logger()->error("{}", e.what());
  }
}

// The rank log (opened for the program's output), or -1 without a run directory.
int openRankLog(const WorkerConfig& c) {
  if (!c.layout) return -1;
  makeDirectories(c.layout->ranksDir(), "run directory");
  const std::string path = c.layout->rankLog(c.id.rank);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw ConfigError(fmt::format("rank log {}: {}", path, std::strerror(errno)));
  return fd;
}

// The utilisation sampler of a profiled run, with this rank's GPU (the first it may see).
std::unique_ptr<UtilSampler> makeSampler(const WorkerConfig& c, const std::map<std::string, std::string>& programEnv,
                                         int gpus, const WorkerLibraries& libraries, Relay& relay) {
  if (!c.sampleMs || !c.layout) return nullptr;
  std::optional<GpuSource> gpu;
  auto visible = programEnv.find(std::string(env::kCudaVisibleDevices));
  const std::string devices = visible != programEnv.end()
                                  ? visible->second
                                  : Environment::fromProcess().get(env::kCudaVisibleDevices).value_or("");
  if (!devices.empty() && std::isdigit(static_cast<unsigned char>(devices[0])) && gpus > 0 && libraries.openGpu) {
    const auto index = static_cast<unsigned>(std::atoi(devices.c_str()));
    if (auto read = libraries.openGpu(index)) gpu = GpuSource{index, std::move(read)};
  }
  try {
    makeDirectories(c.layout->utilDir(), "utilisation directory");
    return std::make_unique<UtilSampler>(c.layout->utilisation(c.id.rank), c.id.rank, std::move(gpu),
                                         std::chrono::milliseconds(*c.sampleMs), c.layout->root());
  } catch (const std::exception& e) {
    relay.note(std::string("utilisation sampling off: ") + e.what());
    return nullptr;
  }
}

// Watches the running program: relays its output, forwards signals, obeys ddprun (terminate,
// stacks), sends heartbeats and samples utilisation, until it has ended and its output is
// drained.
class ProgramWatch {
 public:
  ProgramWatch(const WorkerConfig& c, Process& child, int out, int err, Relay& relay, ControlLink& link,
               io::SignalPipe& signals, RankExitRecord& record)
      : c_(c),
        child_(child),
        relay_(relay),
        link_(link),
        signals_(signals),
        record_(record),
        heartbeat_(c.layout, c.id.rank) {
    streams_[1] = out;
    streams_[2] = err;
  }
  ~ProgramWatch() {
    for (int s = 1; s <= 2; ++s)
      if (streams_[s] >= 0) ::close(streams_[s]);
  }
  ProgramWatch(const ProgramWatch&) = delete;
  ProgramWatch& operator=(const ProgramWatch&) = delete;

  // How the program ended; the watch loop failing kills it (settleProgram).
  ExitStatus run(UtilSampler* sampler) {
    while (!finished(Clock::now())) {
      if (!waitOnce()) break;
      reapIfEnded();
      if (sampler && !status_) sampler->poll(child_.pid());
      beat(Clock::now());
      keepalive(Clock::now());
      escalate(Clock::now());
    }
    const auto status = settleProgram(child_, status_);
    if (!status_) record_.endUnixUs = unixMicros();
    for (int s = 1; s <= 2; ++s) close(s);
    return status;
  }

 private:
  // One poll and what it found; false when poll itself failed.
  bool waitOnce() {
    std::vector<pollfd> fds;
    for (int s = 1; s <= 2; ++s)
      if (streams_[s] >= 0) fds.push_back({streams_[s], POLLIN, 0});
    fds.push_back({signals_.fd(), POLLIN, 0});
    if (link_.connected()) fds.push_back({link_.fd(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), kPollMs) < 0 && errno != EINTR) {
      logger()->error("watching rank {}'s program: poll: {}", c_.id.rank, std::strerror(errno));
      return false;
    }
    for (const auto& p : fds) {
      if (!p.revents) continue;
      if (p.fd == signals_.fd())
        onSignals();
      else if (p.fd == link_.fd())
        onControl();
      else
        for (int s = 1; s <= 2; ++s)
          if (p.fd == streams_[s]) onStream(s);
    }
    return true;
  }
  void onSignals() {
    for (int sig : signals_.drain()) {
      if (sig == SIGCHLD) continue;
      if (isStopSignal(sig))
        requestStop(sig);
      else
        child_.signalGroup(sig);
    }
  }
  void onControl() {
    for (const auto& message : link_.read()) {
      if (status_) continue;
      if (std::holds_alternative<control::Terminate>(message)) requestStop(SIGTERM);
      if (std::holds_alternative<control::Stacks>(message)) writeStacks();
    }
    // ddprun is gone: nobody will report or clean up, so stop here.
    if (!link_.connected() && !status_) requestStop(SIGTERM);
  }
  void writeStacks() {
    if (c_.layout) {
      try {
        writeFileAtomically(c_.layout->rankStacks(c_.id.rank), captureStacks(child_.pid()));
      } catch (const std::exception& e) {
        relay_.note(std::string("stacks: ") + e.what());
      }
    }
    link_.send(control::StacksDone{});
  }
  void onStream(int s) {
    char buf[65536];
    const ssize_t n = ::read(streams_[s], buf, sizeof buf);
    if (n > 0)
      relay_.add(s, buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR)
      close(s);
  }
  void close(int s) {
    if (streams_[s] < 0) return;
    relay_.flush(s);
    ::close(streams_[s]);
    streams_[s] = -1;
  }
  // Whether the program has ended; its end noted once.
  bool reapIfEnded() {
    if (!status_ && (status_ = child_.poll())) {
      record_.endUnixUs = unixMicros();
      drainUntil_ = Clock::now() + kDrainAfterExit;
    }
    return status_.has_value();
  }
  void requestStop(int sig) {
    // A program that has ended by itself already was not stopped: its own exit stays its own
    // (a second rank failing with the same error as the first is not collateral).
    if (reapIfEnded()) return;
    record_.stopRequested = true;
    child_.signalGroup(sig);
    if (!killAt_) killAt_ = Clock::now() + c_.grace;
  }
  void beat(Clock::time_point now) {
    if (now < nextBeat_ || !link_.connected()) return;
    // A jittered interval: a fixed one can beat in step with the training loop and see the same
    // phase every time (ddprun's live progress reads these as samples of where the rank is).
    nextBeat_ = now + kBeatInterval - kBeatJitter + std::chrono::milliseconds(rng_() % (2 * kBeatJitter.count() + 1));
    if (auto progress = heartbeat_.poll()) link_.send(control::Beat{*progress});
  }
  // Says the worker is there, and stops the program when ddprun has been silent too long: its
  // host's link is down (no RST comes), so nobody would report or clean up.
  void keepalive(Clock::time_point now) {
    if (!link_.connected() || now < nextAlive_) return;
    nextAlive_ = now + control::kKeepalive;
    link_.send(control::Alive{});
    if (link_.silentFor(now) < control::kLinkSilence || status_) return;
    logger()->error("rank {} on {}: no word from ddprun for {:.0f} s (the link to it is down?): stopping the program",
                    c_.id.rank, c_.host, std::chrono::duration<double>(link_.silentFor(now)).count());
    link_.close();
    launcherLost_ = true;
    requestStop(SIGTERM);
  }

 public:
  // ddprun fell silent (keepalive): this host is cut off from it.
  bool launcherLost() const { return launcherLost_; }

 private:
  void escalate(Clock::time_point now) {
    if (status_ || !killAt_ || now < *killAt_) return;
    child_.signalGroup(SIGKILL);
    killAt_ = now + std::chrono::hours(24);
  }
  bool finished(Clock::time_point now) const {
    return status_ && ((streams_[1] < 0 && streams_[2] < 0) || now >= *drainUntil_);
  }

  const WorkerConfig& c_;
  Process& child_;
  Relay& relay_;
  ControlLink& link_;
  io::SignalPipe& signals_;
  RankExitRecord& record_;
  Heartbeat heartbeat_;
  int streams_[3] = {-1, -1, -1};
  std::optional<ExitStatus> status_;
  std::optional<Clock::time_point> killAt_, drainUntil_;
  Clock::time_point nextBeat_{}, nextAlive_{};
  bool launcherLost_ = false;
  std::minstd_rand rng_{static_cast<unsigned>(::getpid())};
};

// Ends the worker without running the program (torn down before it started, or it could not
// be started): the record goes to the run directory and to ddprun.
int endWithoutProgram(const WorkerConfig& c, ControlLink& link, RankExitRecord& record, int code) {
  record.endUnixUs = unixMicros();
  writeRecord(c, record);
  link.send(control::Exit{record});
  const bool reported = link.connected();
  link.finish();
  return reported ? 0 : code;
}

// The program in a process group of its own, killed with the worker, with the rank contract in
// its environment and without ddprun's control variables.
SpawnOptions programSpawn(const std::vector<std::string>& program, const WorkerConfig& c, const control::Start& start,
                          const Environment& environment, int gpus) {
  SpawnOptions spawn;
  spawn.argv = program;
  RankHost host;
  host.nodeRank = start.nodeRank;
  host.nodes = start.nodes;
  host.gpuCount = gpus;
  host.gpuBinding = c.gpuBinding;
  host.cpus = io::usableCpus();
  if (c.layout) host.errorFile = c.layout->rankError(c.id.rank);
  spawn.setEnv = rankEnvironment(c.id, host, environment);
  spawn.unsetEnv = {std::string(env::kControl), std::string(env::kControlToken)};
  spawn.newProcessGroup = true;
  spawn.killWithParent = true;
  return spawn;
}

}  // namespace

ExitStatus settleProgram(Process& child, const std::optional<ExitStatus>& status) {
  child.signalGroup(SIGKILL);  // whatever the program left running in its group, or the program itself
  return status ? *status : child.wait();
}

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

int runWorker(const std::vector<std::string>& program, const WorkerLibraries& libraries) {
  if (program.empty()) throw ConfigError("worker: no program (ddprun worker -- PROGRAM [ARGS...])");
  const auto environment = Environment::fromProcess();
  const WorkerConfig c = readConfig(environment);
  log::setPrefix(fmt::format("[{}:{}]", c.host, c.id.rank));
  const int gpus = countGpus();
  if (auto missing = missingLibrary(c.control, c.sampleMs && c.layout && gpus > 0, libraries); !missing.empty())
    handOver(program, missing);
  io::SignalPipe signals({SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD});
  ::signal(SIGPIPE, SIG_IGN);

  RankExitRecord record;
  record.rank = c.id.rank;
  record.host = c.host;
  record.workerPid = ::getpid();
  record.startUnixUs = unixMicros();

  ControlLink link;
  control::Start start{c.id.nodeRank.value_or(0), 1};
  if (c.control) {
    link.connect(*c.control, c, libraries.resolve);
    auto started = awaitStart(link, signals);
    if (!started) {
      record.stopRequested = true;
      return endWithoutProgram(c, link, record, 0);
    }
    start = *started;
  }

  Relay relay(openRankLog(c), fmt::format("[{}:{}] ", c.host, c.id.rank), c.output.shows(c.id.rank));
  auto spawn = programSpawn(program, c, start, environment, gpus);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) throw Error("pipe2 failed");
  spawn.stdoutFd = out[1];
  spawn.stderrFd = err[1];
  Process child;
  try {
    child = Process::spawn(spawn);
  } catch (const ConfigError& e) {
    relay.note(e.what());
    for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
    record.exitCode = 127;
    return endWithoutProgram(c, link, record, 127);
  }
  ::close(out[1]);
  ::close(err[1]);
  record.started = true;
  record.programPid = child.pid();
  link.send(control::Started{child.pid()});

  auto sampler = makeSampler(c, spawn.setEnv, gpus, libraries, relay);
  ProgramWatch watch(c, child, out[0], err[0], relay, link, signals, record);
  const auto status = watch.run(sampler.get());
  record.exitCode = status.code;
  record.signal = status.signal;
  record.peakRssKb = status.maxRssKb;
  writeRecord(c, record);
  link.send(control::Exit{record});
  const bool reported = link.connected();
  link.finish();
  if (watch.launcherLost()) stopOrphanedDaemon();
  return reported ? 0 : status.shellCode();
}

}  // namespace ddp::launcher
