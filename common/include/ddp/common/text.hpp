#pragma once
// Small text helpers the launcher's messages and the profiler's renderers share.

#include <string>
#include <vector>

namespace ddp {

// "0-3, 5, 7, 8": ranks in the given order, runs of three or more consecutive ones as a-b.
std::string rankList(const std::vector<int>& ranks);
// A share as a percentage: percent(0.256) == "25.6 %", percent(0.256, 0) == "26 %".
std::string percent(double share, int decimals = 1);

}  // namespace ddp
