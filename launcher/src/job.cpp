#include "ddp/launcher/job.hpp"

#include "ddp/comm/error.hpp"
#include "ddp/comm/files.hpp"
#include "ddp/comm/json_text.hpp"
#include "ddp/comm/timings.hpp"
#include "ddp/config.hpp"
#include "ddp/launcher/process.hpp"
#include "ddp/launcher/rank.hpp"
#include "ddp/profiler/report.hpp"
#include "ddp/profiler/run.hpp"
#include "io.hpp"
#include "progress.hpp"
#include "probe.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <ctime>
#include <deque>
#include <fcntl.h>
#include <fstream>
#include <future>
#include <iostream>
#include <list>
#include <sstream>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ddp::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

std::string isoTime(int64_t unixUs) {
  std::time_t t = static_cast<std::time_t>(unixUs / 1000000);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    // Runs of consecutive ranks as a-b.
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + (j > i + 1 ? fmt::format("{}-{}", ranks[i], ranks[j])
                                                   : j == i + 1 ? fmt::format("{}, {}", ranks[i], ranks[j])
                                                                : std::to_string(ranks[i]));
    i = j;
  }
  return out;
}

std::vector<std::string> lastLines(const std::string& path, size_t count) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > count) lines.pop_front();
  }
  return {lines.begin(), lines.end()};
}

struct Peer {
  int fd = -1;
  io::LineBuffer in;
  bool hello = false;
  int rank = -1;
  int64_t workerPid = -1, programPid = -1;
  std::string host;
  int64_t step = -1;      // the heartbeat: the step under way (or just done) and its phase
  std::string phase;
  bool stacksDone = false;
};

class Job {
 public:
  Job(const LaunchPlan& plan, int controlFd, const JobSettings& settings)
      : plan_(plan), controlFd_(controlFd), s_(settings), localHost_(io::hostname()) {
    if (auto it = plan.rankEnv.find(std::string(env::kControlToken)); it != plan.rankEnv.end()) token_ = it->second;
    auto dash = std::find(plan.argv.begin(), plan.argv.end(), "--worker");
    if (dash != plan.argv.end() && dash + 1 != plan.argv.end()) program_.assign(dash + 2, plan.argv.end());
  }

  JobOutcome run();

 private:
  void say(Verbosity level, const std::string& text) const {
    if (level > s_.verbosity) return;
    if (progress_) progress_->clear();  // the live progress line gives way
    std::cerr << "ddprun: " << text << "\n" << std::flush;
  }
  void acceptPeers();
  void onLine(Peer& peer, const std::string& line);
  void beginTeardown(const std::string& reason);
  void watchdog(Clock::time_point now);
  void killEverything();
  JobOutcome finish();
  void writeManifest(const std::string& status, const json& extra);

  const LaunchPlan& plan_;
  int controlFd_;
  const JobSettings& s_;
  std::string localHost_, token_;
  std::vector<std::string> program_;
  Process mpirun_;
  std::optional<ExitStatus> mpirunStatus_;
  std::list<Peer> peers_;
  std::map<int, Peer*> byRank_;
  std::map<int, RankRecord> records_;
  bool ranksStarted_ = false;
  bool tearingDown_ = false, mpirunTermSent_ = false, killSent_ = false;
  std::string teardownReason_;
  std::optional<int> interruptedBy_;
  Clock::time_point start_, teardownAt_, startedAt_, lastProgress_;
  bool anyBeat_ = false;
  std::vector<int> hung_;                 // the stalled ranks of a hang
  std::optional<Clock::time_point> stacksUntil_;
  int64_t hangDetectedUs_ = 0, stacksDoneUs_ = 0;
  std::string hangReason_;
  int64_t startUnixUs_ = 0;
  std::future<json> versions_;
  json manifest_;
  mutable std::optional<ProgressDisplay> progress_;  // a profiled run's live progress
};

