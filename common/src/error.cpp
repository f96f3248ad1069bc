#include "ddp/common/error.hpp"

namespace ddp {

int exitCodeFor(const std::exception& e) noexcept { return dynamic_cast<const ConfigError*>(&e) != nullptr ? 2 : 1; }

}  // namespace ddp
