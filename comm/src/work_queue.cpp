#include "ddp/comm/detail/work_queue.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>

namespace ddp::comm::detail {

bool QueuedWork::isCompleted() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (completed_ && error_) std::rethrow_exception(error_);
  return completed_;
}

void QueuedWork::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout < std::chrono::milliseconds::zero()) {
    done_.wait(lock, [this] { return completed_; });
  } else if (!done_.wait_for(lock, timeout, [this] { return completed_; })) {
    throw TimeoutError(fmt::format("collective did not complete within {} ms", timeout.count()));
  }
  if (error_) std::rethrow_exception(error_);
}

std::chrono::nanoseconds QueuedWork::duration() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return duration_;
}

void QueuedWork::markStarted() {
  std::lock_guard<std::mutex> lock(mutex_);
  start_ = std::chrono::steady_clock::now();
}

void QueuedWork::markDone(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    duration_ = std::chrono::steady_clock::now() - start_;
    error_ = std::move(error);
    completed_ = true;
  }
  done_.notify_all();
}

namespace {

// Runs `task`, recording in `work` when it started, when it ended and what it threw.
void execute(const std::function<void()>& task, QueuedWork& work) {
  work.markStarted();
  std::exception_ptr error;
  try {
    task();
  } catch (...) {
    error = std::current_exception();
  }
  work.markDone(error);
}

}  // namespace

std::shared_ptr<Work> completedWork() {
  auto work = std::make_shared<QueuedWork>();
  execute([] {}, *work);
  return work;
}

WorkQueue::WorkQueue() : thread_([this] { loop(); }) {}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  thread_.join();
}

std::shared_ptr<Work> WorkQueue::submit(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mutex_);
  return enqueueLocked(std::move(task));
}

std::shared_ptr<Work> WorkQueue::enqueueLocked(std::function<void()> task) {
  auto work = std::make_shared<QueuedWork>();
  tasks_.emplace_back(std::move(task), work);
  ready_.notify_one();
  return work;
}

std::shared_ptr<Work> WorkQueue::runOrSubmit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (running_ || !tasks_.empty()) return enqueueLocked(std::move(task));
    running_ = true;
  }
  auto work = std::make_shared<QueuedWork>();
  execute(task, *work);
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
    queued = !tasks_.empty();
  }
  // Waking the queue's thread for nothing costs a context switch per small collective.
  if (queued) ready_.notify_one();
  return work;
}

void WorkQueue::loop() {
  for (;;) {
    std::pair<std::function<void()>, std::shared_ptr<QueuedWork>> item;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return (stopping_ || !tasks_.empty()) && !running_; });
      if (tasks_.empty()) return;
      item = std::move(tasks_.front());
      tasks_.pop_front();
      running_ = true;
    }
    execute(item.first, *item.second);
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
  }
}

}  // namespace ddp::comm::detail
