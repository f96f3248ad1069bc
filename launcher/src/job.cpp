#include "ddp/launcher/job.hpp"

#include "ddp/common/clock.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/files.hpp"
#include "ddp/common/json_text.hpp"
#include "ddp/common/log.hpp"
#include "ddp/common/run_layout.hpp"
#include "ddp/common/text.hpp"
#include "ddp/launcher/control.hpp"
#include "ddp/launcher/process.hpp"
#include "ddp/launcher/rank.hpp"
#include "ddp/profiler/render/report.hpp"
#include "ddp/profiler/run.hpp"
#include "host_probe.hpp"
#include "io.hpp"
#include "job_manifest.hpp"
#include "progress.hpp"
#include "rank_text.hpp"
#include "verdict.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <future>
#include <list>

namespace ddp::launcher {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kStacksWait = std::chrono::seconds(20);        // for every hung rank's stacks
constexpr auto kMpirunLinger = std::chrono::seconds(1);       // for the last exit records after mpirun ends
constexpr double kTermAfterGraceS = 2, kKillAfterGraceS = 5;  // teardown: mpirun's group SIGTERM, then SIGKILL
constexpr int kPollMs = 50;

std::shared_ptr<spdlog::logger> logger() { return log::get("ddprun"); }
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A worker on the control socket.
struct Peer {
  int fd = -1;
  io::LineBuffer in;
  bool hello = false;
  int rank = -1;
  int64_t workerPid = -1, programPid = -1;
  std::string host;
  StepProgress at;  // the heartbeat: the step under way (or just done) and its phase
  bool stacksDone = false;
  std::optional<int64_t> droppedUs;        // the connection closed without an exit record (the worker or its host gone)
  Clock::time_point heard = Clock::now();  // the last line from it

  void send(const control::LauncherMessage& message) const {
    if (fd >= 0) io::writeAll(fd, control::format(message) + "\n");
  }
  // "in forward of step 5", "after step 5", "before its first step".
  std::string where() const {
    if (at.step < 0) return "before its first step";
    if (at.done()) return fmt::format("after step {}", at.step);
    return fmt::format("in {} of step {}", phaseName(*at.phase), at.step);
  }
};

class Job {
 public:
  Job(const LaunchPlan& plan, int controlFd, const JobSettings& settings, std::ostream& out, std::ostream& progress)
      : plan_(plan),
        layout_(plan.runDir),
        controlFd_(controlFd),
        s_(settings),
        out_(out),
        progressOut_(progress),
        localHost_(io::hostname()) {
    if (auto it = plan.rankEnv.find(std::string(env::kControlToken)); it != plan.rankEnv.end()) token_ = it->second;
  }
  ~Job() { log::setBeforeWrite(nullptr); }

  JobOutcome run();

 private:
  void begin();
  void pollOnce(io::SignalPipe& signals);
  void onSignal(int sig);
  void acceptPeers();
  void readPeer(Peer& peer);
  void watchLinks(Clock::time_point now);
  void onLine(Peer& peer, const std::string& line);
  void onHello(Peer& peer, const control::Hello& hello, const std::string& line);
  void onExit(Peer& peer, const RankExitRecord& record);
  void startRanks();
  void checkStart(Clock::time_point now);
  void beginTeardown(const std::string& reason);
  void escalateTeardown(Clock::time_point now);
  void watchdog(Clock::time_point now);
  bool findStalled();
  void killEverything();
  void killLeftovers();
  JobOutcome finish();
  void reportVerdict(const Verdict& v);
  void writeManifest();
  void profile();

