#pragma once
// The projection's replay (docs/projection.md, "The model"): a run's steps as each rank's CPU work
// and its gradient buckets, and one step played again on a shape — the compute shared among the
// ranks that share cores, the buckets' transfers one after another on the network.

#include "ddp/profiler/run.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp::profiler::detail {

// Ranks that share cores (by index into the run's ranks, in rank order): each group's members
// and how many cores they have together. A rank alone on its cores is a group of its own.
struct CoreGroups {
  std::vector<int> groupOf;                          // per rank
  std::vector<int> cores;                            // per group
  std::vector<std::vector<size_t>> members() const;  // per group, its ranks
  bool shared() const;                               // some group has more members than cores
};

// From the utilisation samples: ranks of one host whose CPUs (affinity) overlap share them all.
// Without samples every rank is alone.
CoreGroups coreGroups(const RunData& run);
// What the projection assumes of them, for its list of assumptions ("ranks 0, 1 share 1 core ...").
std::string sharingAssumption(const CoreGroups& groups);
// Every rank alone (ranks that do not share: GPU ranks, or a run without samples).
CoreGroups aloneGroups(int ranks);
// The run's sharing as a target of CPU ranks has it (the run's ranks per core kept): the same
// ranks, consecutive ones grouped as many as in the run's most common group, with its cores.
CoreGroups carriedGroups(const CoreGroups& run);

struct RankStep {
  double stepMs = 0, dataMs = 0, backwardMs = 0, commWaitMs = 0, optimizerMs = 0;
  double startOffsetMs = 0;             // after the step's first rank started it
  double backwardStartMs = 0;           // from the step's start: data, forward and the glue between
  std::vector<double> launchMs, endMs;  // per bucket (in the step's bucket order), from the step's start
  // The same as CPU work: what the rank would take with its cores to itself (processor sharing
  // undone over the step's CPU phases of the ranks it shares cores with).
  double preWorkMs = 0, backwardWorkMs = 0, optimizerWorkMs = 0;
  std::vector<double> launchWorkMs;         // per bucket: backward's work done when it was launched
  std::optional<PhaseArray<double>> cpuMs;  // the record's CPU time per phase, when it has one
};

struct StepProfile {
  std::vector<RankStep> ranks;
  std::vector<double> transferMs;  // per bucket: its time on the wire as the network saw it
  std::vector<size_t> order;       // the buckets in the order they became ready
};

struct RunProfile {
  std::vector<StepProfile> steps;
  std::vector<int> bucketIds;
  std::vector<double> bucketBytes;
  int ranks = 0;
  int64_t samplesPerStep = 0;
  CoreGroups groups;
  bool cpuTimes = false;  // CPU ranks' work is their recorded CPU time (cpu_ms), not inferred
};

// Steps every rank recorded with the same gradient buckets (the first skipped as warm-up when
// there are more than 3, as in the report). CPU ranks share their cores as coreGroups says; GPU
// ranks compute alone.
RunProfile profileRun(const RunData& run, bool cpuRanks);

struct Replayed {
  std::vector<double> stepMs, waitMs;  // per rank
};

// One step on a shape: every rank from the step's start, its data work as measured and the rest
// of its compute × k, each group's ranks sharing its cores (a rank computes at cores / ranks
// computing when more of them compute than there are cores); buckets ready when the last rank
// reaches its (scaled) work into backward at launch, the allreduces one after another on the
// network, each rank waiting at the end of backward for the last one, then its optimizer.
Replayed replay(const StepProfile& s, double k, const std::vector<double>& transferMs, const CoreGroups& groups,
                double skew = 1.0);

// The target's transfers from the run's. What the model misses of a measured transfer (the run's
// noise, a link that carries the job's buckets a little faster or slower than ddpbench's sizes)
// is carried as the anchoring carries the step's: shrunk with the communication onto a faster
// target (every transfer scaled by the model's time there over its time on the run's own shape),
// kept as it was onto a slower one (each bucket's transfer plus the model's difference): a few
// percent of a fast link's time is not a few percent of a 50 times slower link's. Except where the
// step's buckets together took longer than the model on the run's own link: that excess is time
// spent outside the link (ranks that reach the ring at different times, a CPU the ring's threads
// wait for), and onto a slower target the link's longer transfer hides it, up to the time it adds
// — the early ranks' first chunks cross the link while the late ones arrive (docs/projection.md).
// Summed over the buckets, because the buckets share the link: how a ring's time splits between
// two buckets in flight together is not the model's.
struct Transfers {
  std::vector<double> hereMs;   // per bucket, the model on the run's own shape
  std::vector<double> thereMs;  // per bucket, the model on the target
  // The model's time on the target over on the run's own shape (1 without buckets).
  double scale() const;
  // The target's transfer of each bucket from the measured ones.
  std::vector<double> of(const std::vector<double>& measuredMs) const;
};

}  // namespace ddp::profiler::detail
