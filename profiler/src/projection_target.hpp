#pragma once
// What projection.cpp and projection_target.cpp share: reading targets and their links.

#include "ddp/profiler/projection.hpp"
#include "text.hpp"

#include <string>

namespace ddp::profiler::detail {

// A link kind given without a bandwidth: NVLink of a catalog GPU takes the catalog's; CPU ranks'
// loopback and shared memory are the host's own (their cost is calibrated from the run); any
// other needs the user's figure (ConfigError naming `where` and `key`).
void completeLink(TargetLink& link, const std::string& key, const std::string& device, const std::string& where);

}  // namespace ddp::profiler::detail
