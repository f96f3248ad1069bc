#pragma once
// A FIFO of tasks run one at a time on a thread of its own, each observed through a Work.
// Backends whose library calls block (MPI) use it to give asynchronous collectives while the
// library still runs its best blocking algorithms, as c10d's ProcessGroupMPI does.

#include "ddp/comm/backend.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace ddp::comm::detail {

// Completion state shared by a queued task and its Work handle.
class QueuedWork final : public Work {
 public:
  bool isCompleted() override;
  void wait(std::chrono::milliseconds timeout) override;
  std::chrono::nanoseconds duration() const override;

  void markStarted();
  void markDone(std::exception_ptr error);

 private:
  mutable std::mutex mutex_;
  std::condition_variable done_;
  bool completed_ = false;
  std::exception_ptr error_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::nanoseconds duration_{0};
};

// A Work that is already complete (zero-length collectives that need no communication).
std::shared_ptr<Work> completedWork();

// Tasks run in submission order on one thread. The destructor runs what is queued, then joins.
class WorkQueue {
 public:
  WorkQueue();
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  std::shared_ptr<Work> submit(std::function<void()> task);
  // Runs `task` on the calling thread when nothing is queued or running (saving two thread
  // hand-offs, which dominate small collectives); otherwise queues it behind the others.
  std::shared_ptr<Work> runOrSubmit(std::function<void()> task);

 private:
  void loop();
  // Appends `task` and wakes the queue's thread; mutex_ must be held.
  std::shared_ptr<Work> enqueueLocked(std::function<void()> task);

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<std::function<void()>, std::shared_ptr<QueuedWork>>> tasks_;
  bool stopping_ = false;
  bool running_ = false;  // a task runs, on the queue's thread or inline
  std::thread thread_;
};

}  // namespace ddp::comm::detail