  const LaunchPlan& plan_;
  const RunLayout layout_;
  int controlFd_;
  const JobSettings& s_;
  std::ostream& out_;
  std::ostream& progressOut_;
  std::string localHost_, token_;
  Process mpirun_;
  std::optional<ExitStatus> mpirunStatus_;
  std::optional<Clock::time_point> mpirunEnded_;
  std::list<Peer> peers_;
  std::map<int, Peer*> byRank_;
  std::map<int, RankExitRecord> records_;
  bool ranksStarted_ = false;
  bool tearingDown_ = false, mpirunTermSent_ = false, killSent_ = false;
  std::string teardownReason_;
  std::optional<int> interruptedBy_;
  Clock::time_point start_, teardownAt_, startedAt_, lastProgress_, nextPing_{};
  bool anyBeat_ = false;
  std::vector<int> hung_;  // the stalled ranks of a hang
  std::optional<Clock::time_point> stacksUntil_;
  int64_t hangDetectedUs_ = 0;
  std::string hangReason_;
  std::future<Versions> versions_;
  RunManifest manifest_;
  std::optional<ProgressDisplay> progress_;  // a profiled run's live progress
};

void Job::writeManifest() {
  try {
    writeFileAtomically(layout_.manifest(), jsonText(toJson(manifest_), 2) + "\n");
  } catch (const std::exception& e) {
    logger()->error("{}", e.what());
  }
}

// The manifest, the version probe, the live progress, and mpirun in a process group of its own
// (so that Ctrl-C reaches ddprun alone, and ddprun stops the job in order).
void Job::begin() {
  start_ = Clock::now();
  if (s_.profile && logger()->should_log(spdlog::level::info)) {
    progress_.emplace(plan_.np, programSteps(plan_.program), progressOut_, ::isatty(STDERR_FILENO) == 1);
    log::setBeforeWrite([this] { progress_->clear(); });  // the live progress line gives way
  }
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  SpawnOptions spawn;
  spawn.argv = plan_.argv;
  spawn.setEnv = plan_.mpirunEnv;
  for (const auto& [k, v] : plan_.rankEnv) spawn.setEnv[k] = v;
  spawn.newProcessGroup = true;
  spawn.killWithParent = true;
  spawn.stdinFd = devnull;
  mpirun_ = Process::spawn(spawn);
  ::close(devnull);
  logger()->debug("mpirun started (pid {})", mpirun_.pid());
  // After the spawn, not before: mpirun takes tens of milliseconds to start its first rank, and
  // run.json and the version probe's thread take ddprun's time while it loads (docs/launcher.md).
  manifest_ = startManifest(plan_, s_, localHost_);
  writeManifest();
  versions_ = std::async(std::launch::async, probeVersions, s_.mpirun);
}

JobOutcome Job::run() {
  io::SignalPipe signals({SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD});
  ::signal(SIGPIPE, SIG_IGN);
  begin();
  for (;;) {
    pollOnce(signals);
    const auto now = Clock::now();
    if (!mpirunStatus_ && (mpirunStatus_ = mpirun_.poll())) mpirunEnded_ = now;
    if (mpirunStatus_) {
      // mpirun is gone: what the workers still send is their last exit records.
      bool open = std::any_of(peers_.begin(), peers_.end(), [](const Peer& p) { return p.fd >= 0; });
      if (!open || now - *mpirunEnded_ > kMpirunLinger) break;
      continue;
    }
    checkStart(now);
    watchLinks(now);
    watchdog(now);
    if (progress_ && !tearingDown_) progress_->tick(seconds(now - start_));
    escalateTeardown(now);
  }
  killLeftovers();
  return finish();
}

void Job::pollOnce(io::SignalPipe& signals) {
  std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}, {controlFd_, POLLIN, 0}};
  std::vector<Peer*> polled;  // polled[i] is fds[i + 2]
  for (auto& p : peers_)
    if (p.fd >= 0) {
      fds.push_back({p.fd, POLLIN, 0});
      polled.push_back(&p);
    }
  if (::poll(fds.data(), fds.size(), kPollMs) < 0 && errno != EINTR)
    throw Error(fmt::format("poll: {}", std::strerror(errno)));
  for (int sig : signals.drain()) onSignal(sig);
  if (fds[1].revents) acceptPeers();
  for (size_t i = 0; i < polled.size(); ++i)
    if (fds[i + 2].revents && polled[i]->fd >= 0) readPeer(*polled[i]);
}

void Job::onSignal(int sig) {
  if (sig == SIGCHLD) return;
  if (sig == SIGUSR1 || sig == SIGUSR2) {
    mpirun_.signal(sig);
    return;
  }
  if (interruptedBy_ && sig == SIGINT) {
    logger()->warn("second SIGINT: killing every rank now");
    killEverything();
    return;
  }
  if (!interruptedBy_) interruptedBy_ = sig;
  beginTeardown(fmt::format("interrupted by {}", signalName(sig)));
}

