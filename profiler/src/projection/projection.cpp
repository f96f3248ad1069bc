// `ddprof project`: the model (docs/projection.md). A run's own steps are replayed twice — on
// its own shape with its measured transfers, and on the target with transfers the ring model
// scales from them — and the target's step is the measured step plus the difference, so the
// replay's own error cancels and a projection onto the run's own shape gives back its step.
#include "ddp/profiler/projection/projection.hpp"

#include "ddp/common/error.hpp"
#include "ddp/profiler/timing/analysis.hpp"
#include "projection/replay.hpp"
#include "projection/target.hpp"
#include "stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace ddp::profiler {
namespace {

using detail::completeLink;
using detail::CoreGroups;
using detail::lower;
using detail::median;
using detail::profileRun;
using detail::replay;
using detail::Replayed;
using detail::RunProfile;

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// ---- the shapes' links and latency --------------------------------------------------------

// How far a link's measured time per byte may be off (ddpbench's repeatability on this project's
// simulated links: 2-5 % between runs, docs/projection.md).
constexpr double kLinkNoise = 0.10;

struct Shape {
  int ranks = 1, hosts = 1;
  std::string intraKind, interKind;
};

double latencyMs(const Shape& s) {
  if (s.ranks < 2) return 0;
  const double intra = findLinkKind(s.intraKind, "link").stepLatencyUs;
  const double inter = s.hosts > 1 ? findLinkKind(s.interKind, "link").stepLatencyUs : 0;
  const auto& m = collectiveModel();
  return (m.baseLatencyUs + 2.0 * (s.ranks - s.hosts) * intra + 2.0 * (s.hosts - 1) * inter) / 1000.0;
}

bool isGpu(const std::string& device) { return device != "cpu"; }

std::string runDevice(const RunData& run) {
  if (const auto instance = recordedInstance(run.instance)) return deviceName(instance->family);
  for (const auto& [rank, source] : run.sources)
    if (source.device.rfind("cuda", 0) == 0) return "GPU";
  if (commandOption(run.command, "--backend").value_or("") == "nccl" || (run.nccl && run.nccl->edgeLines > 0))
    return "GPU";
  return "cpu";
}

// The run's own link kinds: from NCCL's transports on GPUs, loopback and sockets for CPU ranks.
Shape runShape(const RunData& run, int ranks, const std::string& device) {
  Shape s{ranks, std::max<int>(1, static_cast<int>(run.hosts.size())), "loopback", "socket"};
  if (isGpu(device)) {
    const auto instance = recordedInstance(run.instance);
    const std::string link = instance ? instance->family.linkClass() : "";
    s.intraKind = link == "nvlink" || link == "nvswitch" ? "nvlink" : "pcie";
    const std::string network = run.nccl && run.nccl->network ? lower(*run.nccl->network) : "";
    s.interKind = network == "ib (erdma)" ? "erdma" : network == "ib" ? "ib" : "socket";
  }
  return s;
}

std::string gbps(double bytesPerS) { return fmt::format("{:.3g} GB/s", bytesPerS / 1e9); }

}  // namespace

// ddpbench's sizes whose time is nearly all latency: their bytes take under this share of the
// smallest size's time at the pace of the largest.
constexpr double kSmallShare = 0.10;
// How far one size's time in ddpbench moves from run to run on this project's simulated links: as
// much as half the latency (docs/projection.md, "Calibration").
constexpr double kBenchRowNoise = 0.5;

double ringFactor(int ranks) { return ranks < 2 ? 0 : 2.0 * (ranks - 1) / ranks; }

double ringAllreduceMs(double bytes, int ranks, int hosts, double bytesPerS, double intraStepUs, double interStepUs,
                       double baseUs) {
  if (ranks < 2) return 0;
  const double latencyUs = baseUs + 2.0 * (ranks - hosts) * intraStepUs + 2.0 * (hosts - 1) * interStepUs;
  return latencyUs / 1000.0 + bytes * ringFactor(ranks) / bytesPerS * 1000.0;
}

namespace {

// Each size's times (ms) in ddpbench's rows.
std::map<int64_t, std::vector<double>> timesBySize(const std::vector<BenchRow>& rows) {
  std::map<int64_t, std::vector<double>> timesMs;
  for (const auto& row : rows) timesMs[row.bytes].push_back(row.timeUs / 1000.0);
  return timesMs;
}

}  // namespace

