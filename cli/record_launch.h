// Runs the command of `ncclrr record` as a child process and reports how it ended, the way a
// shell would: signals meant for the whole job reach it once (those sent by the terminal to the
// process group already did; those sent to ncclrr itself are passed on).
// Header-only: cli/CMakeLists.txt compiles the cmd_*.cc files only.
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace ncclrr::cli {

struct LaunchResult {
  bool started = false;
  int exit_code = 0;  // the command's status, 128+N when killed by signal N
  std::string error;  // why it did not start (not found, not executable...)
  int start_errno = 0;
};

namespace record_detail {

inline volatile sig_atomic_t g_child = 0;

// A signal sent to ncclrr by a process (kill, a job scheduler) is passed on to the command. One
// the terminal sent (Ctrl-C, hangup) went to the whole foreground process group, the command
// included, and is not sent twice.
inline void PassOn(int sig, siginfo_t* info, void*) {
  const bool from_a_process =
      info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE);
  if (g_child > 0 && from_a_process) kill(g_child, sig);
}

inline constexpr int kPassedOn[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

}  // namespace record_detail

// Runs `argv` (searched in PATH) with `env` as its whole environment and waits for it.
inline LaunchResult RunCommand(const std::vector<std::string>& argv,
                               const std::vector<std::string>& env) {
  using namespace record_detail;
  LaunchResult result;
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  // The child reports a failed exec through a close-on-exec pipe: EOF means it started.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    result.error = std::string("cannot create a pipe: ") + std::strerror(errno);
    return result;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    result.error = std::string("cannot fork: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    close(report[0]);
    execvpe(args[0], args.data(), envp.data());
    const int err = errno;
    (void)!write(report[1], &err, sizeof err);
    _exit(127);
  }
  close(report[1]);
  g_child = pid;
  struct sigaction sa {
  }, old[sizeof kPassedOn / sizeof kPassedOn[0]];
  sa.sa_sigaction = PassOn;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof kPassedOn / sizeof kPassedOn[0]; ++i)
    sigaction(kPassedOn[i], &sa, &old[i]);

  int err = 0;
  ssize_t n;
  while ((n = read(report[0], &err, sizeof err)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  for (size_t i = 0; i < sizeof kPassedOn / sizeof kPassedOn[0]; ++i)
    sigaction(kPassedOn[i], &old[i], nullptr);
  g_child = 0;
  if (n == static_cast<ssize_t>(sizeof err)) {
    result.start_errno = err;
    result.error = std::strerror(err);
    result.exit_code = err == ENOENT ? 127 : 126;  // as a shell says "not found" / "cannot run"
    return result;
  }
  result.started = true;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  return result;
}

}  // namespace ncclrr::cli
