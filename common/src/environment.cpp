#include "ddp/common/environment.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>

#include <charconv>

extern char** environ;

namespace ddp {

Environment Environment::fromProcess() {
  std::map<std::string, std::string, std::less<>> vars;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view kv(*entry);
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    vars.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return Environment(std::move(vars));
}

std::optional<std::string> Environment::get(std::string_view name) const {
  const auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

std::optional<long long> Environment::getInt(std::string_view name, long long min, long long max) const {
  const auto value = get(name);
  if (!value) return std::nullopt;
  long long parsed = 0;
  const char* first = value->data();
  const char* last = value->data() + value->size();
  const auto [end, ec] = std::from_chars(first, last, parsed);
  if (value->empty() || ec != std::errc() || end != last) {
    throw ConfigError(fmt::format("environment variable {}='{}' is not an integer", name, *value));
  }
  if (parsed < min || parsed > max) {
    throw ConfigError(fmt::format("environment variable {}={} is out of range [{}, {}]", name, parsed, min, max));
  }
  return parsed;
}

}  // namespace ddp
