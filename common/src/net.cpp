#include "ddp/common/net.hpp"

#include "ddp/common/error.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace ddp::net {
namespace {

std::optional<uint32_t> parseIpv4(const std::string& text) {
  in_addr addr{};
  if (inet_pton(AF_INET, text.c_str(), &addr) != 1) return std::nullopt;
  return ntohl(addr.s_addr);
}

// A dotted IPv4 address as is, else the host name's first IPv4 address (as torchrun accepts
// MASTER_ADDR=node0).
uint32_t resolveIpv4(const std::string& address) {
  if (auto ip = parseIpv4(address)) return *ip;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(address.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr)
    throw ConfigError(fmt::format("'{}' is neither an IPv4 address nor a host name that resolves ({})", address,
                                  rc != 0 ? gai_strerror(rc) : "no IPv4 address"));
  const uint32_t ip = ntohl(reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr.s_addr);
  freeaddrinfo(found);
  return ip;
}

std::string names(const std::vector<NetInterface>& interfaces) {
  std::string out;
  for (const auto& i : interfaces) out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", i.name, i.address);
  return out.empty() ? "none" : out;
}

bool inSubnet(const NetInterface& i, uint32_t addr) {
  return !i.loopback && i.netmask != 0 && (i.addr & i.netmask) == (addr & i.netmask);
}

}  // namespace

std::vector<NetInterface> listInterfaces() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) throw CommError("getifaddrs failed: cannot list network interfaces");
  std::vector<NetInterface> result;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) continue;
    if ((it->ifa_flags & IFF_UP) == 0) continue;
    NetInterface i;
    i.name = it->ifa_name;
    i.addr = ntohl(reinterpret_cast<sockaddr_in*>(it->ifa_addr)->sin_addr.s_addr);
    if (it->ifa_netmask != nullptr) {
      i.netmask = ntohl(reinterpret_cast<sockaddr_in*>(it->ifa_netmask)->sin_addr.s_addr);
    }
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(it->ifa_addr)->sin_addr, text, sizeof text);
    i.address = text;
    i.loopback = (it->ifa_flags & IFF_LOOPBACK) != 0;
    result.push_back(std::move(i));
  }
  freeifaddrs(list);
  return result;
}

NetInterface findInterface(const std::vector<NetInterface>& interfaces, const std::string& name) {
  for (const auto& i : interfaces) {
    if (i.name == name) return i;
  }
  throw ConfigError(
      fmt::format("network interface '{}' has no IPv4 address here (interfaces: {})", name, names(interfaces)));
}

NetInterface interfaceReaching(const std::vector<NetInterface>& interfaces, const std::string& address) {
  const uint32_t target = resolveIpv4(address);
  for (const auto& i : interfaces) {
    if (i.addr == target || inSubnet(i, target)) return i;
  }
  if ((target >> 24) == 127) {
    for (const auto& i : interfaces) {
      if (i.loopback) return i;
    }
  }
  // Ask the kernel's routing table: a connected UDP socket sends nothing.
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd >= 0) {
    sockaddr_in peer{};
    peer.sin_family = AF_INET;
    peer.sin_port = htons(9);
    peer.sin_addr.s_addr = htonl(target);
    sockaddr_in local{};
    socklen_t length = sizeof local;
    const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&peer), sizeof peer) == 0 &&
                    getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
    close(fd);
    if (ok) {
      const uint32_t mine = ntohl(local.sin_addr.s_addr);
      for (const auto& i : interfaces) {
        if (i.addr == mine) return i;
      }
    }
  }
  throw ConfigError(fmt::format("no network interface reaches {} (interfaces: {})", address, names(interfaces)));
}

HostRecord localHostRecord() {
  HostRecord record;
  record.interfaces = listInterfaces();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::vector<std::string> addrs;
  for (const auto& i : record.interfaces) {
    if (!i.loopback) addrs.push_back(i.address);
  }
  std::sort(addrs.begin(), addrs.end());
  record.identity = host;
  for (const auto& a : addrs) record.identity += "," + a;
  return record;
}

std::string chooseRendezvousAddress(const std::vector<HostRecord>& records) {
  if (records.empty()) throw Error("chooseRendezvousAddress: no ranks");
  const auto& root = records.front();
  const bool oneHost =
      std::all_of(records.begin(), records.end(), [&](const HostRecord& r) { return r.identity == root.identity; });
  if (oneHost) return "127.0.0.1";
  const NetInterface* best = nullptr;
  int bestHosts = -1;
  for (const auto& mine : root.interfaces) {
    if (mine.loopback) continue;
    int hosts = 0;
    for (const auto& other : records) {
      if (other.identity == root.identity) continue;
      hosts += std::any_of(other.interfaces.begin(), other.interfaces.end(),
                           [&](const NetInterface& i) { return inSubnet(mine, i.addr); });
    }
    if (hosts > bestHosts) {
      best = &mine;
      bestHosts = hosts;
    }
  }
  if (best == nullptr) {
    throw ConfigError("ranks run on several hosts but rank 0's host has no non-loopback IPv4 interface");
  }
  return best->address;
}

std::string encodeHostRecord(const HostRecord& record) {
  std::string out = record.identity + "\n";
  for (const auto& i : record.interfaces) {
    out += fmt::format("{} {} {} {} {}\n", i.name, i.address, i.addr, i.netmask, i.loopback ? 1 : 0);
  }
  return out;
}

HostRecord decodeHostRecord(const std::string& text) {
  std::istringstream in(text);
  HostRecord record;
  std::getline(in, record.identity);
  NetInterface i;
  int loopback = 0;
  while (in >> i.name >> i.address >> i.addr >> i.netmask >> loopback) {
    i.loopback = loopback != 0;
    record.interfaces.push_back(i);
  }
  return record;
}

}  // namespace ddp::net
