#include "ddp/launcher/port.hpp"

#include "ddp/common/error.hpp"
#include "io.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <utility>

namespace ddp::launcher {
namespace {

std::string lockPath(int port) { return fmt::format("/tmp/ddprun-port-{}.lock", port); }

// The lock file of a port, locked; -1 when another process holds it. A file its holder removed
// between our open and our lock is not the lock any more (the path names another file, or none):
// that counts as held, and the caller tries another port.
int lockPort(int port) {
  const std::string lock = lockPath(port);
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    struct stat held {
    }, named{};
    if (::fstat(fd, &held) == 0 && ::stat(lock.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev)
      return fd;
  }
  if (fd >= 0) ::close(fd);
  return -1;
}

// Removes the lock file while still holding it (so nobody locks a file about to disappear),
// then lets it go.
void releasePort(int fd, int port) {
  if (fd < 0) return;
  ::unlink(lockPath(port).c_str());
  ::close(fd);
}

// The lock of `port` when it is also free to bind; -1 (and no lock file) otherwise.
int lockFreePort(int port) {
  const int fd = lockPort(port);
  if (fd < 0 || io::bindError(port).empty()) return fd;
  releasePort(fd, port);
  return -1;
}

}  // namespace

std::pair<int, int> masterPortBand(const std::string& ephemeralRange) {
  std::istringstream in(ephemeralRange);
  int low = 0, high = 0;
  if (!(in >> low >> high) || low > high) return {0, 0};
  const int first = std::max(1024, low - 10000), last = low - 1;
  if (last - first + 1 < 1000) return {0, 0};
  return {first, last};
}

PortReservation::PortReservation() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  const auto [first, last] = masterPortBand(std::string(std::istreambuf_iterator<char>(range), {}));
  if (first > 0) {
    std::mt19937 pick(std::random_device{}());
    std::uniform_int_distribution<int> in(first, last);
    for (int attempt = 0; attempt < 64; ++attempt) {
      const int port = in(pick);
      if ((fd_ = lockFreePort(port)) >= 0) {
        port_ = port;
        return;
      }
    }
  }
  for (int attempt = 0; attempt < 64; ++attempt) {
    int port = 0;
    ::close(io::listenTcp("0.0.0.0", port));
    if ((fd_ = lockPort(port)) >= 0) {
      port_ = port;
      return;
    }
  }
  throw Error("no free port for MASTER_PORT after 128 tries");
}

PortReservation::PortReservation(int wanted) {
  const int fd = lockPort(wanted);
  const std::string why = fd >= 0 ? io::bindError(wanted) : "another ddprun run holds it";
  if (!why.empty()) {
    releasePort(fd, wanted);
    throw ConfigError(
        fmt::format("--master-port {} is not free on this host ({}): choose another port, or leave "
                    "--master-port out and ddprun picks a free one",
                    wanted, why));
  }
  fd_ = fd;
  port_ = wanted;
}

PortReservation::~PortReservation() { releasePort(fd_, port_); }

PortReservation::PortReservation(PortReservation&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(std::exchange(other.port_, 0)) {}

PortReservation& PortReservation::operator=(PortReservation&& other) noexcept {
  if (this != &other) {
    releasePort(fd_, port_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = std::exchange(other.port_, 0);
  }
  return *this;
}

}  // namespace ddp::launcher
