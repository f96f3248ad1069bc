#pragma once
// Live progress of a profiled run on ddprun's console (docs/launcher.md): steps/s of the job
// (its slowest rank), the ETA when the step count is known, and the rank that holds the others
// up most. Ranks of a synchronous job are never more than a step apart, so "lagging" means: seen
// still computing a step while other ranks already wait for it in comm_wait. Fed from the
// workers' heartbeats; pure, so that it is tested without a job.

#include "ddp/common/step_record.hpp"

#include <deque>
#include <ostream>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace ddp::launcher {

class ProgressMeter {
 public:
  // totalSteps: the program's --steps, when it has one.
  ProgressMeter(int ranks, std::optional<long long> totalSteps) : ranks_(ranks), total_(totalSteps) {}
  // Rank `rank` is at `where` (its heartbeat; step 0-based); t in seconds.
  void update(int rank, const StepProgress& where, double t);
  // "step 120/200 (60 %), 8.1 steps/s, ETA 0:10; the others wait most for rank 2 (75 % of waits)";
  // none before every rank has reported a step.
  std::optional<std::string> line(double t);

 private:
  int ranks_;
  std::optional<long long> total_;
  std::map<int, long long> completed_;                 // rank -> steps completed
  std::map<int, StepProgress> at_;                     // rank -> where it was last heard
  std::map<int, double> heldUp_;                       // rank -> decaying count of waits on it
  double lastDecay_ = 0;
  std::deque<std::pair<double, long long>> history_;   // (t, job's completed steps), the last ~10 s
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