void Job::acceptPeers() {
  for (;;) {
    int fd = ::accept4(controlFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    peers_.push_back(Peer{});
    peers_.back().fd = fd;
    readPeer(peers_.back());  // its hello is usually there already: no wait for the next poll
  }
}

void Job::readPeer(Peer& p) {
  char buf[65536];
  const ssize_t n = ::recv(p.fd, buf, sizeof buf, 0);
  if (n > 0) {
    p.heard = Clock::now();
    p.in.append(buf, static_cast<size_t>(n));
    while (p.fd >= 0) {
      auto line = p.in.next();
      if (!line) break;
      onLine(p, *line);
    }
  } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    ::close(p.fd);
    p.fd = -1;
    if (p.hello && !records_.count(p.rank)) {
      p.droppedUs = unixMicros();  // its worker was killed, or its whole host died or dropped off
      if (!tearingDown_)
        beginTeardown(fmt::format("rank {} on {}: its worker's connection to ddprun closed without an exit record",
                                  p.rank, p.host));
    }
  }
}

void Job::onLine(Peer& peer, const std::string& line) {
  const auto message = control::parseWorkerMessage(line);
  if (!peer.hello) {
    const auto* hello = message ? std::get_if<control::Hello>(&*message) : nullptr;
    onHello(peer, hello ? *hello : control::Hello{}, line);
    return;
  }
  if (!message) {
    logger()->debug("control: rank {} sent '{}'", peer.rank, line.substr(0, 80));
  } else if (const auto* beat = std::get_if<control::Beat>(&*message)) {
    peer.at = beat->progress;
    anyBeat_ = true;
    lastProgress_ = Clock::now();
    if (progress_) progress_->update(peer.rank, peer.at, seconds(lastProgress_ - start_));
  } else if (std::holds_alternative<control::StacksDone>(*message)) {
    peer.stacksDone = true;
  } else if (const auto* started = std::get_if<control::Started>(&*message)) {
    peer.programPid = started->pid;
  } else if (const auto* exit = std::get_if<control::Exit>(&*message)) {
    onExit(peer, exit->record);
  }
}

// A worker's first line must be its hello with the run's token, for a rank not yet here.
void Job::onHello(Peer& peer, const control::Hello& hello, const std::string& line) {
  if (hello.rank < 0 || hello.token != token_ || hello.rank >= plan_.np || byRank_.count(hello.rank)) {
    logger()->debug("control: refused '{}'", line.substr(0, 80));
    ::close(peer.fd);
    peer.fd = -1;
    return;
  }
  peer.hello = true;
  peer.rank = hello.rank;
  peer.workerPid = hello.pid;
  peer.host = hello.host;
  byRank_[peer.rank] = &peer;
  if (tearingDown_) peer.send(control::Terminate{});
  if (static_cast<int>(byRank_.size()) == plan_.np && !tearingDown_) startRanks();
}

// Every rank is here: the hosts are numbered in the order of their first rank.
void Job::startRanks() {
  std::map<std::string, int> order;
  for (const auto& [rank, p] : byRank_)
    if (!order.count(p->host)) order[p->host] = static_cast<int>(order.size());
  for (const auto& [rank, p] : byRank_) p->send(control::Start{order[p->host], static_cast<int>(order.size())});
  ranksStarted_ = true;
  startedAt_ = lastProgress_ = Clock::now();
  for (auto& [rank, p] : byRank_) p->heard = startedAt_;  // they say they are there from now on
  logger()->debug("all {} ranks reached ddprun after {:.3f} s", plan_.np, seconds(Clock::now() - start_));
}

void Job::onExit(Peer& peer, const RankExitRecord& record) {
  if (record.rank != peer.rank) return;
  records_[record.rank] = record;
  if (record.failedOnItsOwn() && !tearingDown_)
    beginTeardown(fmt::format("rank {} failed: {}", record.rank, record.exitStatus().describe()));
}

