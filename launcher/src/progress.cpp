#include "progress.hpp"

#include "ddp/profiler/run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace ddp::launcher {

namespace {

constexpr double kDecayPerSecond = 0.9;   // the last ~10 s weigh most
constexpr double kMinSamples = 4;         // per rank, before it is judged
constexpr double kOthersWaitShare = 0.3;  // the others must be seen waiting at least this much ...
constexpr double kLaggardRatio = 0.5;     // ... and the laggard at most half as much as they are

}  // namespace

std::optional<long long> programSteps(const std::vector<std::string>& program) {
  const auto text = profiler::commandOption(program, "--steps");
  if (!text) return std::nullopt;
  char* end = nullptr;
  const long long n = std::strtoll(text->c_str(), &end, 10);
  if (end == text->c_str() || *end != '\0' || n <= 0) return std::nullopt;
  return n;
}

void ProgressMeter::update(int rank, const StepProgress& where, double t) {
  const long long step = where.step;
  if (rank < 0 || step < 0) return;
  completed_[rank] = std::max(completed_[rank], where.done() ? step + 1 : step);
  if (t - lastDecay_ >= 1) {
    for (auto& [r, seen] : seen_) seen.waiting *= kDecayPerSecond, seen.samples *= kDecayPerSecond;
    lastDecay_ = t;
  }
  auto& seen = seen_[rank];
  seen.samples += 1;
  if (where.phase == Phase::kCommWait) seen.waiting += 1;
  if (static_cast<int>(completed_.size()) < ranks_) return;
  long long job = completed_.begin()->second;
  for (const auto& [r, c] : completed_) job = std::min(job, c);
  if (history_.empty() || history_.back().second != job) history_.emplace_back(t, job);
  while (history_.size() > 2 && t - history_.front().first > 10) history_.pop_front();
}

// "; the others wait for rank 2 (it waits 4 % of the time, they 85 %)", or "" when no rank stands out.
std::string ProgressMeter::laggard() const {
  if (ranks_ < 2 || static_cast<int>(seen_.size()) < ranks_) return "";
  std::vector<std::pair<double, int>> shares;
  for (const auto& [r, seen] : seen_) {
    if (seen.samples < kMinSamples) return "";
    shares.emplace_back(seen.waiting / seen.samples, r);
  }
  std::sort(shares.begin(), shares.end());
  std::vector<double> others;
  for (size_t i = 1; i < shares.size(); ++i) others.push_back(shares[i].first);
  const double othersMedian = others[others.size() / 2];
  const auto [least, rank] = shares.front();
  if (othersMedian < kOthersWaitShare || least > kLaggardRatio * othersMedian) return "";
  return fmt::format("; the others wait for rank {} (it waits {:.0f} % of the time, they {:.0f} %)", rank, 100 * least,
                     100 * othersMedian);
}

std::optional<std::string> ProgressMeter::line(double t) const {
  if (static_cast<int>(completed_.size()) < ranks_ || history_.empty()) return std::nullopt;
  const long long job = history_.back().second;
  std::string out = total_ ? fmt::format("step {}/{} ({:.0f} %)", job, *total_,
                                         100.0 * static_cast<double>(job) / static_cast<double>(std::max(1LL, *total_)))
                           : fmt::format("step {}", job);
  const auto& [t0, s0] = history_.front();
  const double span = std::max(t, history_.back().first) - t0;
  if (history_.size() > 1 && span > 0) {
    const double rate = static_cast<double>(job - s0) / span;
    out += fmt::format(", {:.1f} steps/s", rate);
    if (total_ && rate > 0 && job < *total_) {
      const auto eta = static_cast<long long>(static_cast<double>(*total_ - job) / rate + 0.5);
      out += eta >= 3600 ? fmt::format(", ETA {}:{:02}:{:02}", eta / 3600, eta / 60 % 60, eta % 60)
                         : fmt::format(", ETA {}:{:02}", eta / 60, eta % 60);
    }
  }
  return out + laggard();
}

void ProgressDisplay::tick(double t) {
  if (t < next_) return;
  next_ = t + (terminal_ ? 1 : 10);
  auto text = meter_.line(t);
  if (!text) return;
  if (terminal_) {
    out_ << "\r\033[Kddprun: " << *text << "\r" << std::flush;
    shown_ = true;
  } else {
    out_ << "ddprun: " << *text << "\n" << std::flush;
  }
}

void ProgressDisplay::clear() {
  if (!shown_) return;
  out_ << "\r\033[K" << std::flush;
  shown_ = false;
}

}  // namespace ddp::launcher
