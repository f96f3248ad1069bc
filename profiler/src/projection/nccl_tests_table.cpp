// nccl-tests' all_reduce_perf output as ddpbench rows (`ddprof project --to ...,bench=FILE`):
// what a cloud vendor or a colleague measured on an instance, before it is rented.
#include "projection/target.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace ddp::profiler::detail {

std::vector<BenchRow> ncclTestsRows(const std::string& file, std::vector<std::string>& problems) {
  std::ifstream in(file);
  std::vector<BenchRow> rows;
  if (!in) {
    problems.push_back(fmt::format("{}: cannot be read", file));
    return rows;
  }
  int rankLines = 0;
  std::optional<bool> root;  // the table has a root column (nccl-tests 2.10 and later)
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> f;
    for (std::string w; words >> w;) f.push_back(w);
    if (f.size() > 2 && f[0] == "#" && f[1] == "Rank") ++rankLines;
    if (f.size() > 2 && f[0] == "#" && f[1] == "size") root = std::find(f.begin(), f.end(), "root") != f.end();
    // size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong; lines of other
    // output (NCCL INFO lines interleaved) do not start with a number.
    const auto bytes = f.empty() ? std::nullopt : number(f[0]);
    if (!root || !bytes) continue;
    const size_t first = *root ? 5 : 4;
    for (size_t at = first; at + 2 < f.size() && at <= first + 4; at += 4) {
      const auto time = number(f[at]), alg = number(f[at + 1]), bus = number(f[at + 2]);
      if (!time || !alg || !bus || *time <= 0) continue;
      BenchRow r;
      r.backend = "nccl", r.op = "allreduce", r.bytes = static_cast<int64_t>(*bytes);
      r.timeUs = *time, r.algbwGbps = *alg, r.busbwGbps = *bus;
      rows.push_back(r);
    }
  }
  if (rows.empty()) {
    problems.push_back(
        fmt::format("{}: neither a ddpbench --json result nor nccl-tests' output (no table of sizes "
                    "and times)",
                    file));
    return rows;
  }
  // The ranks: nccl-tests' "# Rank N ..." lines, else from the bus bandwidth factor of the largest
  // size, busbw / algbw = 2(n-1)/n (an allreduce's; under 1 it is not one).
  const auto& largest = *std::max_element(rows.begin(), rows.end(),
                                          [](const auto& a, const auto& b) { return a.algbwGbps < b.algbwGbps; });
  const double factor = largest.algbwGbps > 0 ? largest.busbwGbps / largest.algbwGbps : 0;
  int ranks = rankLines;
  if (ranks == 0 && factor >= 1 && factor < 2) ranks = static_cast<int>(std::lround(2 / (2 - factor)));
  if (factor < 1 || ranks < 2) {
    problems.push_back(
        fmt::format("{}: not an allreduce's table (busbw / algbw {:.3g}; all_reduce_perf's is "
                    "2(n-1)/n, 1 or more)",
                    file, factor));
    rows.clear();
  }
  for (auto& r : rows) r.nranks = ranks;
  return rows;
}

}  // namespace ddp::profiler::detail
