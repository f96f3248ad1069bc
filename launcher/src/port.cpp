#include "ddp/launcher/port.hpp"

#include "ddp/common/error.hpp"
#include "io.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <utility>

namespace ddp::launcher {
namespace {

// The lock file of a port, locked; -1 when another process holds it.
int lockPort(int port) {
  const std::string lock = fmt::format("/tmp/ddprun-port-{}.lock", port);
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

}  // namespace

PortReservation::PortReservation() {
  for (int attempt = 0; attempt < 64; ++attempt) {
    int port = 0;
    ::close(io::listenTcp("0.0.0.0", port));
    if ((fd_ = lockPort(port)) >= 0) {
      port_ = port;
      return;
    }
  }
  throw Error("no free port for MASTER_PORT after 64 tries");
}

PortReservation::PortReservation(int wanted) {
  const int fd = lockPort(wanted);
  const std::string why = fd >= 0 ? io::bindError(wanted) : "another ddprun run holds it";
  if (!why.empty()) {
    if (fd >= 0) ::close(fd);
    throw ConfigError(
        fmt::format("--master-port {} is not free on this host ({}): choose another port, or leave "
                    "--master-port out and ddprun picks a free one",
                    wanted, why));
  }
  fd_ = fd;
  port_ = wanted;
}

PortReservation::~PortReservation() {
  if (fd_ >= 0) ::close(fd_);
}

PortReservation::PortReservation(PortReservation&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(std::exchange(other.port_, 0)) {}

PortReservation& PortReservation::operator=(PortReservation&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = std::exchange(other.port_, 0);
  }
  return *this;
}

}  // namespace ddp::launcher
