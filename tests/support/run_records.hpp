#pragma once
// Records of the run contract built in one line, for the tests.

#include "ddp/common/rank_exit.hpp"
#include "ddp/common/util_sample.hpp"

#include <optional>
#include <string>

namespace ddp::test {

// An exit record: the rank ended with code or signal on host; culprit: ddprun named it the first
// failure; stopped: ddprun stopped it.
inline RankExitRecord exitOf(int rank, std::optional<int> code, std::optional<int> signal, std::string host,
                             bool culprit, bool stopped = false) {
  RankExitRecord r;
  r.rank = rank;
  r.exitCode = code;
  r.signal = signal;
  r.host = std::move(host);
  r.stopRequested = stopped;
  if (culprit) r.status = RankStatus::kCulprit;
  r.started = true;
  return r;
}

// An exit record of a rank that ended at endUnixUs with code or signal; stopped: ddprun stopped it.
inline RankExitRecord endedAt(int rank, std::optional<int> code, std::optional<int> signal, int64_t endUnixUs,
                              bool stopped) {
  auto r = exitOf(rank, code, signal, "h", false, stopped);
  r.endUnixUs = endUnixUs;
  return r;
}

// A utilisation sample at t (µs) with its CPU %, RSS and GPU figures.
inline UtilSample sampleAt(int64_t tUnixUs, double cpuPct, double rssMib, std::optional<double> gpuUtilPct,
                           std::optional<double> gpuMemUtilPct, std::optional<double> gpuMemUsedMib) {
  UtilSample s;
  s.tUnixUs = tUnixUs;
  s.cpuPct = cpuPct;
  s.rssMib = rssMib;
  s.gpuUtilPct = gpuUtilPct;
  s.gpuMemUtilPct = gpuMemUtilPct;
  s.gpuMemUsedMib = gpuMemUsedMib;
  return s;
}

}  // namespace ddp::test
