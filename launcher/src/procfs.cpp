#include "procfs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace ddp::launcher::procfs {

std::optional<std::string> readSmallFile(const std::string& path, size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  ssize_t n;
  while (out.size() < limit && (n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

namespace {

// readSmallFile, "" when the file cannot be read.
std::string slurp(const std::string& path, size_t limit = 1 << 16) { return readSmallFile(path, limit).value_or(""); }

std::vector<std::string> numericEntries(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') out.emplace_back(e->d_name);
    ::closedir(d);
  }
  return out;
}

std::optional<ProcStat> parseStat(const std::string& line) {
  // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
  // cutime cstime priority nice threads itrealvalue starttime vsize rss; comm may hold spaces.
  const auto open = line.find('(');
  const auto close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcStat s;
  s.pid = std::atoi(line.c_str());
  s.comm = line.substr(open + 1, close - open - 1);
  long ppid = 0;
  unsigned long long utime = 0, stime = 0, start = 0;
  long long cutime = 0, cstime = 0;
  if (std::sscanf(line.c_str() + close + 1,
                  " %c %ld %ld %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld %*d %*d %*d %*d %llu %*u %ld",
                  &s.state, &ppid, &s.pgrp, &utime, &stime, &cutime, &cstime, &start, &s.rssPages) != 9)
    return std::nullopt;
  s.ticks = utime + stime;
  s.childTicks = static_cast<unsigned long long>(std::max(0LL, cutime + cstime));
  return s;
}

// "key value" lines (cpu.stat): the value of key, if there.
std::optional<unsigned long long> keyed(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  unsigned long long v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return std::nullopt;
}

// cgroup v1: the cpu controller's directory for a path, where it is mounted.
std::string v1CpuDir(const std::string& path) {
  for (const char* mount : {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"}) {
    const std::string dir = mount + path;
    if (::access((dir + "/cpu.stat").c_str(), R_OK) == 0) return dir;
  }
  return "";
}

CgroupCpu readV1(const std::string& dir) {
  CgroupCpu c;
  c.throttledNs = keyed(slurp(dir + "/cpu.stat"), "throttled_time");
  const long long quota = std::atoll(slurp(dir + "/cpu.cfs_quota_us").c_str());
  const long long period = std::atoll(slurp(dir + "/cpu.cfs_period_us").c_str());
  if (quota > 0 && period > 0) c.quotaCores = static_cast<double>(quota) / static_cast<double>(period);
  return c;
}

CgroupCpu readV2(const std::string& dir) {
  CgroupCpu c;
  if (auto us = keyed(slurp(dir + "/cpu.stat"), "throttled_usec")) c.throttledNs = *us * 1000;
  std::istringstream max(slurp(dir + "/cpu.max"));
  std::string quota;
  long long period = 0;
  if (max >> quota >> period && quota != "max" && period > 0)
    c.quotaCores = static_cast<double>(std::atoll(quota.c_str())) / static_cast<double>(period);
  return c;
}

}  // namespace

std::vector<ProcStat> scanProcesses() {
  std::vector<ProcStat> out;
  for (const auto& pid : numericEntries("/proc"))
    if (auto s = parseStat(slurp("/proc/" + pid + "/stat", 1024))) out.push_back(std::move(*s));
  return out;
}

void addThreads(int pid, ThreadTotals& t) {
  const std::string task = "/proc/" + std::to_string(pid) + "/task/";
  for (const auto& tid : numericEntries(task)) {
    unsigned long long run = 0, delay = 0;
    if (std::sscanf(slurp(task + tid + "/schedstat", 256).c_str(), "%llu %llu", &run, &delay) == 2)
      t.runDelayNs[std::atoi(tid.c_str())] = delay;
    if (auto stat = parseStat(slurp(task + tid + "/stat", 1024))) t.ticks[stat->pid] = stat->ticks;
    const std::string status = slurp(task + tid + "/status", 8192);
    if (auto at = status.find("nonvoluntary_ctxt_switches:"); at != std::string::npos)
      t.involuntarySwitches += std::strtoull(status.c_str() + at + 27, nullptr, 10);
  }
}

std::vector<int> affinity(int pid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (::sched_getaffinity(pid, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

CgroupCpu cgroupCpu(int pid) {
  std::istringstream in(slurp("/proc/" + std::to_string(pid) + "/cgroup"));
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1), path = line.substr(second + 1);
    if (controllers.empty() && line.compare(0, first, "0") == 0) {  // v2, unified
      if (::access(("/sys/fs/cgroup" + path + "/cpu.stat").c_str(), R_OK) == 0) return readV2("/sys/fs/cgroup" + path);
      continue;
    }
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');)
      if (name == "cpu") {
        const auto dir = v1CpuDir(path);
        if (!dir.empty()) return readV1(dir);
      }
  }
  return {};
}

HostTimes hostTimes() {
  HostTimes h;
  unsigned long long v[8] = {};
  if (std::sscanf(slurp("/proc/stat", 256).c_str(), "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                  &v[3], &v[4], &v[5], &v[6], &v[7]) < 4)
    return h;
  for (auto x : v) h.total += x;
  h.idle = v[3] + v[4];  // idle + iowait
  h.steal = v[7];
  return h;
}

std::optional<Load> loadAverage() {
  Load l;
  if (std::sscanf(slurp("/proc/loadavg", 256).c_str(), "%lf %*f %*f %d/", &l.load1, &l.runnable) != 2)
    return std::nullopt;
  return l;
}

std::optional<double> cpuPressureAvg10() {
  const std::string text = slurp("/proc/pressure/cpu", 512);
  const auto at = text.find("some avg10=");
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(text.c_str() + at + 11, nullptr);
}

int onlineCpus() { return static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))); }

bool environmentHas(int pid, const std::string& entry) {
  const std::string env = slurp("/proc/" + std::to_string(pid) + "/environ", 1 << 20);
  size_t start = 0;
  while (start < env.size()) {
    const size_t end = std::min(env.find('\0', start), env.size());
    if (env.compare(start, end - start, entry) == 0) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace ddp::launcher::procfs
