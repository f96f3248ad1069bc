#pragma once
// ddp::log for code that cannot include spdlog: a translation unit that includes LibTorch 2.x,
// whose bundled fmt shadows the system's one that spdlog was built with. The caller formats the
// message (fmt::format works there); it is written as ddp/common/log.hpp writes it.

#include <string>

namespace ddp::log {

void error(const std::string& name, const std::string& message);

}  // namespace ddp::log
