#pragma once
// The network links between a run's hosts as the ranks' TCP connections saw them (the utilisation
// samples' links, docs/diagnosis.md "Which link is slow"), and the slow ones among them.

#include <optional>
#include <string>
#include <vector>

namespace ddp::profiler {

// A link from one host to another: what crossed it and how long its connections were busy
// sending. Hosts from the exit records; an address where no rank of the run was on it. Links
// within a host are left out.
struct HostLink {
  std::string from, to;
  double sentMib = 0, sendingMs = 0;
  double mbitPerS() const { return sendingMs > 0 ? sentMib * 8 * 1.048576 / (sendingMs / 1e3) : 0; }
};

// "14.3 Mbit/s", "2.3 Gbit/s".
std::string formatRate(double mbitPerS);

// A link is measured when it carried bulk data: this much over the run and this share of what the
// busiest link carried (small messages measure the latency, not the bandwidth). One at this share
// of the fastest's rate or less is slow — a ring allreduce runs at its slowest link — when it was
// busy sending for this share of the run's transfer time or more: what the transfer waited for,
// not a few milliseconds that the kernel's clock (a jiffy) measures coarsely.
inline constexpr double kLinkBulkMib = 1;
inline constexpr double kLinkBulkShare = 0.1;
inline constexpr double kSlowLinkRatio = 0.5;
inline constexpr double kSlowLinkTransferShare = 0.25;

// Whether the link carried enough to measure its bandwidth (links: the most sent first).
bool measured(const HostLink& link, const std::vector<HostLink>& links);

// The measured links that are slow against the fastest, and the hosts all of whose measured links
// are slow while some link without them is not: their network is the one at fault. None when
// fewer than two links were measured or none is slow.
struct SlowLinks {
  std::vector<HostLink> slow;
  HostLink fastest;
  std::vector<std::string> hosts;
};
// links: the most sent first (TimingAnalysis::links); transferMs: the run's transfer time (the
// least comm_wait over the ranks, summed over the analysed steps).
std::optional<SlowLinks> slowLinks(const std::vector<HostLink>& links, double transferMs);

}  // namespace ddp::profiler