// run.json: what the run is (built once, at its start), then its status and what the end adds.
void Job::writeManifest(const std::string& status, const json& extra) {
  if (manifest_.is_null()) {
    std::map<std::string, std::string, std::less<>> rankEnv(plan_.rankEnv.begin(), plan_.rankEnv.end());
    json hosts = json::array();
    for (const auto& h : plan_.hosts) hosts.push_back({{"host", h.host}, {"slots", h.slots}});
    auto backend = profiler::commandOption(program_, "--backend");
    manifest_ = {{"schema", 1},
                {"ddprun_version", DDP_VERSION},
                {"command", program_},
                {"ddprun_argv", s_.command},
                {"mpirun_argv", plan_.argv},
                {"np", plan_.np},
                {"hosts", hosts},
                {"launch_host", localHost_},
                {"master_addr", plan_.masterAddr},
                {"master_port", plan_.masterPort},
                {"run_dir", plan_.runDir},
                {"backend", backend ? json(*backend) : json(nullptr)},
                {"start_unix_us", startUnixUs_},
                {"start", isoTime(startUnixUs_)},
                {"attempt", s_.attempt},
                {"max_restarts", s_.maxRestarts},
                {"earlier_attempts", s_.earlierAttempts},
                {"instance", s_.instance},
                {"rank_environment", withoutSecrets(rankEnv)},
                {"environment", withoutSecrets(Environment::fromProcess().all())}};
  }
  json j = manifest_;
  j["status"] = status;
  for (const auto& [k, v] : extra.items()) j[k] = v;
  try {
    writeFileAtomically(plan_.runDir + "/run.json", jsonText(j, 2) + "\n");
  } catch (const std::exception& e) {
    say(Verbosity::kError, e.what());
  }
}

