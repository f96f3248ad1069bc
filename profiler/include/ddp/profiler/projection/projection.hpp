#pragma once
// `ddprof project RUN --to TARGET...`: a measured run projected onto other instance types and
// host counts — step time with its parts, throughput, scaling efficiency, cost — by replaying
// the run's own steps (compute per phase, bucket-ready times, measured transfers) against a
// model of the target's ring allreduce (docs/projection.md).

#include "ddp/profiler/projection/instances.hpp"
#include "ddp/profiler/run.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ddp::profiler {

// A link of a target: its kind (LinkKind) and its bandwidth each way, when known.
struct TargetLink {
  std::string kind;
  std::optional<double> bytesPerS;
  std::string source;     // where the bandwidth comes from: "given", the catalog entry's source
  bool measured = false;  // the bus bandwidth of an allreduce measured on the target (bench=)
};

// What to project onto: an instance name or family, or an explicit shape
// ("hosts=2,gpus=8,intra=nvlink:150GB/s,inter=erdma:25gbit,gpu=A100").
struct Target {
  std::string text;  // as given
  std::optional<Instance> instance;
  int hosts = 1, ranksPerHost = 1;
  std::optional<TargetLink> intra, inter;
  std::string device;           // a catalog GPU ("NVIDIA A100"), "cpu", or "" for the source's own
  std::string deviceWhere;      // how the device was chosen
  std::string benchFile;        // bench=FILE: the allreduce measured on the target (ddpbench, nccl-tests)
  std::vector<BenchRow> bench;  // its allreduce rows
};

// Parses a target; `sourceRanks` is the ranks a bare family gets (the measured run's). Throws
// ConfigError with one line naming the target and what is wrong (a missing field, an unknown
// field, kind, GPU or family with the nearest valid one, a bandwidth that is not one).
Target parseTarget(const std::string& text, int sourceRanks);

// "25gbit", "100mbit" (bits/s, 1000-based, as tc writes them), "150GB/s", "800MB/s" (bytes/s):
// bytes per second, or ConfigError naming `what`.
double parseBandwidth(const std::string& text, const std::string& what);

// Time of a ring allreduce of `bytes` over `ranks` ranks on `hosts` hosts (ms): the latency of
// its 2(n-1) steps (2(h-1) of them between hosts) plus bytes x 2(n-1)/n / bandwidth.
double ringAllreduceMs(double bytes, int ranks, int hosts, double bytesPerS, double intraStepUs, double interStepUs,
                       double baseUs);
// The bus bandwidth factor of a ring allreduce, 2(n-1)/n.
double ringFactor(int ranks);

// ddpbench's allreduce rows in a run directory as a latency and a link: the latency is the median,
// over the rows of its small sizes, of the line through the row and the largest size (its rows'
// median time) at 0 bytes; the link is the largest size's bus bytes over its time past that
// latency. The sizes between are left out: a link with a burst allowance (tc tbf, a cloud
// network's credits) carries them partly at line rate, which no line through them describes.
// None with fewer than two sizes, or a largest under twice the smallest.
struct BenchFit {
  double latencyMs = 0, busGbps = 0;
  int64_t smallest = 0, largest = 0;
};
std::optional<BenchFit> fitAllreduceBench(const std::vector<BenchRow>& rows);
std::optional<BenchFit> fitAllreduceBench(const RunData& run);
// The time of an allreduce of `bytes` as measured (ddpbench's rows, or nccl-tests'; ms): its
// rows' median at each size, linear between the two sizes around `bytes`; none outside the sizes
// it measured.
std::optional<double> benchAllreduceMs(const std::vector<BenchRow>& rows, double bytes);
// An allreduce of `bytes` over `ranks` on a measured link (ms): its fit's latency and link,
// or its own time at that size where that is off the fit by more than half the latency (how far one
// size moves between runs): a burst allowance carries sizes that fit in it faster than the link's
// rate. None when the rows have no fit.
std::optional<double> measuredAllreduceMs(const std::vector<BenchRow>& rows, double bytes, int ranks);

struct ProjectOptions {
  std::vector<std::string> targets;                    // as given to --to
  std::vector<std::pair<std::string, double>> prices;  // target text (or "run") -> price per instance-hour
  std::optional<int64_t> datasetSize;
  std::optional<double> computeScale;  // target compute time / source compute time, when given
  bool fp16 = false;                   // GPU ratios from FP16 tensor throughput instead of FP32
};

// The measured communication the model is calibrated on (docs/projection.md, "Calibration").
struct Calibration {
  int buckets = 0;                 // gradient buckets per step
  double bytesPerStep = 0;         // their bytes
  double transferMsPerStep = 0;    // the network's busy time per step, median over the steps
  double latencyMs = 0;            // of one allreduce on the run's shape
  bool latencyFitted = false;      // from ddpbench's times at several sizes (else the catalog's)
  double msPerByte = 0;            // transfer per step = buckets x latency + bytes x msPerByte
  double busbwGbps = 0;            // of the run's gradient allreduces: factor / msPerByte
  std::optional<double> linkGbps;  // the run's link: ddpbench's busbw, else the catalog's
  std::string linkSource;
  double hostSecondsPerByte = 0;  // what the job's transfers took beyond the link, per bus byte
  double latencyScale = 1;        // the fitted intercept over the catalog's latency for the run's shape
  double replayErrorMedian = 0;   // |replayed - measured| / measured step, before anchoring (median over steps)
};

struct Projection {
  Target target;
  int ranks = 0;
  double computeScale = 1;
  std::string computeWhy;
  double busbwGbps = 0;    // the gradient allreduces' bus bandwidth the model gives the target
  std::string bottleneck;  // the slowest link the ring crosses ("erdma 3.1 GB/s")
  double stepMs = 0, computeMs = 0, exposedMs = 0, commMs = 0;  // medians; comm: transfers per step
  int64_t samplesPerStep = 0;
  double samplesPerSecond = 0, efficiency = 0;  // per-rank throughput against the measured run's
  std::string dominant;                         // "compute (72 % of the step)"
  std::optional<double> pricePerHour, costPerHour, costPerMillionSamples, epochHours, costPerEpoch;
};

struct ProjectionReport {
  std::string dir;
  int ranks = 0, hosts = 0;
  std::string device;  // the run's: a catalog GPU, "GPU" (model unknown) or "cpu"
  double stepMs = 0, computeMs = 0, exposedMs = 0;
  int64_t samplesPerStep = 0;
  double samplesPerSecond = 0;
  std::optional<double> pricePerHour, costPerHour, costPerMillionSamples;
  size_t steps = 0;
  Calibration calibration;
  std::vector<Projection> targets;
  std::optional<int64_t> datasetSize;
  std::vector<std::string> assumptions;  // every figure and rule used, with its source
  std::vector<std::string> verdict;
};

// Why the run cannot be projected (no step timings, no gradient allreduce records, one rank), if not.
std::optional<std::string> whyNotProjectable(const RunData& run);
// Throws ConfigError with whyNotProjectable's reason, or naming a target that cannot be modelled.
ProjectionReport projectRun(const RunData& run, const ProjectOptions& options);

nlohmann::json projectionJson(const ProjectionReport& p);
std::string renderProjectionText(const ProjectionReport& p);
std::string renderProjectionMarkdown(const ProjectionReport& p);
std::string renderProjectionHtml(const ProjectionReport& p);
// The projected step-time breakdown per target, as an inline SVG (for report.html and compare).
std::string projectionChart(const ProjectionReport& p);

}  // namespace ddp::profiler
