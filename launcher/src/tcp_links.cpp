#include "tcp_links.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <string_view>

namespace ddp::launcher::tcp {
namespace {

constexpr int kEstablished = 1;  // TCP_ESTABLISHED in the kernel's state numbering

// An open file descriptor that closes itself.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// An IPv6 address that is an IPv4 one (::ffff:a.b.c.d, as a dual-stack socket sees a v4 peer).
bool mappedV4(const uint32_t* words) { return words[0] == 0 && words[1] == 0 && words[2] == htonl(0xffff); }

std::string address(int family, const uint32_t* words) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  const bool v4 = family == AF_INET || mappedV4(words);
  if (!::inet_ntop(v4 ? AF_INET : AF_INET6, v4 && family != AF_INET ? words + 3 : words, text.data(), text.size()))
    return "";
  return text.data();
}

bool loopback(int family, const uint32_t* words) {
  if (family == AF_INET || mappedV4(words)) return (ntohl(words[family == AF_INET ? 0 : 3]) >> 24) == 127;
  return words[0] == 0 && words[1] == 0 && words[2] == 0 && words[3] == htonl(1);
}

bool crossesNoLink(int family, const inet_diag_sockid& id) {
  return std::memcmp(id.idiag_src, id.idiag_dst, family == AF_INET ? 4 : 16) == 0 || loopback(family, id.idiag_dst);
}

// One inet_diag reply: the connection when it is one of `inodes` and crosses a link.
void take(const nlmsghdr* h, const std::set<uint64_t>& inodes, std::map<uint64_t, Connection>& out) {
  const auto* msg = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
  if (!inodes.count(msg->idiag_inode) || crossesNoLink(msg->idiag_family, msg->id)) return;
  int left = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof(*msg)));
  for (auto* a = reinterpret_cast<const rtattr*>(msg + 1); RTA_OK(a, left); a = RTA_NEXT(a, left)) {
    if (a->rta_type != INET_DIAG_INFO) continue;
    tcp_info info{};
    std::memcpy(&info, RTA_DATA(a), std::min<size_t>(RTA_PAYLOAD(a), sizeof info));
    if (RTA_PAYLOAD(a) < offsetof(tcp_info, tcpi_sndbuf_limited)) return;  // a kernel before 4.10
    Connection c;
    c.local = address(msg->idiag_family, msg->id.idiag_src);
    c.peer = address(msg->idiag_family, msg->id.idiag_dst);
    c.bytesAcked = info.tcpi_bytes_acked;
    c.sendingUs = info.tcpi_busy_time > info.tcpi_rwnd_limited ? info.tcpi_busy_time - info.tcpi_rwnd_limited : 0;
    out[msg->idiag_inode] = c;
    return;
  }
}

// Dumps one family's established TCP sockets with their tcp_info into `out`.
void dump(int family, const std::set<uint64_t>& inodes, std::map<uint64_t, Connection>& out) {
  Fd sock(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (sock.get() < 0) return;
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } ask{};
  ask.header.nlmsg_len = sizeof ask;
  ask.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  ask.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  ask.request.sdiag_family = static_cast<uint8_t>(family);
  ask.request.sdiag_protocol = IPPROTO_TCP;
  ask.request.idiag_states = 1u << kEstablished;
  ask.request.idiag_ext = 1u << (INET_DIAG_INFO - 1);
  if (::send(sock.get(), &ask, sizeof ask, 0) != static_cast<ssize_t>(sizeof ask)) return;
  alignas(nlmsghdr) std::array<char, 32768> buf;
  for (;;) {
    const ssize_t n = ::recv(sock.get(), buf.data(), buf.size(), 0);
    if (n <= 0) return;
    int left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<const nlmsghdr*>(buf.data()); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) return;
      if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY) take(h, inodes, out);
    }
  }
}

}  // namespace

std::set<uint64_t> socketInodes(const std::vector<int>& pids) {
  std::set<uint64_t> inodes;
  constexpr std::string_view kSocket = "socket:[";
  for (int pid : pids) {
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = ::opendir(dir.c_str());
    if (!d) continue;
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::array<char, 64> target{};
      const std::string path = dir + "/" + e->d_name;
      const ssize_t n = ::readlink(path.c_str(), target.data(), target.size() - 1);
      if (n <= static_cast<ssize_t>(kSocket.size()) || std::string_view(target.data(), kSocket.size()) != kSocket)
        continue;
      inodes.insert(std::strtoull(target.data() + kSocket.size(), nullptr, 10));
    }
    ::closedir(d);
  }
  return inodes;
}

std::map<uint64_t, Connection> connections(const std::set<uint64_t>& inodes) {
  std::map<uint64_t, Connection> out;
  if (inodes.empty()) return out;
  dump(AF_INET, inodes, out);
  dump(AF_INET6, inodes, out);
  return out;
}

}  // namespace ddp::launcher::tcp
