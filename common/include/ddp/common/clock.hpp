#pragma once
// The wall clock every record of a run directory uses: microseconds since the Unix epoch.

#include <chrono>
#include <cstdint>
#include <string>

namespace ddp {

int64_t unixMicros(std::chrono::system_clock::time_point t = std::chrono::system_clock::now());
// "2026-12-01T06:15:52Z" (UTC, whole seconds).
std::string isoTime(int64_t unixUs);

}  // namespace ddp
