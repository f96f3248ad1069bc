#include "ddp/comm/bench/report.hpp"

#include <fmt/format.h>

namespace ddp::comm::bench {
namespace {

std::string half(const Result& r) {
  const std::string wrong = r.wrong < 0 ? "N/A" : std::to_string(r.wrong);
  return fmt::format("{:>8.2f} {:>7.2f} {:>7.2f} {:>6}", r.timeUs, r.algbwGBps, r.busbwGBps, wrong);
}

}  // namespace

std::string tableHeader(std::string_view backend, std::string_view op, int nranks, const SweepOptions& o) {
  std::string out = fmt::format(
      "# ddpbench {} backend {} nranks {} minBytes {} maxBytes {} step: {}(factor) warmup iters: "
      "{} iters: {} validation: {}\n#\n",
      op, backend, nranks, o.minBytes, o.maxBytes, o.factor, o.warmup, o.iters, o.check ? 1 : 0);
  out +=
      "#                                                              out-of-place                       in-place      "
      "    \n";
  out +=
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n";
  out +=
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)   "
      "    \n";
  return out;
}

std::string tableRow(const Result& r, const std::optional<Result>& inPlace) {
  const std::string redop = r.redop == "none" ? "none" : r.redop;
  std::string row = fmt::format("{:>12} {:>13} {:>9} {:>7} {:>7} {}", r.bytes, r.count, r.type, redop, r.root, half(r));
  row += inPlace ? " " + half(*inPlace) : fmt::format(" {:>8} {:>7} {:>7} {:>6}", "N/A", "N/A", "N/A", "N/A");
  return row + "\n";
}

std::string tableFooter(const std::vector<Result>& results) {
  int64_t wrong = 0;
  double busbw = 0;
  for (const auto& r : results) {
    wrong += std::max<int64_t>(r.wrong, 0);
    busbw += r.busbwGBps;
  }
  const double avg = results.empty() ? 0.0 : busbw / static_cast<double>(results.size());
  return fmt::format("# Out of bounds values : {} {}\n# Avg bus bandwidth    : {:.4f}\n#\n", wrong,
                     wrong == 0 ? "OK" : "FAILED", avg);
}

nlohmann::json toJson(const Result& r) {
  return {{"op", r.op},
          {"bytes", r.bytes},
          {"count", r.count},
          {"type", r.type},
          {"redop", r.redop},
          {"root", r.root},
          {"time_us", r.timeUs},
          {"algbw_gbps", r.algbwGBps},
          {"busbw_gbps", r.busbwGBps},
          {"wrong", r.wrong < 0 ? nlohmann::json() : nlohmann::json(r.wrong)},
          {"in_place", r.inPlace}};
}

}  // namespace ddp::comm::bench
