// Runs the command of `ncclrr record` as a child process and reports how it ended, the way a
// shell would: signals meant for the whole job reach it once (those sent by the terminal to the
// process group already did; those sent to ncclrr itself are passed on). ncclrr is the job's
// subreaper, so a worker whose parent died (torch.multiprocessing.spawn, a launcher killed first)
// is still found: a termination signal sent to ncclrr reaches every process of the job's tree,
// and ncclrr waits a few seconds for them to write their traces before it returns. If ncclrr is
// killed outright (SIGKILL), the command gets SIGTERM (a parent-death signal).
// Header-only: cli/CMakeLists.txt compiles the cmd_*.cc files only.
#pragma once
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
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
inline volatile sig_atomic_t g_tree_signal = 0;  // a signal still to pass to the job's tree

inline void PassOn(int sig, siginfo_t* info, void*) {
  const bool from_a_process =
      info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE);
  if (g_child > 0 && from_a_process) {
    kill(g_child, sig);
    g_tree_signal = sig;  // the rest of the tree: outside the handler (reading /proc)
  }
}

inline constexpr int kPassedOn[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

// Every process below this one (ncclrr is a subreaper: orphans of the job are ours).
inline std::vector<pid_t> Descendants() {
  std::map<pid_t, pid_t> parent;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
      if (pid <= 0) continue;
      char path[64], buf[512];
      std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
      FILE* f = std::fopen(path, "r");
      if (f == nullptr) continue;
      const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
      std::fclose(f);
      buf[n] = '\0';
      const char* close = std::strrchr(buf, ')');  // the name may hold spaces and parentheses
      int ppid = 0;
      if (close != nullptr && std::sscanf(close + 1, " %*c %d", &ppid) == 1) parent[pid] = ppid;
    }
    closedir(d);
  }
  std::vector<pid_t> out;
  const pid_t self = getpid();
  for (const auto& [pid, ppid] : parent) {
    pid_t p = ppid;
    for (int depth = 0; p > 1 && p != self && depth < 64; ++depth) {
      auto it = parent.find(p);
      p = it == parent.end() ? 0 : it->second;
    }
    if (p == self) out.push_back(pid);
  }
  return out;
}

inline void SignalTree(int sig) {
  for (pid_t pid : Descendants()) kill(pid, sig);
}

// After the command ended: reaps what is left of the job, for at most `grace_ms` (they are
// writing their traces after a termination signal).
inline void ReapTree(int grace_ms) {
  for (int waited = 0; waited < grace_ms; waited += 20) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (Descendants().empty()) return;
    timespec ts{0, 20'000'000};
    nanosleep(&ts, nullptr);
  }
}

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
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t self = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    result.error = std::string("cannot fork: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    close(report[0]);
    // If ncclrr itself is killed outright (a scheduler's `timeout -s KILL`), the command gets
    // SIGTERM rather than running on unwatched; launchers (torchrun, mpirun) pass it to their
    // workers, which write their traces. It survives the exec; it is not inherited by forks.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != self) _exit(128 + SIGTERM);  // ncclrr died before the line above
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
  sa.sa_flags = SA_SIGINFO;  // no SA_RESTART: waitpid returns to pass the signal on to the tree
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof kPassedOn / sizeof kPassedOn[0]; ++i)
    sigaction(kPassedOn[i], &sa, &old[i]);

  int err = 0;
  ssize_t n;
  while ((n = read(report[0], &err, sizeof err)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  int status = 0;
  int tree_signal = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    if (const int sig = g_tree_signal) {
      g_tree_signal = 0;
      tree_signal = sig;
      SignalTree(sig);
    }
  }
  if (const int sig = g_tree_signal) tree_signal = sig;
  if (tree_signal == SIGTERM || tree_signal == SIGINT || tree_signal == SIGHUP ||
      tree_signal == SIGQUIT) {
    SignalTree(tree_signal);  // workers the command left behind when it died
    ReapTree(5000);
  } else {
    ReapTree(0);
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