std::optional<BenchFit> fitAllreduceBench(const RunData& run) { return fitAllreduceBench(allreduceBench(run)); }

std::optional<double> benchAllreduceMs(const std::vector<BenchRow>& rows, double bytes) {
  const auto timesMs = timesBySize(rows);
  const auto above = timesMs.lower_bound(static_cast<int64_t>(std::ceil(bytes)));
  if (above == timesMs.end()) return std::nullopt;
  if (static_cast<double>(above->first) == bytes) return median(above->second);
  if (above == timesMs.begin()) return std::nullopt;
  const auto below = std::prev(above);
  const double b0 = static_cast<double>(below->first), b1 = static_cast<double>(above->first);
  const double t0 = median(below->second), t1 = median(above->second);
  return t0 + (bytes - b0) / (b1 - b0) * (t1 - t0);
}

std::optional<BenchFit> fitAllreduceBench(const std::vector<BenchRow>& rows) {
  const auto timesMs = timesBySize(rows);
  if (timesMs.size() < 2 || timesMs.rbegin()->first < 2 * timesMs.begin()->first) return std::nullopt;
  BenchFit f;
  f.smallest = timesMs.begin()->first, f.largest = timesMs.rbegin()->first;
  double largestBusGB = 0;  // the largest size's bus bytes (busbw x time: the same in each of its rows)
  for (const auto& row : rows)
    if (row.bytes == f.largest) largestBusGB = row.busbwGbps * row.timeUs / 1e6;
  const double bl = static_cast<double>(f.largest), tl = median(timesMs.rbegin()->second);
  const double smallestMs = median(timesMs.begin()->second);
  // Each row of a small size (its bytes at the largest's pace under 10 % of the smallest's time,
  // the smallest always) gives the line through it and the largest at 0 bytes; their median is
  // the latency: at a few bytes each row is nearly its time, and one row alone is noisy.
  std::vector<double> intercepts;
  for (const auto& [bytes, times] : timesMs) {
    const double b = static_cast<double>(bytes);
    if (bytes == f.largest || (bytes != f.smallest && b * tl / bl > kSmallShare * smallestMs)) continue;
    for (double t : times) intercepts.push_back(std::clamp((t * bl - tl * b) / (bl - b), 0.0, t));
  }
  f.latencyMs = median(intercepts);
  if (tl <= f.latencyMs) return std::nullopt;
  f.busGbps = largestBusGB / ((tl - f.latencyMs) / 1000.0);
  return f;
}

std::optional<double> measuredAllreduceMs(const std::vector<BenchRow>& rows, double bytes, int ranks) {
  const auto fit = fitAllreduceBench(rows);
  if (!fit) return std::nullopt;
  const double line = fit->latencyMs + bytes * ringFactor(ranks) / (fit->busGbps * 1e9) * 1000.0;
  const auto at = benchAllreduceMs(rows, bytes);
  return at && std::abs(*at - line) > kBenchRowNoise * fit->latencyMs ? *at : line;
}