void Job::acceptPeers() {
  for (;;) {
    int fd = ::accept4(controlFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    peers_.push_back(Peer{});
    peers_.back().fd = fd;
  }
}

void Job::onLine(Peer& peer, const std::string& line) {
  if (!peer.hello) {
    auto hello = parseHello(line);
    if (!hello || hello->token != token_ || hello->rank >= plan_.np || byRank_.count(hello->rank)) {
      say(Verbosity::kDebug, fmt::format("control: refused '{}'", line.substr(0, 80)));
      ::close(peer.fd);
      peer.fd = -1;
      return;
    }
    peer.hello = true;
    peer.rank = hello->rank;
    peer.workerPid = hello->pid;
    peer.host = hello->host;
    byRank_[peer.rank] = &peer;
    if (tearingDown_) io::writeAll(peer.fd, "terminate\n");
    if (static_cast<int>(byRank_.size()) == plan_.np && !tearingDown_) {
      // Every rank is here: number the hosts in the order of their first rank.
      std::map<std::string, int> order;
      for (const auto& [rank, p] : byRank_)
        if (!order.count(p->host)) order[p->host] = static_cast<int>(order.size());
      for (const auto& [rank, p] : byRank_)
        if (p->fd >= 0) io::writeAll(p->fd, fmt::format("start {} {}\n", order[p->host], order.size()));
      ranksStarted_ = true;
      startedAt_ = lastProgress_ = Clock::now();
      say(Verbosity::kDebug, fmt::format("all {} ranks reached ddprun after {:.3f} s", plan_.np,
                                         std::chrono::duration<double>(Clock::now() - start_).count()));
    }
    return;
  }
  if (line.rfind("beat ", 0) == 0) {
    std::istringstream in(line.substr(5));
    in >> peer.step >> peer.phase;
    anyBeat_ = true;
    lastProgress_ = Clock::now();
    if (progress_)
      progress_->update(peer.rank, peer.step, peer.phase, std::chrono::duration<double>(lastProgress_ - start_).count());
  } else if (line == "stacks-done") {
    peer.stacksDone = true;
  } else if (line.rfind("started ", 0) == 0) {
    peer.programPid = std::atoll(line.c_str() + 8);
  } else if (line.rfind("exit ", 0) == 0) {
    try {
      auto record = rankRecordFromJson(json::parse(line.substr(5)), fmt::format("rank {}'s exit record", peer.rank));
      if (record.rank != peer.rank) return;
      records_[record.rank] = record;
      if (record.failedOnItsOwn() && !tearingDown_) {
        beginTeardown(fmt::format("rank {} failed: {}", record.rank, record.exitStatus().describe()));
      }
    } catch (const std::exception& e) {
      say(Verbosity::kWarn, e.what());
    }
  }
}

void Job::beginTeardown(const std::string& reason) {
  if (tearingDown_) return;
  tearingDown_ = true;
  teardownReason_ = reason;
  teardownAt_ = Clock::now();
  say(Verbosity::kWarn, reason + ": stopping the other ranks");
  for (auto& p : peers_)
    if (p.fd >= 0 && p.hello && !records_.count(p.rank)) io::writeAll(p.fd, "terminate\n");
}

// --timeout: when no rank has completed a step for the timeout, the ranks furthest behind are
// stalled (the others wait for them in a collective); their stacks are taken, then the job is
// torn down. A program that never wrote step timings is judged by its wall time alone.
void Job::watchdog(Clock::time_point now) {
  if (s_.timeoutSeconds <= 0 || !ranksStarted_ || tearingDown_) return;
  const auto limit = std::chrono::duration<double>(s_.timeoutSeconds);
  if (stacksUntil_) {
    bool done = std::all_of(hung_.begin(), hung_.end(), [&](int r) { return !byRank_.count(r) || byRank_[r]->fd < 0 || byRank_[r]->stacksDone; });
    if (done || now > *stacksUntil_) {
      stacksDoneUs_ = comm::unixMicros();
      beginTeardown(hangReason_);
    }
    return;
  }
  if (!anyBeat_) {
    if (now - startedAt_ < limit) return;
    for (int r = 0; r < plan_.np; ++r)
      if (!records_.count(r)) hung_.push_back(r);
    hangReason_ = fmt::format("--timeout {:g}: no rank wrote step timings ({}/timings), so the job is judged by its wall "
                              "time alone, and it ran {:g} s", s_.timeoutSeconds, plan_.runDir, s_.timeoutSeconds);
  } else {
    if (now - lastProgress_ < limit) return;
    // Ranks waiting in a collective (comm_wait) wait for the others: those are the stalled ones.
    std::vector<int> waiting, busy;
    for (const auto& [r, p] : byRank_)
      if (!records_.count(r)) (p->phase == "comm_wait" ? waiting : busy).push_back(r);
    auto where = [&](int r) {
      const Peer& p = *byRank_[r];
      return p.step < 0 ? std::string("before its first step")
             : p.phase == "done" ? fmt::format("after step {}", p.step)
                                 : fmt::format("in {} of step {}", p.phase, p.step);
    };
    if (!waiting.empty() && !busy.empty()) {
      hung_ = busy;
      std::string stalled;
      for (int r : busy) stalled += (stalled.empty() ? "" : ", ") + fmt::format("rank {} {}", r, where(r));
      hangReason_ = fmt::format("no progress for {:g} s: {} while rank(s) {} wait in the gradient allreduce (comm_wait) "
                                "of step {}", s_.timeoutSeconds, stalled, rankList(waiting), byRank_[waiting.front()]->step);
    } else {
      hung_ = waiting.empty() ? busy : waiting;
      hangReason_ = fmt::format("no progress for {:g} s on any rank, all {} ({}): {}", s_.timeoutSeconds,
                                waiting.empty() ? "outside communication" : "waiting in a collective",
                                hung_.empty() ? "" : where(hung_.front()),
                                waiting.empty() ? "every rank is stuck in its own work (a hang in every rank, or a rank "
                                                  "that stopped writing timings)"
                                                : "a network or NCCL hang, or ranks calling different collectives");
    }
  }
  hangDetectedUs_ = comm::unixMicros();
  say(Verbosity::kWarn, fmt::format("no progress for {:g} s: taking the stacks of rank(s) {}", s_.timeoutSeconds, rankList(hung_)));
  for (int r : hung_)
    if (byRank_.count(r) && byRank_[r]->fd >= 0) io::writeAll(byRank_[r]->fd, "stacks\n");
  stacksUntil_ = now + std::chrono::seconds(20);
}

void Job::killEverything() {
  killSent_ = true;
  mpirun_.signalGroup(SIGKILL);
  for (const auto& p : peers_) {
    if (p.host != localHost_) continue;
    if (p.programPid > 0) ::kill(-static_cast<pid_t>(p.programPid), SIGKILL);
    if (p.workerPid > 0) ::kill(static_cast<pid_t>(p.workerPid), SIGKILL);
  }
}

JobOutcome Job::run() {
  start_ = Clock::now();
  if (s_.profile && s_.verbosity >= Verbosity::kInfo) {
    // The ETA needs the step count: the program's --steps, when it has one (train does).
    std::optional<long long> steps;
    if (auto text = profiler::commandOption(program_, "--steps")) {
      char* end = nullptr;
      const long long n = std::strtoll(text->c_str(), &end, 10);
      if (end != text->c_str() && *end == '\0' && n > 0) steps = n;
    }
    progress_.emplace(plan_.np, steps, ::isatty(STDERR_FILENO) == 1);
  }
  startUnixUs_ = comm::unixMicros();
  writeManifest("running", json::object());
  const std::string mpirunPath = s_.mpirun;
  versions_ = std::async(std::launch::async, [mpirunPath] {
    auto torch = probe::libtorch();
    auto nccl = probe::ncclVersion();
    auto ompi = probe::openMpiVersion(mpirunPath);
    return json{{"ddprun", DDP_VERSION},
                {"openmpi", ompi ? json(*ompi) : json(nullptr)},
                {"libtorch", torch ? json(torch->version) : json(nullptr)},
                {"libtorch_cuda", torch ? json(torch->cuda) : json(nullptr)},
                {"nccl", nccl ? json(*nccl) : json(nullptr)}};
  });

  io::SignalPipe signals({SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD});
  ::signal(SIGPIPE, SIG_IGN);
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  SpawnOptions spawn;
  spawn.argv = plan_.argv;
  spawn.setEnv = plan_.mpirunEnv;
  for (const auto& [k, v] : plan_.rankEnv) spawn.setEnv[k] = v;
  spawn.newProcessGroup = true;  // Ctrl-C reaches ddprun alone; ddprun stops the job in order
  spawn.killWithParent = true;
  spawn.stdinFd = devnull;
  mpirun_ = Process::spawn(spawn);
  ::close(devnull);
  say(Verbosity::kDebug, fmt::format("mpirun started (pid {})", mpirun_.pid()));

  std::optional<Clock::time_point> mpirunEnded;
  for (;;) {
    std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}, {controlFd_, POLLIN, 0}};
    std::vector<Peer*> polled;  // polled[i] is fds[i + 2]
    for (auto& p : peers_)
      if (p.fd >= 0) {
        fds.push_back({p.fd, POLLIN, 0});
        polled.push_back(&p);
      }
    if (::poll(fds.data(), fds.size(), 50) < 0 && errno != EINTR) throw Error(fmt::format("poll: {}", std::strerror(errno)));
    for (int sig : signals.drain()) {
      if (sig == SIGCHLD) continue;
      if (sig == SIGUSR1 || sig == SIGUSR2) {
        mpirun_.signal(sig);
        continue;
      }
      if (interruptedBy_ && sig == SIGINT) {
        say(Verbosity::kWarn, "second SIGINT: killing every rank now");
        killEverything();
        continue;
      }
      if (!interruptedBy_) interruptedBy_ = sig;
      beginTeardown(fmt::format("interrupted by {}", signalName(sig)));
    }
    if (fds[1].revents) acceptPeers();
    for (size_t i = 0; i < polled.size(); ++i) {
      Peer& p = *polled[i];
      if (!fds[i + 2].revents || p.fd < 0) continue;
      char buf[65536];
      ssize_t n = ::recv(p.fd, buf, sizeof buf, 0);
      if (n > 0) {
        p.in.append(buf, static_cast<size_t>(n));
        while (p.fd >= 0) {
          auto line = p.in.next();
          if (!line) break;
          onLine(p, *line);
        }
      } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        ::close(p.fd);
        p.fd = -1;
      }
    }
    const auto now = Clock::now();
    if (!mpirunStatus_ && (mpirunStatus_ = mpirun_.poll())) mpirunEnded = now;
    if (mpirunStatus_) {
      bool open = std::any_of(peers_.begin(), peers_.end(), [](const Peer& p) { return p.fd >= 0; });
      if (!open || now - *mpirunEnded > std::chrono::seconds(1)) break;
      continue;
    }
    if (!ranksStarted_ && !tearingDown_ && now - start_ > std::chrono::duration<double>(s_.startTimeoutSeconds)) {
      std::vector<int> missing;
      for (int r = 0; r < plan_.np; ++r)
        if (!byRank_.count(r)) missing.push_back(r);
      beginTeardown(fmt::format("rank(s) {} did not reach ddprun within {:.0f} s (hosts unreachable, or the "
                                "worker could not connect back to {}?)",
                                rankList(missing), s_.startTimeoutSeconds, localHost_));
    }
    watchdog(now);
    if (progress_ && !tearingDown_) progress_->tick(std::chrono::duration<double>(now - start_).count());
    if (tearingDown_) {
      const double since = std::chrono::duration<double>(now - teardownAt_).count();
      if (!mpirunTermSent_ && since > s_.graceSeconds + 2) {
        mpirunTermSent_ = true;
        mpirun_.signalGroup(SIGTERM);
      }
      if (!killSent_ && since > s_.graceSeconds + 5) killEverything();
    }
  }
  // Nothing of the job outlives ddprun on this host, whatever mpirun did.
  for (const auto& p : peers_) {
    if (p.fd >= 0) ::close(p.fd);
    if (p.host == localHost_ && p.programPid > 0) ::kill(-static_cast<pid_t>(p.programPid), SIGKILL);
  }
  mpirun_.signalGroup(SIGKILL);
  return finish();
}

