#pragma once
// Backends chosen by name. The registry holds factories; builtinBackends() (ddp::backends)
// holds every backend this build has (mpi, and gloo / nccl when found).

#include "ddp/comm/backend.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ddp::comm {

using BackendFactory = std::function<std::unique_ptr<Backend>(const WorldInfo&, const BackendOptions&)>;

// Not thread-safe for registration; create() may be called from any thread after set-up.
class BackendRegistry {
 public:
  // Throws ddp::Error when `name` is already registered.
  void add(std::string name, BackendFactory factory);
  // Throws ConfigError listing the known names when `name` is unknown.
  std::unique_ptr<Backend> create(const std::string& name, const WorldInfo& world,
                                  const BackendOptions& options = {}) const;
  bool contains(const std::string& name) const { return factories_.count(name) != 0; }
  std::vector<std::string> names() const;

 private:
  std::map<std::string, BackendFactory> factories_;
};

// The backends compiled into this build, registered once.
const BackendRegistry& builtinBackends();

}  // namespace ddp::comm
