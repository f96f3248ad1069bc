#pragma once
// The wall clock every record of a run directory uses: microseconds since the Unix epoch; and a
// thread's CPU clock.

#include <chrono>
#include <cstdint>
#include <string>

namespace ddp {

int64_t unixMicros(std::chrono::system_clock::time_point t = std::chrono::system_clock::now());
// "2026-12-01T06:15:52Z" (UTC, whole seconds).
std::string isoTime(int64_t unixUs);
// The CPU time (user and system) the calling thread has used.
std::chrono::nanoseconds threadCpuTime();

}  // namespace ddp
