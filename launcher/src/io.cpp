#include "io.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <thread>

namespace ddp::launcher::io {
namespace {

int g_pipe[2] = {-1, -1};
struct sigaction g_previous[65];

void onSignal(int sig, siginfo_t* info, void*) {
  int saved = errno;
  // A byte for the signal, and a second byte that marks signals this process sent itself.
  unsigned char msg[2] = {static_cast<unsigned char>(sig),
                          static_cast<unsigned char>(info && info->si_pid == ::getpid() && info->si_code == SI_USER)};
  [[maybe_unused]] auto n = ::write(g_pipe[1], msg, sizeof msg);
  errno = saved;
}

}  // namespace

SignalPipe::SignalPipe(const std::vector<int>& signals) : signals_(signals) {
  if (::pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw Error(fmt::format("pipe2: {}", std::strerror(errno)));
  for (int sig : signals_) {
    struct sigaction sa {};
    sa.sa_sigaction = onSignal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, &g_previous[sig]);
  }
}

SignalPipe::~SignalPipe() {
  for (int sig : signals_) ::sigaction(sig, &g_previous[sig], nullptr);
  ::close(g_pipe[0]);
  ::close(g_pipe[1]);
  g_pipe[0] = g_pipe[1] = -1;
}

int SignalPipe::fd() const { return g_pipe[0]; }

std::vector<int> SignalPipe::drain() {
  std::vector<int> out;
  unsigned char buf[128];
  ssize_t n;
  while ((n = ::read(g_pipe[0], buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i + 1 < n; i += 2)
      if (!buf[i + 1]) out.push_back(buf[i]);
  return out;
}

std::optional<std::string> LineBuffer::next() {
  auto nl = pending_.find('\n');
  if (nl == std::string::npos) return std::nullopt;
  std::string line = pending_.substr(0, nl);
  pending_.erase(0, nl + 1);
  return line;
}

std::string LineBuffer::rest() {
  std::string r;
  r.swap(pending_);
  return r;
}

bool writeAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

int listenTcp(const std::string& address, int& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(fmt::format("socket: {}", std::strerror(errno)));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  if (::inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1) {
    ::close(fd);
    throw ConfigError(fmt::format("control address '{}' is not an IPv4 address", address));
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, 1024) != 0) {
    int err = errno;
    ::close(fd);
    throw Error(fmt::format("listening on {}: {}", address, std::strerror(err)));
  }
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  port = ntohs(sa.sin_port);
  return fd;
}

std::string bindError(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::strerror(errno);
  // As the rendezvous store will bind it: SO_REUSEADDR, so a port in TIME_WAIT counts as free.
  int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  std::string why;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) why = std::strerror(errno);
  ::close(fd);
  return why;
}

int connectTcp(const std::string& host, int port, double timeoutS, std::string& why, Resolver resolve) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutS);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  const bool numeric = ::inet_pton(AF_INET, host.c_str(), &sa.sin_addr) == 1;  // no resolver round trip
  if (!numeric && !resolve) {
    why = fmt::format("cannot resolve {}: this binary has no name service", host);
    return -1;
  }
  for (int attempt = 0;; ++attempt) {
    std::string unresolved;
    if (!numeric && !resolve(host, sa.sin_addr, unresolved)) {
      why = fmt::format("cannot resolve {}: {}", host, unresolved);
    } else {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return fd;
      }
      why = fmt::format("connecting to {}:{}: {}", host, port, std::strerror(errno));
      if (fd >= 0) ::close(fd);
    }
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(200, 10 << std::min(attempt, 4))));
  }
}

int usableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
}

std::string hostname() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf[0] ? buf : "localhost";
}

std::string randomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::read(fd, raw.data(), bytes) != static_cast<ssize_t>(bytes)) {
    if (fd >= 0) ::close(fd);
    throw Error("cannot read /dev/urandom");
  }
  ::close(fd);
  std::string hex;
  for (unsigned char c : raw) hex += fmt::format("{:02x}", c);
  return hex;
}

}  // namespace ddp::launcher::io
