#include "ddp/common/files.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

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

void makeDirectories(const std::string& path, const std::string& what) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw ConfigError(fmt::format("{} {}: cannot create: {}", what, path, ec.message()));
  if (::access(path.c_str(), W_OK) != 0)
    throw ConfigError(fmt::format("{} {}: not writable: {}", what, path, std::strerror(errno)));
}

std::vector<std::string> listFiles(const std::string& dir, std::string_view prefix, std::string_view suffix) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto name = entry.path().filename().string();
    if (entry.is_regular_file(ec) && name.size() >= prefix.size() + suffix.size() && name.size() > suffix.size() &&
        name.compare(0, prefix.size(), prefix) == 0 &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ddp
