#pragma once
// Plumbing shared by the supervisor and the worker: signals as bytes on a pipe (so one poll()
// loop sees signals, sockets and pipes), line framing, TCP helpers and the wall clock.

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
// Connects to host:port (resolving host), retrying until timeoutS; -1 on failure with why set.
int connectTcp(const std::string& host, int port, double timeoutS, std::string& why);

std::string hostname();
// The CPUs this process may run on (its affinity), at least 1.
int usableCpus();
// Random bytes as hex (from /dev/urandom).
std::string randomHex(size_t bytes);

}  // namespace ddp::launcher::io
