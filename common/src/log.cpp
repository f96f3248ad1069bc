#include "ddp/common/log.hpp"

#include "ddp/common/error.hpp"
#include "ddp/common/log_message.hpp"

#include <fmt/format.h>
#include <spdlog/sinks/base_sink.h>

#include <cstdio>
#include <map>
#include <mutex>

namespace ddp::log {
namespace {

// The one sink of every logger: formats the line itself (see log.hpp) and writes it whole.
class StderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void setPrefix(std::string prefix) {
    std::lock_guard<std::mutex> lock(mutex_);
    prefix_ = std::move(prefix);
  }
  void setBeforeWrite(std::function<void()> hook) {
    std::lock_guard<std::mutex> lock(mutex_);
    beforeWrite_ = std::move(hook);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const char* marker = msg.level == spdlog::level::warn    ? "warning: "
                         : msg.level == spdlog::level::debug ? "debug: "
                         : msg.level == spdlog::level::trace ? "trace: "
                                                             : "";
    const auto line = fmt::format("{}{}{}: {}{}\n", fmt::string_view(msg.logger_name.data(), msg.logger_name.size()),
                                  prefix_.empty() ? "" : " ", prefix_, marker,
                                  fmt::string_view(msg.payload.data(), msg.payload.size()));
    if (beforeWrite_) beforeWrite_();
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  }
  void flush_() override { std::fflush(stderr); }

 private:
  std::string prefix_;
  std::function<void()> beforeWrite_;
};

struct Registry {
  std::mutex mutex;
  std::shared_ptr<StderrSink> sink = std::make_shared<StderrSink>();
  spdlog::level::level_enum level = spdlog::level::info;
  std::map<std::string, std::shared_ptr<spdlog::logger>> loggers;
};

Registry& registry() {
  static Registry r;  // never destroyed before the last log line: a function-local static
  return r;
}

}  // namespace

std::shared_ptr<spdlog::logger> get(const std::string& name) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto& logger = r.loggers[name];
  if (!logger) {
    logger = std::make_shared<spdlog::logger>(name, r.sink);
    logger->set_level(r.level);
    logger->flush_on(spdlog::level::trace);
  }
  return logger;
}

void error(const std::string& name, const std::string& message) { get(name)->error("{}", message); }

void setLevel(spdlog::level::level_enum level) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.level = level;
  for (auto& [name, logger] : r.loggers) logger->set_level(level);
}

spdlog::level::level_enum parseLevel(const std::string& text, const std::string& what) {
  if (text == "error") return spdlog::level::err;
  if (text == "warn") return spdlog::level::warn;
  if (text == "info") return spdlog::level::info;
  if (text == "debug") return spdlog::level::debug;
  throw ConfigError(fmt::format("{} '{}': expected error, warn, info or debug", what, text));
}

void setPrefix(const std::string& prefix) { registry().sink->setPrefix(prefix); }

void setBeforeWrite(std::function<void()> hook) { registry().sink->setBeforeWrite(std::move(hook)); }

}  // namespace ddp::log
