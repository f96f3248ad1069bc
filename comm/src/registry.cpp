#include "ddp/comm/registry.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ddp::comm {

void BackendRegistry::add(std::string name, BackendFactory factory) {
  if (factories_.count(name) != 0) {
    throw Error(fmt::format("backend '{}' is registered twice", name));
  }
  factories_.emplace(std::move(name), std::move(factory));
}

std::unique_ptr<Backend> BackendRegistry::create(const std::string& name, const WorldInfo& world,
                                                 const BackendOptions& options) const {
  const auto it = factories_.find(name);
  if (it == factories_.end()) {
    throw ConfigError(fmt::format("unknown backend '{}' (known: {})", name, fmt::join(names(), ", ")));
  }
  return it->second(world, options);
}

std::vector<std::string> BackendRegistry::names() const {
  std::vector<std::string> result;
  for (const auto& [name, factory] : factories_) result.push_back(name);
  return result;
}

}  // namespace ddp::comm