JobOutcome Job::finish() {
  if (progress_) progress_->clear();  // the report and the verdict follow
  const auto culprit = [&]() -> std::optional<int> {
    if (!hung_.empty()) return hung_.front();
    std::vector<RankRecord> all;
    for (const auto& [r, rec] : records_) all.push_back(rec);
    return findCulprit(all);
  }();
  const bool hang = !hung_.empty();
  std::vector<int> collateral, lost;
  json ranks = json::array();
  for (int r = 0; r < plan_.np; ++r) {
    auto it = records_.find(r);
    RankRecord rec;
    if (it != records_.end()) {
      rec = it->second;
      if (hang && std::count(hung_.begin(), hung_.end(), r)) rec.status = "hung";
      else if (culprit && r == *culprit) rec.status = "culprit";
      else if (rec.failed() || rec.stopRequested) rec.status = interruptedBy_ && !culprit ? "stopped" : "collateral";
      else rec.status = "ok";
    } else {
      rec.rank = r;
      rec.status = "lost";
      if (auto p = byRank_.find(r); p != byRank_.end()) {
        rec.host = p->second->host;
        rec.workerPid = p->second->workerPid;
        rec.programPid = p->second->programPid;
      }
    }
    if (rec.status == "lost") lost.push_back(r);
    if (rec.status == "collateral" || rec.status == "stopped") collateral.push_back(r);
    try {
      writeFileAtomically(rankFile(plan_.runDir, r, ".exit.json"), jsonText(toJson(rec), 2) + "\n");
    } catch (const std::exception& e) {
      say(Verbosity::kError, e.what());
    }
    records_[r] = rec;
    ranks.push_back({{"rank", r},
                     {"host", rec.host},
                     {"pid", rec.programPid},
                     {"status", rec.status},
                     {"exit_code", rec.exitCode ? json(*rec.exitCode) : json(nullptr)},
                     {"signal", rec.signal ? json(*rec.signal) : json(nullptr)}});
  }

  int code = 0;
  std::string status = "succeeded";
  if (interruptedBy_) {
    code = 128 + *interruptedBy_;
    status = "interrupted";
  } else if (hang) {
    code = 124;
    status = "hung";
  } else if (culprit) {
    const auto& rec = records_[*culprit];
    code = rec.exitStatus().shellCode();
    status = "failed";
  } else if (!lost.empty() || (mpirunStatus_ && mpirunStatus_->failed())) {
    code = mpirunStatus_ && mpirunStatus_->failed() ? std::max(1, mpirunStatus_->shellCode()) : 1;
    status = "failed";
  }
  const int64_t endUs = comm::unixMicros();
  const double seconds = (endUs - startUnixUs_) / 1e6;

  if (hang) {
    for (int r : hung_) {
      const auto& rec = records_[r];
      say(Verbosity::kError, fmt::format("rank {} on {} (pid {}) hung; its stacks: {}", r, rec.host, rec.programPid,
                                         rankFile(plan_.runDir, r, ".stacks.txt")));
      const std::string log = rankFile(plan_.runDir, r, ".log");
      for (const auto& l : lastLines(log, 5)) std::cerr << "    " << l << "\n";
    }
    if (!collateral.empty())
      say(Verbosity::kError, fmt::format("rank(s) {} were stopped because of it (collateral, not at fault)", rankList(collateral)));
  } else if (culprit) {
    const auto& rec = records_[*culprit];
    std::string what = rec.exitStatus().describe();
    if (rec.signal && *rec.signal == SIGKILL)
      what += ": out of memory? (the kernel's OOM killer sends SIGKILL; see dmesg / the container's memory limit)";
    if (!rec.started) what += " (the program could not be started)";
    say(Verbosity::kError, fmt::format("rank {} on {} (pid {}) failed first: {} after {:.1f} s", rec.rank, rec.host,
                                       rec.programPid, what, (rec.endUnixUs - rec.startUnixUs) / 1e6));
    const std::string log = rankFile(plan_.runDir, rec.rank, ".log");
    auto lines = lastLines(log, 20);
    if (!lines.empty()) {
      say(Verbosity::kError, fmt::format("the last {} lines of {}:", lines.size(), log));
      for (const auto& l : lines) std::cerr << "    " << l << "\n";
    } else if (rec.host != localHost_) {
      say(Verbosity::kError, fmt::format("its log is {} on {}", log, rec.host));
    }
    if (!collateral.empty())
      say(Verbosity::kError, fmt::format("rank(s) {} were stopped because of it (collateral, not at fault)", rankList(collateral)));
  } else if (interruptedBy_) {
    say(Verbosity::kWarn, fmt::format("stopped by {}: rank(s) {} were stopped", signalName(*interruptedBy_),
                                      collateral.empty() ? "none" : rankList(collateral)));
  }
  if (!lost.empty()) {
    std::string why = mpirunStatus_ && mpirunStatus_->failed() ? fmt::format(" (mpirun: {})", mpirunStatus_->describe()) : "";
    say(Verbosity::kError, fmt::format("rank(s) {} left no exit record: never started, or the worker was killed{}",
                                       rankList(lost), why));
  }
  if (!teardownReason_.empty() && !culprit && !interruptedBy_ && !hang) say(Verbosity::kError, teardownReason_);

  json versions = nullptr;
  if (versions_.valid() && versions_.wait_for(std::chrono::seconds(10)) == std::future_status::ready) versions = versions_.get();
  writeManifest(status, {{"end_unix_us", endUs},
                         {"end", isoTime(endUs)},
                         {"duration_s", seconds},
                         {"exit_code", code},
                         {"culprit", culprit ? json(*culprit) : json(nullptr)},
                         {"reason", teardownReason_.empty() ? json(nullptr) : json(teardownReason_)},
                         {"mpirun_exit", mpirunStatus_ ? json(mpirunStatus_->describe()) : json(nullptr)},
                         {"hang", hang ? json{{"ranks", hung_}, {"detected_unix_us", hangDetectedUs_},
                                              {"stacks_done_unix_us", stacksDoneUs_}} : json(nullptr)},
                         {"ranks", ranks},
                         {"versions", versions}});

  if (s_.profile) {
    try {
      auto report = profiler::reportRun(plan_.runDir, true);
      if (report.usable) std::cout << "\n" << report.text << std::flush;
      for (const auto& p : report.problems) say(Verbosity::kWarn, "profile: " + p);
    } catch (const std::exception& e) {
      say(Verbosity::kWarn, fmt::format("profile: {}", e.what()));
    }
  }
  say(code == 0 ? Verbosity::kInfo : Verbosity::kError,
      fmt::format("{} ranks {} in {:.1f} s (exit {}); run directory {}", plan_.np, status, seconds, code, plan_.runDir));
  return {code, interruptedBy_.has_value(), teardownReason_.empty() ? status : teardownReason_};
}

}  // namespace

Verbosity parseVerbosity(const std::string& text) {
  if (text == "error") return Verbosity::kError;
  if (text == "warn") return Verbosity::kWarn;
  if (text == "info") return Verbosity::kInfo;
  if (text == "debug") return Verbosity::kDebug;
  throw ConfigError(fmt::format("--log-level '{}': expected error, warn, info or debug", text));
}

JobOutcome runJob(const LaunchPlan& plan, int controlFd, const JobSettings& settings) {
  ::fcntl(controlFd, F_SETFL, ::fcntl(controlFd, F_GETFL) | O_NONBLOCK);
  Job job(plan, controlFd, settings);
  return job.run();
}

}  // namespace ddp::launcher
