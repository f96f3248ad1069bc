#include "ddp/comm/files.hpp"

#include "ddp/comm/error.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ddp {

std::string temporaryFor(const std::string& path) { return fmt::format("{}.tmp.{}", path, ::getpid()); }

void commitTemporary(const std::string& tmp, const std::string& path) {
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(tmp.c_str());
    throw ConfigError(fmt::format("cannot write {}: {}", path, std::strerror(error)));
  }
}

void writeFileAtomically(const std::string& path, std::string_view data) {
  const auto tmp = temporaryFor(path);
  std::FILE* file = std::fopen(tmp.c_str(), "wb");
  if (!file) throw ConfigError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  bool ok = std::fwrite(data.data(), 1, data.size(), file) == data.size();
  const int error = errno;
  ok = std::fclose(file) == 0 && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    throw ConfigError(fmt::format("cannot write {}: {}", path, std::strerror(error ? error : errno)));
  }
  commitTemporary(tmp, path);
}

}  // namespace ddp
