#pragma once
// ddpbench's output: the nccl-tests table (text) and the same rows as JSON.

#include "ddp/comm/bench/engine.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ddp::comm::bench {

// The '#' header block: settings line and the two column-title lines.
std::string tableHeader(std::string_view backend, std::string_view op, int nranks, const SweepOptions& options);
// One row: out-of-place then in-place columns ("N/A" when there is no in-place run).
std::string tableRow(const Result& outOfPlace, const std::optional<Result>& inPlace);
// "# Out of bounds values : N OK|FAILED" and "# Avg bus bandwidth    : X".
std::string tableFooter(const std::vector<Result>& results);

nlohmann::json toJson(const Result& result);

}  // namespace ddp::comm::bench
