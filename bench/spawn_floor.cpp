// spawn_floor PROGRAM [ARGS...]: the least a per-rank supervisor can add to a launch. It starts
// PROGRAM (posix_spawn, which is vfork and exec), waits for it and exits with its status, and
// does nothing else: no control connection, no rank log, no exit record. bench/launch-overhead.sh
// runs it under mpirun beside ddprun-worker to show what the worker adds beyond an extra process.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: spawn_floor PROGRAM [ARGS...]\n");
    return 2;
  }
  pid_t pid = 0;
  if (const int err = ::posix_spawn(&pid, argv[1], nullptr, nullptr, argv + 1, environ); err != 0) {
    std::fprintf(stderr, "spawn_floor: %s: %s\n", argv[1], std::strerror(err));
    return 127;
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
