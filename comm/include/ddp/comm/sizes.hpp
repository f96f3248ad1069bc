#pragma once
// Byte sizes as users type them: 8, 64K, 1M, 2G (K = 1024, as nccl-tests).

#include <cstdint>
#include <string>
#include <string_view>

namespace ddp::comm {

// Throws ConfigError naming `what` and the text when it is not a size.
uint64_t parseSize(std::string_view text, std::string_view what = "size");
// 1024 → "1K", 1536 → "1536", 0 → "0".
std::string formatSize(uint64_t bytes);

}  // namespace ddp::comm
