#pragma once
// What projection.cpp and target.cpp share: reading targets and their links.

#include "ddp/profiler/projection/projection.hpp"
#include "text.hpp"

#include <string>
#include <vector>

namespace ddp::profiler::detail {

// A link kind given without a bandwidth: NVLink of a catalog GPU takes the catalog's; CPU ranks'
// loopback and shared memory are the host's own (their cost is calibrated from the run); any
// other needs the user's figure (ConfigError naming `where` and `key`).
void completeLink(TargetLink& link, const std::string& key, const std::string& device, const std::string& where);

// nccl-tests' all_reduce_perf output (its table, out of place and in place, with or without the
// root column; other lines skipped) as allreduce rows of its ranks: its "# Rank" lines, else from
// busbw / algbw = 2(n-1)/n. None and a problem "FILE: what" when it has no such table.
std::vector<BenchRow> ncclTestsRows(const std::string& file, std::vector<std::string>& problems);

}  // namespace ddp::profiler::detail
