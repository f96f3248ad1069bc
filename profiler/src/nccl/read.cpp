// Reading NCCL logs from files (docs/nccl-parser.md): a regular file is mapped a window at a time
// (no copy out of the page cache; resident memory stays ~one window per thread), a large one cut
// at line boundaries into one stretch per thread, each stretch read by a builder of its own and
// the builders merged in file order; pipes and special files are read in blocks, in order.
#include "ddp/common/error.hpp"
#include "ddp/profiler/nccl/facts.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <thread>

namespace ddp::profiler {
namespace {

constexpr size_t kWindow = size_t{8} << 20;      // mapped at a time, per thread
constexpr size_t kMinStretch = size_t{8} << 20;  // less than this is not worth a thread
constexpr unsigned kMaxThreads = 8;

[[noreturn]] void readFailed(const std::string& path, int error) {
  throw ConfigError(fmt::format("cannot read NCCL log {}: {}", path, std::strerror(error)));
}

class LogFile {
 public:
  explicit LogFile(const std::string& path) : path_(path), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) readFailed(path, errno);
    if (::fstat(fd_, &stat_) != 0) fail();
    if (S_ISDIR(stat_.st_mode)) throw ConfigError(fmt::format("NCCL log {} is a directory, not a file", path));
  }
  ~LogFile() { ::close(fd_); }
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;

  int fd() const { return fd_; }
  // Regular files that report a size are mapped; /proc files report 0 and are read.
  bool mappable() const { return S_ISREG(stat_.st_mode) && stat_.st_size > 0; }
  size_t size() const { return static_cast<size_t>(stat_.st_size); }
  [[noreturn]] void fail() const { readFailed(path_, errno); }

 private:
  std::string path_;
  int fd_;
  struct stat stat_ {};
};

// Feeds the lines of `data` to the builder; a line cut at the end of the window is kept in
// `carry` and completed by the next window.
void feedWindow(NcclFactsBuilder& builder, const char* data, size_t size, std::string& carry) {
  size_t start = 0;
  if (!carry.empty()) {
    const void* nl = std::memchr(data, '\n', size);
    if (!nl) {
      carry.append(data, size);
      return;
    }
    size_t end = static_cast<size_t>(static_cast<const char*>(nl) - data);
    carry.append(data, end);
    builder.addLine(carry);
    carry.clear();
    start = end + 1;
  }
  while (const void* nl = std::memchr(data + start, '\n', size - start)) {
    size_t end = static_cast<size_t>(static_cast<const char*>(nl) - data);
    builder.addLine(std::string_view(data + start, end - start));
    start = end + 1;
  }
  carry.assign(data + start, size - start);
}

// Reads the lines of [begin, end) of a mapped file; begin is a line's first byte, end the byte
// after a newline or the end of the file.
void readStretch(NcclFactsBuilder& builder, const LogFile& file, size_t begin, size_t end) {
  static const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::string carry;
  for (size_t offset = begin; offset < end;) {
    const size_t aligned = offset / page * page;
    const size_t length = std::min(kWindow, end - aligned);
    void* map = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, file.fd(), static_cast<off_t>(aligned));
    if (map == MAP_FAILED) file.fail();
    ::madvise(map, length, MADV_SEQUENTIAL);
    feedWindow(builder, static_cast<const char*>(map) + (offset - aligned), length - (offset - aligned), carry);
    ::munmap(map, length);
    offset = aligned + length;
  }
  if (!carry.empty()) builder.addLine(carry);  // a last line without a newline
}

// The first line start at or after `at`: just past the first newline at or after at - 1.
size_t lineStartFrom(const LogFile& file, size_t at) {
  if (at == 0) return 0;
  char block[4096];
  for (size_t pos = at - 1; pos < file.size();) {
    const ssize_t n = ::pread(file.fd(), block, std::min(sizeof block, file.size() - pos), static_cast<off_t>(pos));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) file.fail();
    if (n == 0) break;
    if (const void* nl = std::memchr(block, '\n', static_cast<size_t>(n)))
      return pos + static_cast<size_t>(static_cast<const char*>(nl) - block) + 1;
    pos += static_cast<size_t>(n);
  }
  return file.size();
}

unsigned stretchesFor(size_t size, unsigned threads) {
  if (threads > 0) return threads;
  cpu_set_t cpus;
  const int usable = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  const size_t bySize = std::max<size_t>(1, size / kMinStretch);
  return static_cast<unsigned>(std::min<size_t>({bySize, static_cast<size_t>(std::max(usable, 1)), kMaxThreads}));
}

// The main thread reads the first stretch into `builder`, one thread each of the others into a
// builder of its own; they are merged in file order once all are read.
void readMapped(NcclFactsBuilder& builder, const LogFile& file, unsigned threads) {
  const unsigned n = stretchesFor(file.size(), threads);
  std::vector<size_t> bounds(n + 1, file.size());
  bounds[0] = 0;
  for (unsigned k = 1; k < n; ++k) bounds[k] = std::max(bounds[k - 1], lineStartFrom(file, file.size() / n * k));
  std::vector<NcclFactsBuilder> parts(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> workers;
  auto read = [&](unsigned k) {
    try {
      readStretch(k == 0 ? builder : parts[k], file, bounds[k], bounds[k + 1]);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  for (unsigned k = 1; k < n; ++k) workers.emplace_back(read, k);
  read(0);
  for (auto& worker : workers) worker.join();
  for (const auto& error : errors)
    if (error) std::rethrow_exception(error);
  for (unsigned k = 1; k < n; ++k) builder.merge(parts[k]);
}

void readStream(NcclFactsBuilder& builder, const LogFile& file) {
  std::vector<char> buffer(size_t{4} << 20);
  std::string carry;
  for (;;) {
    const ssize_t n = ::read(file.fd(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) file.fail();
    if (n == 0) break;
    feedWindow(builder, buffer.data(), static_cast<size_t>(n), carry);
  }
  if (!carry.empty()) builder.addLine(carry);  // a last line without a newline
}

}  // namespace

NcclFacts readNcclLogs(const std::vector<std::string>& paths, unsigned threads) {
  NcclFactsBuilder builder;
  for (const auto& path : paths) {
    const LogFile file(path);
    if (file.mappable())
      readMapped(builder, file, threads);
    else
      readStream(builder, file);
  }
  return builder.finish();
}

}  // namespace ddp::profiler
