#pragma once
// Plumbing shared by the supervisor and the worker: signals as bytes on a pipe (so one poll()
// loop sees signals, sockets and pipes), line framing, TCP helpers and the wall clock.

#include <netinet/in.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp::launcher::io {

// Delivers the given signals as bytes on fd(); the handlers are restored by the destructor.
// One instance per process.
class SignalPipe {
 public:
  explicit SignalPipe(const std::vector<int>& signals);
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;
  int fd() const;
  // The signals received since the last call, in order; a signal this process sent itself
  // (a group-wide kill) is left out.
  std::vector<int> drain();

 private:
  std::vector<int> signals_;
};

// Splits a byte stream into lines; partial lines wait for their newline.
class LineBuffer {
 public:
  void append(const char* data, size_t size) { pending_.append(data, size); }
  std::optional<std::string> next();
  // What is left without a newline.
  std::string rest();
  size_t pendingSize() const { return pending_.size(); }

 private:
  std::string pending_;
};

// Writes all of data (retrying on EINTR / partial writes); false when the peer is gone.
bool writeAll(int fd, const std::string& data);

// A TCP listener on address:0 (IPv4); returns the fd and sets port.
int listenTcp(const std::string& address, int& port);
// Why 0.0.0.0:port cannot be bound ("Address already in use"), or "" when it can.
std::string bindError(int port);
// A host name's IPv4 address through the system's name service (getaddrinfo); false with why (the
// resolver's text). In an object file of its own (names.cpp), so that ddprun-worker, linked
// static, does not link glibc's name service (docs/launcher.md, "The binaries").
bool resolveIpv4(const std::string& host, in_addr& address, std::string& why);
using Resolver = bool (*)(const std::string& host, in_addr& address, std::string& why);
// Connects to host:port, retrying until timeoutS; -1 on failure with why set. A numeric host
// needs no resolver; a name is resolved by `resolve`, and fails at once without one.
int connectTcp(const std::string& host, int port, double timeoutS, std::string& why, Resolver resolve);

std::string hostname();
// The CPUs this process may run on (its affinity), at least 1.
int usableCpus();
// Random bytes as hex (from /dev/urandom).
std::string randomHex(size_t bytes);

}  // namespace ddp::launcher::io
