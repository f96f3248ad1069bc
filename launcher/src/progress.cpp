#include "progress.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddp::launcher {

void ProgressMeter::update(int rank, const StepProgress& where, double t) {
  const long long step = where.step;
  if (rank < 0 || step < 0) return;
  completed_[rank] = std::max(completed_[rank], where.done() ? step + 1 : step);
  at_[rank] = where;
  // A rank that reaches comm_wait waits for every rank still computing the same step.
  if (where.phase == Phase::kCommWait) {
    for (const auto& [other, at] : at_)
      if (other != rank && at.step == step && !at.done() && at.phase != Phase::kCommWait && at.phase != Phase::kOptimizer)
        heldUp_[other] += 1;
  }
  if (t - lastDecay_ >= 1) {  // the last ~10 s count most
    for (auto& [r, n] : heldUp_) n *= 0.9;
    lastDecay_ = t;
  }
  if (static_cast<int>(completed_.size()) < ranks_) return;
  long long job = completed_.begin()->second;
  for (const auto& [r, c] : completed_) job = std::min(job, c);
  if (history_.empty() || history_.back().second != job) history_.emplace_back(t, job);
  while (history_.size() > 2 && t - history_.front().first > 10) history_.pop_front();
}

std::optional<std::string> ProgressMeter::line(double t) {
  if (static_cast<int>(completed_.size()) < ranks_ || history_.empty()) return std::nullopt;
  const long long job = history_.back().second;
  std::string out = total_ ? fmt::format("step {}/{} ({:.0f} %)", job, *total_, 100.0 * static_cast<double>(job) / static_cast<double>(std::max(1LL, *total_)))
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
  double waits = 0;
  int laggard = -1;
  for (const auto& [r, n] : heldUp_) {
    waits += n;
    if (laggard < 0 || n > heldUp_[laggard]) laggard = r;
  }
  if (laggard >= 0 && waits >= 4 && ranks_ > 1)
    out += fmt::format("; the others wait most for rank {} ({:.0f} % of waits)", laggard, 100 * heldUp_[laggard] / waits);
  return out;
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