// Pings every worker each second, and takes a host none of whose running workers it has heard
// from for control::kLinkSilence as lost — while it hears from another host (ddprun was not frozen
// itself): its link is down, and no RST will come.
void Job::watchLinks(Clock::time_point now) {
  if (now < nextPing_) return;
  nextPing_ = now + control::kKeepalive;
  std::map<std::string, std::vector<Peer*>> byHost;
  for (auto& p : peers_) {
    if (!p.hello || p.fd < 0 || records_.count(p.rank)) continue;
    p.send(control::Ping{});
    byHost[p.host].push_back(&p);
  }
  // Before the start a worker only waits (the rendezvous may take long): silence means nothing.
  if (!ranksStarted_ || byHost.size() < 2) return;
  auto silent = [&](const Peer* p) { return now - p->heard >= control::kLinkSilence; };
  for (auto& [host, peers] : byHost) {
    if (!std::all_of(peers.begin(), peers.end(), silent)) continue;
    const bool othersHeard = std::any_of(byHost.begin(), byHost.end(), [&](const auto& other) {
      return other.first != host && !std::all_of(other.second.begin(), other.second.end(), silent);
    });
    if (!othersHeard) continue;
    std::vector<int> ranks;
    for (auto* p : peers) {
      ranks.push_back(p->rank);
      p->droppedUs = unixMicros() - static_cast<int64_t>(seconds(now - p->heard) * 1e6);
      ::close(p->fd);
      p->fd = -1;
    }
    beginTeardown(fmt::format("host {}: no word from rank(s) {} for {} s (its link to {} is down?)", host,
                              rankList(ranks), control::kLinkSilence.count(), localHost_));
  }
}

void Job::checkStart(Clock::time_point now) {
  if (ranksStarted_ || tearingDown_ || now - start_ <= std::chrono::duration<double>(s_.startTimeoutSeconds)) return;
  std::vector<int> missing;
  for (int r = 0; r < plan_.np; ++r)
    if (!byRank_.count(r)) missing.push_back(r);
  // A host none of whose ranks arrived never came up.
  std::vector<std::string> silentHosts;
  for (const auto& [host, ranks] : ranksByHost(plan_))
    if (std::none_of(ranks.begin(), ranks.end(), [&](int r) { return byRank_.count(r) > 0; }))
      silentHosts.push_back(fmt::format("{} (ranks {})", host, rankList(ranks)));
  beginTeardown(fmt::format(
      "rank(s) {} did not reach ddprun within {:.0f} s{} (hosts unreachable, or the worker "
      "could not connect back to {}?)",
      rankList(missing), s_.startTimeoutSeconds,
      silentHosts.empty() ? "" : fmt::format("; no rank of host(s) {} came up", fmt::join(silentHosts, ", ")),
      localHost_));
}

void Job::beginTeardown(const std::string& reason) {
  if (tearingDown_) return;
  tearingDown_ = true;
  teardownReason_ = reason;
  teardownAt_ = Clock::now();
  logger()->warn("{}: stopping the other ranks", reason);
  for (auto& p : peers_)
    if (p.hello && !records_.count(p.rank)) p.send(control::Terminate{});
}

