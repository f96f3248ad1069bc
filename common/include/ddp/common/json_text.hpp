#pragma once
// JSON as text for files and consoles. Strings that reach ddprun's JSON come from outside
// (environment variables, program arguments, host names, NCCL log lines) and need not be UTF-8:
// invalid bytes become U+FFFD instead of an exception that would lose the whole file.

#include <nlohmann/json.hpp>

#include <string>

namespace ddp {

inline std::string jsonText(const nlohmann::json& value, int indent = -1) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ddp
