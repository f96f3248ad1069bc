#pragma once
// Live progress of a profiled run on ddprun's console (docs/launcher.md): steps/s of the job
// (its slowest rank), the ETA when the step count is known, and the rank that holds the others
// up. Each heartbeat is a sample of where a rank is; in a synchronous job the others wait (in
// comm_wait) for the slowest, so the rank seen waiting least while the others are seen waiting
// most is the one they wait for. Shares of samples, not the order in which the ranks' samples
// arrive: the workers sample independently, so a step's samples of different ranks rarely line
// up. Fed from the workers' heartbeats; pure, so that it is tested without a job.

#include "ddp/common/step_record.hpp"

#include <deque>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace ddp::launcher {

// The step count the ETA needs: the program's --steps, when it has one (train does).
std::optional<long long> programSteps(const std::vector<std::string>& program);

class ProgressMeter {
 public:
  // totalSteps: the program's --steps, when it has one.
  ProgressMeter(int ranks, std::optional<long long> totalSteps) : ranks_(ranks), total_(totalSteps) {}
  // Rank `rank` is at `where` (its heartbeat; step 0-based); t in seconds.
  void update(int rank, const StepProgress& where, double t);
  // "step 120/200 (60 %), 8.1 steps/s, ETA 0:10; the others wait for rank 2 (it waits 4 % of the
  // time, they 85 %)"; none before every rank has reported a step.
  std::optional<std::string> line(double t) const;

 private:
  std::string laggard() const;
  int ranks_;
  std::optional<long long> total_;
  std::map<int, long long> completed_;  // rank -> steps completed
  struct Seen {
    double waiting = 0, samples = 0;  // decaying counts of its heartbeats, in comm_wait and in all
  };
  std::map<int, Seen> seen_;
  double lastDecay_ = 0;
  std::deque<std::pair<double, long long>> history_;  // (t, job's completed steps), the last ~10 s
};

// The meter on a terminal (ddprun's stderr): one line redrawn every second (the cursor left at
// its start, so rank output overwrites it), otherwise a plain line every 10 s; the first after 3 s.
class ProgressDisplay {
 public:
  ProgressDisplay(int ranks, std::optional<long long> totalSteps, std::ostream& out, bool terminal)
      : meter_(ranks, totalSteps), out_(out), terminal_(terminal) {}
  void update(int rank, const StepProgress& where, double t) { meter_.update(rank, where, t); }
  // Draws the line when it is due; t in seconds since the job started.
  void tick(double t);
  // Removes the line from a terminal, before another message is printed.
  void clear();

 private:
  ProgressMeter meter_;
  std::ostream& out_;
  bool terminal_;
  bool shown_ = false;
  double next_ = 3;
};

}  // namespace ddp::launcher