// The workers stop their programs (SIGTERM, then SIGKILL after the grace period); mpirun's group
// gets SIGTERM a little later, and everything SIGKILL after that.
void Job::escalateTeardown(Clock::time_point now) {
  if (!tearingDown_) return;
  const double since = seconds(now - teardownAt_);
  if (!mpirunTermSent_ && since > s_.graceSeconds + kTermAfterGraceS) {
    mpirunTermSent_ = true;
    mpirun_.signalGroup(SIGTERM);
  }
  if (!killSent_ && since > s_.graceSeconds + kKillAfterGraceS) killEverything();
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

// Nothing of the job outlives ddprun on this host, whatever mpirun did.
void Job::killLeftovers() {
  for (auto& p : peers_) {
    if (p.fd >= 0) ::close(p.fd);
    p.fd = -1;
    if (p.host == localHost_ && p.programPid > 0) ::kill(-static_cast<pid_t>(p.programPid), SIGKILL);
  }
  mpirun_.signalGroup(SIGKILL);
}

// --timeout: when no rank has completed a step for the timeout, the ranks furthest behind are
// stalled (the others wait for them in a collective); their stacks are taken, then the job is
// torn down. A program that never wrote step timings is judged by its wall time alone.
void Job::watchdog(Clock::time_point now) {
  if (s_.timeoutSeconds <= 0 || !ranksStarted_ || tearingDown_) return;
  if (stacksUntil_) {
    const bool done = std::all_of(hung_.begin(), hung_.end(), [&](int r) {
      return !byRank_.count(r) || byRank_[r]->fd < 0 || byRank_[r]->stacksDone;
    });
    if (done || now > *stacksUntil_) {
      manifest_.hang = HangRecord{hung_, hangDetectedUs_, unixMicros()};
      beginTeardown(hangReason_);
    }
    return;
  }
  const auto limit = std::chrono::duration<double>(s_.timeoutSeconds);
  if (now - (anyBeat_ ? lastProgress_ : startedAt_) < limit) return;
  if (!findStalled()) return;
  hangDetectedUs_ = unixMicros();
  logger()->warn("no progress for {:g} s: taking the stacks of rank(s) {}", s_.timeoutSeconds, rankList(hung_));
  for (int r : hung_)
    if (byRank_.count(r)) byRank_[r]->send(control::Stacks{});
  stacksUntil_ = now + kStacksWait;
}

// Names the stalled ranks and why (hung_, hangReason_): the ranks not waiting in a collective
// while others wait for them, else every rank that has not ended.
bool Job::findStalled() {
  if (!anyBeat_) {
    for (int r = 0; r < plan_.np; ++r)
      if (!records_.count(r)) hung_.push_back(r);
    hangReason_ = fmt::format(
        "--timeout {:g}: no rank wrote step timings ({}), so the job is judged by its wall "
        "time alone, and it ran {:g} s",
        s_.timeoutSeconds, layout_.timingsDir(), s_.timeoutSeconds);
    return true;
  }
  std::vector<int> waiting, busy;
  for (const auto& [r, p] : byRank_)
    if (!records_.count(r)) (p->at.phase == Phase::kCommWait ? waiting : busy).push_back(r);
  if (!waiting.empty() && !busy.empty()) {
    hung_ = busy;
    std::string stalled;
    for (int r : busy) stalled += (stalled.empty() ? "" : ", ") + fmt::format("rank {} {}", r, byRank_[r]->where());
    hangReason_ = fmt::format(
        "no progress for {:g} s: {} while rank(s) {} wait in the gradient allreduce (comm_wait) "
        "of step {}",
        s_.timeoutSeconds, stalled, rankList(waiting), byRank_[waiting.front()]->at.step);
    return true;
  }
  hung_ = waiting.empty() ? busy : waiting;
  hangReason_ = fmt::format("no progress for {:g} s on any rank, all {} ({}): {}", s_.timeoutSeconds,
                            waiting.empty() ? "outside communication" : "waiting in a collective",
                            hung_.empty() ? "" : byRank_[hung_.front()]->where(),
                            waiting.empty() ? "every rank is stuck in its own work (a hang in every rank, or a rank "
                                              "that stopped writing timings)"
                                            : "a network or NCCL hang, or ranks calling different collectives");
  return true;
}

// The failure on ddprun's console: the hung ranks or the culprit with the end of its log, then
// the collateral and the lost ranks.
void Job::reportVerdict(const Verdict& v) {
  const std::string collateral = collateralLine(v);
  if (v.hang) {
    for (int r : hung_) {
      const auto& rec = v.records.at(r);
      logger()->error("rank {} on {} (pid {}) hung; its stacks: {}{}", r, rec.host, rec.programPid,
                      layout_.rankStacks(r), lastLines(layout_.rankLog(r), 5));
    }
    if (!collateral.empty()) logger()->error("{}", collateral);
  } else if (v.culprit) {
    const auto& rec = v.records.at(*v.culprit);
    std::string what = rec.exitStatus().describe();
    if (rec.signal && *rec.signal == SIGKILL)
      what += ": out of memory? (the kernel's OOM killer sends SIGKILL; see dmesg / the container's memory limit)";
    if (!rec.started) what += " (the program could not be started)";
    logger()->error("rank {} on {} (pid {}) failed first: {} after {:.1f} s", rec.rank, rec.host, rec.programPid, what,
                    rec.durationSeconds());
    const std::string log = layout_.rankLog(rec.rank);
    size_t found = 0;
    const std::string lines = lastLines(log, 20, &found);
    if (found > 0)
      logger()->error("the last {} lines of {}:{}", found, log, lines);
    else if (rec.host != localHost_)
      logger()->error("its log is {} on {}", log, rec.host);
    // The exception torch's @record wrote, unless the log's last lines show it already.
    const auto error = torchError(layout_.rankError(rec.rank));
    const auto message = error.substr(0, error.find('\n', 1));
    if (!error.empty() && lines.find(message.substr(std::min<size_t>(5, message.size()))) == std::string::npos)
      logger()->error("its Python exception, as torch's @record wrote it ({}):{}", layout_.rankError(rec.rank), error);
    for (int r : v.alsoFailed) {
      const auto& also = v.records.at(r);
      logger()->error("rank {} on {} also failed by itself, {:.1f} s after it: {}; its log: {}", r, also.host,
                      std::max(0.0, (also.endUnixUs - rec.endUnixUs) / 1e6), also.exitStatus().describe(),
                      layout_.rankLog(r));
    }
    if (!collateral.empty()) logger()->error("{}", collateral);
  } else if (interruptedBy_) {
    logger()->warn("stopped by {}: rank(s) {} were stopped", signalName(*interruptedBy_),
                   v.collateral.empty() ? "none" : rankList(v.collateral));
  }
  const auto launcherNote =
      mpirunStatus_ && mpirunStatus_->failed() ? fmt::format("{}: {}", plan_.launcher, mpirunStatus_->describe()) : "";
  for (const auto& line : lostLines(v, localHost_, plan_.launcher, launcherNote)) logger()->error("{}", line);
  if (!teardownReason_.empty() && !v.culprit && !v.lostHost && !interruptedBy_ && !v.hang)
    logger()->error("{}", teardownReason_);
}

void Job::profile() {
  try {
    auto report = profiler::reportRun(plan_.runDir, true);
    if (report.usable) out_ << "\n" << report.text << std::flush;
    for (const auto& p : report.problems) logger()->warn("profile: {}", p);
  } catch (const std::exception& e) {
    logger()->warn("profile: {}", e.what());
  }
}

JobOutcome Job::finish() {
  if (progress_) progress_->clear();  // the report and the verdict follow
  VerdictInput input{plan_.np, records_, {}, hung_, interruptedBy_, mpirunStatus_, {}, ranksByHost(plan_), {}};
  for (const auto& [r, p] : byRank_) {
    auto& known = input.known[r];
    known.host = p->host;
    known.workerPid = p->workerPid;
    known.programPid = p->programPid;
    if (p->droppedUs) input.dropped[r] = *p->droppedUs;
  }
  addHostProbes(input, plan_);
  const Verdict v = judgeRanks(input);
  for (const auto& [r, rec] : v.records) {
    try {
      writeFileAtomically(layout_.rankExit(r), jsonText(toJson(rec), 2) + "\n");
    } catch (const std::exception& e) {
      logger()->error("{}", e.what());
    }
    manifest_.ranks.push_back({r, rec.host, rec.programPid, *rec.status, rec.exitCode, rec.signal});
  }
  reportVerdict(v);
  manifest_.status = v.status;
  manifest_.endUnixUs = unixMicros();
  manifest_.exitCode = v.exitCode;
  manifest_.culprit = v.culprit;
  manifest_.lostHost = v.lostHost;
  if (!teardownReason_.empty()) manifest_.reason = teardownReason_;
  if (mpirunStatus_) manifest_.mpirunExit = mpirunStatus_->describe();
  if (versions_.valid() && versions_.wait_for(std::chrono::seconds(10)) == std::future_status::ready)
    manifest_.versions = versions_.get();
  writeManifest();
  if (s_.profile) profile();
  const double took = static_cast<double>(*manifest_.endUnixUs - manifest_.startUnixUs) / 1e6;
  logger()->log(v.exitCode == 0 ? spdlog::level::info : spdlog::level::err,
                "{} ranks {} in {:.1f} s (exit {}); run directory {}", plan_.np, runStatusName(v.status), took,
                v.exitCode, plan_.runDir);
  JobOutcome outcome;
  outcome.exitCode = v.exitCode;
  outcome.interrupted = interruptedBy_.has_value();
  outcome.summary = teardownReason_.empty() ? std::string(runStatusName(v.status)) : teardownReason_;
  outcome.np = plan_.np;
  if (v.lostHost) {
    outcome.summary = fmt::format("host {} lost", *v.lostHost);
    for (const auto& [host, ranks] : input.placement)
      if (std::count(ranks.begin(), ranks.end(), v.lostHostRanks.front()))
        outcome.lostHost = host;  // as the plan names it, to be left out
      else
        outcome.ranksLeft += static_cast<int>(ranks.size());
  }
  return outcome;
}

}  // namespace

JobOutcome runJob(const LaunchPlan& plan, int controlFd, const JobSettings& settings, std::ostream& out,
                  std::ostream& progress) {
  ::fcntl(controlFd, F_SETFL, ::fcntl(controlFd, F_GETFL) | O_NONBLOCK);
  Job job(plan, controlFd, settings, out, progress);
  return job.run();
}

}  // namespace ddp::launcher