namespace {

std::optional<std::string> whyNot(const RunData& run, const RunProfile& profile) {
  if (run.timings.empty()) return fmt::format("{}: no step timings to project", run.dir);
  if (run.timings.size() < 2)
    return fmt::format("{}: one rank; the projection needs a run of 2 ranks or more", run.dir);
  if (profile.steps.empty())
    return fmt::format(
        "{}: no gradient allreduce records in the timings (collectives with a bucket); the projection "
        "replays them (ddp::DistributedDataParallel and ddprun's Python instrumentation write them)",
        run.dir);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> whyNotProjectable(const RunData& run) { return whyNot(run, profileRun(run, false)); }

namespace {

// The measured step and its parts, and each step replayed on the run's own shape.
std::vector<Replayed> measure(const RunProfile& profile, ProjectionReport& out) {
  std::vector<double> stepMs, waitMs, replayError;
  std::vector<Replayed> own;
  for (const auto& s : profile.steps) {
    own.push_back(replay(s, 1.0, s.transferMs, profile.groups));
    std::vector<double> step, wait;
    for (const auto& r : s.ranks) step.push_back(r.stepMs), wait.push_back(r.commWaitMs);
    stepMs.push_back(mean(step));
    waitMs.push_back(mean(wait));
    if (stepMs.back() > 0) replayError.push_back(std::abs(mean(own.back().stepMs) - stepMs.back()) / stepMs.back());
  }
  out.stepMs = median(stepMs);
  out.exposedMs = mean(waitMs) / std::max(1e-9, mean(stepMs)) * out.stepMs;
  out.computeMs = out.stepMs - out.exposedMs;
  out.samplesPerSecond = out.stepMs > 0 ? static_cast<double>(out.samplesPerStep) * 1000.0 / out.stepMs : 0;
  out.calibration.replayErrorMedian = median(replayError);
  return own;
}

// The run's own link: ddpbench's measurement in the run directory (`fit`: its rows read as a
// latency and a link, when it has several sizes), else the catalog's link of its instance (one
// host).
void runLink(const RunData& run, const std::optional<BenchFit>& fit, const Shape& source, Calibration& cal) {
  // Past the latency where ddpbench has several sizes; else its largest size's bus bandwidth.
  const auto bench = fit ? std::make_optional(std::make_pair(fit->largest, fit->busGbps)) : largestAllreduceBusbw(run);
  if (bench && bench->second > 0) {
    cal.linkGbps = bench->second;
    cal.linkSource = fmt::format(
        "ddpbench's allreduce in the run directory, {:.3g} GB/s bus bandwidth at {} B{} "
        "(measured: preferred to the catalog)",
        bench->second, bench->first, fit ? " past the latency" : "");
    return;
  }
  if (const auto instance = recordedInstance(run.instance);
      instance && source.hosts == 1 && !instance->family.intraLink.empty()) {
    const auto& link = findLink(instance->family.intraLink);
    cal.linkGbps = link.gbytesPerS * collectiveModel().gpuLinkEfficiency;
    cal.linkSource =
        fmt::format("the catalog's {} for {} x NCCL's efficiency: {}", link.link, instance->family.family, link.source);
    return;
  }
  cal.linkSource =
      "unknown (no ddpbench result in the run directory, no catalog link): all of the measured time per "
      "byte counts as the host's, and a target adds its links on top";
}

// The network's busy time per step (each bucket from its ready time, or the previous one's end,
// to its end: buckets in flight together share the link, so only their sum is meaningful)
// against the step's gradient bytes, after the latency of its allreduces.
void calibrate(const RunData& run, const RunProfile& profile, const Shape& source, Calibration& cal) {
  cal.buckets = static_cast<int>(profile.bucketIds.size());
  cal.bytesPerStep = std::accumulate(profile.bucketBytes.begin(), profile.bucketBytes.end(), 0.0);
  std::vector<double> busy;
  for (const auto& s : profile.steps) busy.push_back(std::accumulate(s.transferMs.begin(), s.transferMs.end(), 0.0));
  cal.transferMsPerStep = median(busy);
  const double sourceLatencyMs = latencyMs(source);
  cal.latencyMs = sourceLatencyMs;
  const auto fit = fitAllreduceBench(run);
  if (fit) {
    cal.latencyFitted = true;
    cal.latencyMs = fit->latencyMs;
    cal.latencyScale = sourceLatencyMs > 0 ? fit->latencyMs / sourceLatencyMs : 1.0;
  }
  // Transfers no longer than the latency leave no bandwidth to measure (0: unknown).
  const double overLatencyMs = cal.transferMsPerStep - cal.buckets * cal.latencyMs;
  cal.msPerByte = std::max(1e-15, overLatencyMs / cal.bytesPerStep);
  const double busSecondsPerByte = cal.msPerByte / 1000.0 / ringFactor(profile.ranks);
  cal.busbwGbps = overLatencyMs > 0 ? 1.0 / busSecondsPerByte / 1e9 : 0;
  runLink(run, fit, source, cal);
  // The host's cost is what the job's transfers took beyond the link, less the link's own noise
  // (kLinkNoise of its time): on a slow link, a few percent of its time is more than a fast
  // link's whole time per byte, and would be carried to it as a host cost.
  cal.hostSecondsPerByte =
      std::max(0.0, busSecondsPerByte - (cal.linkGbps ? (1 + kLinkNoise) / (*cal.linkGbps * 1e9) : 0.0));
}

std::vector<std::string> runAssumptions(const Calibration& cal) {
  return {
      fmt::format("collective: {}", collectiveModel().source),
      fmt::format("calibration: {} gradient bucket(s), {:.3g} MB per step, on the network {:.3f} ms per step "
                  "(median): {:.3f} ms latency per allreduce ({}) + {}",
                  cal.buckets, cal.bytesPerStep / 1e6, cal.transferMsPerStep, cal.latencyMs,
                  cal.latencyFitted ? "fitted to ddpbench's times at several sizes in the run directory"
                                    : "the catalog's: no ddpbench result of several sizes in the run directory",
                  cal.busbwGbps > 0
                      ? fmt::format("{:.3g} ms/MB, i.e. {:.3g} GB/s bus bandwidth", cal.msPerByte * 1e6, cal.busbwGbps)
                      : std::string("nothing: the transfers took no longer than that latency, so no bus "
                                    "bandwidth of the run's own is measurable")),
      fmt::format("the run's link: {}", cal.linkSource),
      "kept as measured: samples per rank per step (the batch per rank), the data phase (it runs on the host's CPU), "
      "bucket sizes and the order in which they become ready during backward",
      "the target's step = its replay + what the replay on the run's own shape missed (per step and rank; scaled down "
      "with the communication when the target's is shorter), so a projection onto the run's own shape gives back its "
      "measured step"};
}

// `cpuWork`: what a CPU run's compute kept on a GPU target is (empty for a GPU run).
// Two catalog GPUs' peak figures (FP16 tensor or FP32), when both have one.
struct PeakRatio {
  const GpuSpec &a, &b;
  double ta, tb;
};
std::optional<PeakRatio> peakRatio(const std::string& runDevice, const std::string& target, bool fp16) {
  if (runDevice.rfind("NVIDIA ", 0) != 0 || target.rfind("NVIDIA ", 0) != 0) return std::nullopt;
  const auto& a = findGpu(runDevice, "run");
  const auto& b = findGpu(target, "target");
  const auto ta = fp16 ? a.fp16Tflops : a.fp32Tflops, tb = fp16 ? b.fp16Tflops : b.fp32Tflops;
  if (!ta || !tb) return std::nullopt;
  return PeakRatio{a, b, *ta, *tb};
}

void computeRatio(Projection& p, const std::string& runDevice, const ProjectOptions& options,
                  const std::string& cpuWork) {
  const auto& t = p.target;
  if (options.computeScale) {
    p.computeScale = *options.computeScale;
    p.computeWhy = fmt::format("x{:.3g}, given with --compute-scale", p.computeScale);
  } else if (t.device == runDevice) {
    p.computeWhy = fmt::format("x1: the same device ({})", t.device);
  } else if (const auto peaks = peakRatio(runDevice, t.device, options.fp16)) {
    const auto& [a, b, ta, tb] = *peaks;
    p.computeScale = ta / tb;
    p.computeWhy = fmt::format(
        "x{:.3g}: peak {} TFLOPS {} {:g} -> {} {:g} (the catalog's figures, each with its source; real "
        "models gain less than the peak ratio)",
        p.computeScale, options.fp16 ? "FP16 tensor" : "FP32", a.gpu, ta, b.gpu, tb);
  } else {
    p.computeWhy = fmt::format(
        "x1, kept as measured{}: ddprof has no ratio between {} and {}; give --compute-scale "
        "(target compute time / measured)",
        isGpu(t.device) && !cpuWork.empty() ? fmt::format(" (each rank's own CPU work: {})", cpuWork) : "", runDevice,
        t.device);
  }
}

// The target's communication against the run's: the slowest link its ring crosses, the run's
// host cost per byte when the target is the same kind of device, the latency of its ring steps.
// Notes what it used.
detail::Transfers communication(Projection& p, const Calibration& cal, const Shape& source, bool sameClass,
                                const std::vector<double>& bucketBytes, const std::vector<BenchRow>& runBench,
                                std::string& notes) {
  const auto& t = p.target;
  const double efficiency = isGpu(t.device) ? collectiveModel().gpuLinkEfficiency : 1.0;
  std::optional<double> linkBytesPerS;
  std::vector<std::string> linkNotes;
  for (const auto* link : {t.ranksPerHost > 1 && t.intra ? &*t.intra : nullptr, t.hosts > 1 ? &*t.inter : nullptr}) {
    if (!link || !link->bytesPerS) continue;
    const double effective = *link->bytesPerS * (link->measured ? 1.0 : efficiency);
    if (!linkBytesPerS || effective < *linkBytesPerS) {
      linkBytesPerS = effective;
      p.bottleneck = fmt::format("{} {}", link->kind, gbps(effective));
    }
    linkNotes.push_back(fmt::format(
        "{} {}{} ({})", link->kind, gbps(*link->bytesPerS),
        effective < *link->bytesPerS ? fmt::format(" x {:g} NCCL efficiency", efficiency) : "", link->source));
  }
  const double hostSeconds = sameClass ? cal.hostSecondsPerByte : 0.0;
  if (p.ranks > 1 && !linkBytesPerS && hostSeconds <= 0)
    throw ConfigError(
        fmt::format("target '{}': no link bandwidth to model its communication (give "
                    "intra=KIND:BANDWIDTH)",
                    t.text));
  if (p.bottleneck.empty()) p.bottleneck = "the host (CPU ranks' own cost per byte)";
  const double secondsPerBusByte = (linkBytesPerS ? 1.0 / *linkBytesPerS : 0.0) + hostSeconds;
  p.busbwGbps = p.ranks > 1 ? 1.0 / secondsPerBusByte / 1e9 : 0;
  const Shape shape{p.ranks, t.hosts, t.intra ? t.intra->kind : source.intraKind,
                    t.inter ? t.inter->kind : source.interKind};
  const double latency = (sameClass ? cal.latencyScale : 1.0) * latencyMs(shape);
  const std::string links = fmt::format(
      "links {}{}", linkNotes.empty() ? std::string("none modelled") : fmt::format("{}", fmt::join(linkNotes, ", ")),
      hostSeconds > 0 ? fmt::format(" + the run's host cost {:.3g} ns per bus byte", hostSeconds * 1e9) : "");
  notes = fmt::format(
      "{}; latency {:.3f} ms per allreduce{}", links, latency,
      sameClass && cal.latencyFitted ? fmt::format(" (catalog x {:.3g}, fitted from the run)", cal.latencyScale) : "");
  // The model on the target and on the run's own shape (its link and host cost: the measured
  // time, or within the link's noise of it), so that the run's own shape gives its transfers.
  const double runSecondsPerBusByte = (cal.linkGbps ? 1.0 / (*cal.linkGbps * 1e9) : 0.0) + cal.hostSecondsPerByte;
  detail::Transfers out;
  for (double bytes : bucketBytes) {
    out.thereMs.push_back(p.ranks < 2 ? 0.0 : latency + bytes * ringFactor(p.ranks) * secondsPerBusByte * 1000.0);
    out.hereMs.push_back(cal.latencyMs + bytes * ringFactor(source.ranks) * runSecondsPerBusByte * 1000.0);
  }
  // A target measured there (bench=): each bucket as an allreduce of its size took there, and on the
  // run's own link as its ddpbench took it here, both with the run's host cost. Only where the run's
  // transfers are split into link and host (its link known: ddpbench's or the catalog's): without,
  // all of them count as the host's, and added to the target's allreduce, which has its own host
  // work, they would count twice; its link's bandwidth alone is then taken from the result.
  if (!t.bench.empty() && p.ranks > 1 && cal.linkGbps) {
    for (size_t i = 0; i < bucketBytes.size(); ++i) {
      const double b = bucketBytes[i];
      out.thereMs[i] = *measuredAllreduceMs(t.bench, b, p.ranks) + b * ringFactor(p.ranks) * hostSeconds * 1000.0;
      const auto here = sameClass ? measuredAllreduceMs(runBench, b, source.ranks) : std::nullopt;
      if (here) out.hereMs[i] = *here + b * ringFactor(source.ranks) * cal.hostSecondsPerByte * 1000.0;
    }
    const auto fit = fitAllreduceBench(t.bench);
    p.busbwGbps = fit->busGbps;
    notes = fmt::format(
        "{}; each bucket's allreduce as measured on the target ({}: {:.3f} ms latency, {:.3g} GB/s bus bandwidth "
        "past it) at its size",
        links, t.benchFile, fit->latencyMs, fit->busGbps);
  } else if (!t.bench.empty() && p.ranks > 1) {
    notes += fmt::format(
        "; of the allreduce measured on the target ({}) only its bus bandwidth: the run's transfers are not split into "
        "link and host (no ddpbench of its own link in the run directory)",
        t.benchFile);
  }
  return out;
}

// Every step replayed on the target, anchored on what the replay on the run's own shape missed.
void replayOnTarget(Projection& p, const RunProfile& profile, const std::vector<Replayed>& own,
                    const detail::Transfers& transfers) {
  const double scale = transfers.scale();
  // CPU ranks keep the run's ranks per core; GPU ranks compute alone.
  const CoreGroups groups = isGpu(p.target.device) ? detail::aloneGroups(profile.ranks) : carriedGroups(profile.groups);
  // What the replay missed is in its wait for the network; carried over, it shrinks with the
  // communication when the target's is shorter (it is an error of the communication's model) and
  // stays as it is when longer (a wait for a slower peer does not grow with the link).
  const double carried = std::min(1.0, scale);
  std::vector<double> steps, waits, comms;
  for (size_t i = 0; i < profile.steps.size(); ++i) {
    const auto& s = profile.steps[i];
    const auto transfer = transfers.of(s.transferMs);
    const auto there = replay(s, p.computeScale, transfer, groups, std::min(1.0, scale));
    std::vector<double> step, wait;
    for (size_t r = 0; r < s.ranks.size(); ++r) {
      const double w = std::max(0.0, there.waitMs[r] + carried * (s.ranks[r].commWaitMs - own[i].waitMs[r]));
      step.push_back(std::max(w, there.stepMs[r] + carried * (s.ranks[r].stepMs - own[i].stepMs[r])));
      wait.push_back(w);
    }
    steps.push_back(mean(step));
    waits.push_back(mean(wait));
    comms.push_back(std::accumulate(transfer.begin(), transfer.end(), 0.0));
  }
  p.stepMs = median(steps);
  p.exposedMs = mean(waits) / std::max(1e-9, mean(steps)) * p.stepMs;
  p.computeMs = p.stepMs - p.exposedMs;
  p.commMs = median(comms);
}

void rateAndCost(Projection& p, const ProjectionReport& run, const std::map<std::string, double>& prices,
                 const std::optional<int64_t>& datasetSize) {
  p.samplesPerStep = run.samplesPerStep / run.ranks * p.ranks;
  p.samplesPerSecond = p.stepMs > 0 ? static_cast<double>(p.samplesPerStep) * 1000.0 / p.stepMs : 0;
  p.efficiency = run.samplesPerSecond > 0 ? (p.samplesPerSecond / p.ranks) / (run.samplesPerSecond / run.ranks) : 0;
  const double exposed = p.stepMs > 0 ? p.exposedMs / p.stepMs : 0;
  p.dominant = exposed > 0.5
                   ? fmt::format("exposed communication over {} ({:.0f} % of the step)", p.bottleneck, 100 * exposed)
                   : fmt::format("compute ({:.0f} % of the step)", 100 * (1 - exposed));
  if (auto it = prices.find(p.target.text); it != prices.end()) {
    p.pricePerHour = it->second;
    p.costPerHour = it->second * p.target.hosts;
    if (p.samplesPerSecond > 0) p.costPerMillionSamples = *p.costPerHour / (p.samplesPerSecond * 3600) * 1e6;
  }
  if (datasetSize && p.samplesPerSecond > 0) {
    p.epochHours = static_cast<double>(*datasetSize) / p.samplesPerSecond / 3600;
    if (p.costPerHour) p.costPerEpoch = *p.epochHours * *p.costPerHour;
  }
}

// The ranking (cheapest per sample when every target has a price, else fastest), and what
// dominates each target.
std::vector<std::string> verdictOf(const ProjectionReport& out) {
  std::vector<std::string> v;
  std::vector<const Projection*> ranked;
  for (const auto& p : out.targets) ranked.push_back(&p);
  const bool priced = !ranked.empty() && std::all_of(ranked.begin(), ranked.end(), [](const Projection* p) {
    return p->costPerMillionSamples.has_value();
  });
  std::stable_sort(ranked.begin(), ranked.end(), [&](const Projection* a, const Projection* b) {
    return priced ? *a->costPerMillionSamples < *b->costPerMillionSamples : a->samplesPerSecond > b->samplesPerSecond;
  });
  if (!ranked.empty()) {
    std::string order;
    for (const auto* p : ranked) order += (order.empty() ? "" : ", then ") + p->target.text;
    const bool anyPrice = std::any_of(ranked.begin(), ranked.end(),
                                      [](const Projection* p) { return p->costPerMillionSamples.has_value(); });
    v.push_back(priced     ? fmt::format("Cheapest per sample first: {}.", order)
                : anyPrice ? fmt::format("Fastest first (not every target has a price): {}.", order)
                           : fmt::format("Fastest first: {}.", order));
  }
  for (const auto* p : ranked) {
    std::string cost =
        p->costPerMillionSamples ? fmt::format(", {:.4g} per 1 M samples", *p->costPerMillionSamples) : "";
    v.push_back(fmt::format(
        "{}: {:.1f} samples/s ({:.2f}x the measured run) on {} ranks, step {:.2f} ms; dominated "
        "by {}; per-rank efficiency {:.0f} %{}.",
        p->target.text, p->samplesPerSecond, out.samplesPerSecond > 0 ? p->samplesPerSecond / out.samplesPerSecond : 0,
        p->ranks, p->stepMs, p->dominant, 100 * p->efficiency, cost));
    if (p->computeWhy.find("kept as measured") != std::string::npos)
      v.push_back(fmt::format("{}: its compute is this run's {} compute, unscaled: {}", p->target.text, out.device,
                              p->computeWhy));
  }
  return v;
}

}  // namespace

ProjectionReport projectRun(const RunData& run, const ProjectOptions& options) {
  const std::string device = runDevice(run);
  const auto profile = profileRun(run, !isGpu(device));
  if (auto why = whyNot(run, profile)) throw ConfigError(*why);
  ProjectionReport out;
  out.dir = run.dir;
  out.ranks = profile.ranks;
  out.steps = profile.steps.size();
  out.device = device;
  out.samplesPerStep = profile.samplesPerStep;
  out.datasetSize = options.datasetSize;
  const Shape source = runShape(run, profile.ranks, out.device);
  out.hosts = source.hosts;
  const auto own = measure(profile, out);
  calibrate(run, profile, source, out.calibration);
  out.assumptions = runAssumptions(out.calibration);
  if (profile.groups.shared()) out.assumptions.push_back(detail::sharingAssumption(profile.groups));
  const std::map<std::string, double> prices(options.prices.begin(), options.prices.end());
  const auto runBench = allreduceBench(run);  // the run's own link as ddpbench measured it
  if (auto it = prices.find("run"); it != prices.end()) {
    out.pricePerHour = it->second;
    out.costPerHour = it->second * out.hosts;
    if (out.samplesPerSecond > 0) out.costPerMillionSamples = *out.costPerHour / (out.samplesPerSecond * 3600) * 1e6;
  }
  for (const auto& text : options.targets) {
    Projection p;
    p.target = parseTarget(text, profile.ranks);
    auto& t = p.target;
    if (t.device.empty()) t.device = out.device, t.deviceWhere = "the run's own";
    const std::string where = fmt::format("target '{}'", text);
    if (t.intra) completeLink(*t.intra, "intra", t.device, where);
    if (t.inter) completeLink(*t.inter, "inter", t.device, where);
    p.ranks = t.hosts * t.ranksPerHost;
    computeRatio(p, out.device, options,
                 profile.cpuTimes          ? "its training thread's CPU time"
                 : profile.groups.shared() ? "the run's sharing of cores undone"
                                           : "");
    std::string notes;
    const auto transfers = communication(p, out.calibration, source, isGpu(t.device) == isGpu(out.device),
                                         profile.bucketBytes, runBench, notes);
    replayOnTarget(p, profile, own, transfers);
    rateAndCost(p, out, prices, options.datasetSize);
    out.assumptions.push_back(fmt::format("{}: {} host(s) x {} rank(s) on {} ({}); compute {}; {}", text, t.hosts,
                                          t.ranksPerHost, t.device, t.deviceWhere, p.computeWhy, notes));
    out.targets.push_back(std::move(p));
  }
  for (const auto& [name, price] : prices)
    if (name != "run" && std::none_of(out.targets.begin(), out.targets.end(),
                                      [&](const Projection& p) { return p.target.text == name; }))
      throw ConfigError(fmt::format("--price {}={:g}: no target '{}' (give the target exactly as in --to, or run)",
                                    name, price, name));
  out.verdict = verdictOf(out);
  return out;
}

}  // namespace ddp::profiler
