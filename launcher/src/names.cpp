// Name resolution, apart from io.cpp: ddprun-worker is linked static, and glibc's getaddrinfo in
// a static binary loads the name service's modules of the glibc it was built with; the worker
// does not link it, and hands a rank that needs a name resolved to `ddprun worker` (worker.hpp).
#include "io.hpp"

#include <netdb.h>
#include <sys/socket.h>

namespace ddp::launcher::io {

bool resolveIpv4(const std::string& host, in_addr& address, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0) {
    why = ::gai_strerror(rc);
    return false;
  }
  address = reinterpret_cast<const sockaddr_in*>(res->ai_addr)->sin_addr;
  ::freeaddrinfo(res);
  return true;
}

}  // namespace ddp::launcher::io
