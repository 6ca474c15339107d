#include "child_processes.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

namespace ncclrr::replay {
namespace {

constexpr const char* kChildVar = "NCCLRR_REPLAY_CHILD";  // "<fd>,<actor>,<slot>,<budget>"

// Frames on a link: an 8-byte length, then the bytes.
bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool WriteFrame(int fd, const void* data, size_t n) {
  const uint64_t len = n;
  return WriteAll(fd, &len, sizeof len) && WriteAll(fd, data, n);
}

std::string ExitText(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "ended";
}

// Waits up to `seconds` for `pid`; then kills it. Returns how it ended.
std::string Reap(pid_t pid, double seconds) {
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return ExitText(status);
    if (r < 0) return "ended";
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return "did not finish and was killed";
}

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return buf;
}

}  // namespace

StatusOr<std::unique_ptr<ChildProcesses>> ChildProcesses::Start(
    const std::vector<std::string>& args, const GpuPlacement& placement, uint64_t budget,
    double wait_s) {
  const std::string exe = SelfExe();
  if (exe.empty() || args.empty())
    return Unsupported(
        "one process per rank needs the replay's own command line (run it through `ncclrr "
        "replay`)");
  std::unique_ptr<ChildProcesses> group(new ChildProcesses());
  group->wait_s_ = wait_s;
  const std::string host = HostName();
  // Ranks on one machine reach each other over loopback unless the user chose an interface.
  const bool set_ifname =
      placement.sharing == GpuSharing::kHostIds && std::getenv("NCCL_SOCKET_IFNAME") == nullptr;
  if (set_ifname) setenv("NCCL_SOCKET_IFNAME", "lo", 1);  // also for the parent's bootstrap root
  for (int a = 0; a < placement.processes; ++a) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      return IoError(std::string("socketpair: ") + std::strerror(errno));
    const int slot = placement.SlotOf(a);
    const uint64_t mine = budget / static_cast<uint64_t>(placement.SharersOf(slot));
    // Everything the child needs is built before fork: after it only async-signal-safe calls.
    const auto settings = placement.EnvFor(a, host);
    auto replaced = [&](const char* entry) {
      const std::string key(entry, std::strcspn(entry, "="));
      if (key == kChildVar) return true;
      for (const auto& s : settings)
        if (s.first == key) return true;
      return false;
    };
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e)
      if (!replaced(*e)) env.push_back(*e);
    env.push_back(std::string(kChildVar) + "=" + std::to_string(sv[1]) + "," + std::to_string(a) +
                  "," + std::to_string(placement.gpus > 0 ? slot : -1) + "," +
                  std::to_string(mine));
    for (const auto& [k, v] : settings) env.push_back(k + "=" + v);
    std::vector<char*> envp, argv;
    for (std::string& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> arg_copy = args;
    argv.push_back(const_cast<char*>(exe.c_str()));
    for (std::string& s : arg_copy) argv.push_back(s.data());
    argv.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      close(sv[0]);
      close(sv[1]);
      return IoError(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);  // the parent is already gone
      fcntl(sv[1], F_SETFD, 0);             // the child's end survives exec
      execve(exe.c_str(), argv.data(), envp.data());
      _exit(127);
    }
    close(sv[1]);
    group->children_.push_back({pid, sv[0], false, ""});
  }
  return group;
}

ChildProcesses::~ChildProcesses() {
  for (Child& c : children_)
    if (c.fd >= 0) close(c.fd);
  // After the last ordering every child only tears down: give it time, then kill it.
  for (Child& c : children_)
    if (!c.gone) Reap(c.pid, 10);
}

void ChildProcesses::Lost(size_t actor, const std::string& why) {
  Child& c = children_[actor];
  if (c.gone) return;
  c.gone = true;
  c.why = "the process replaying rank " + std::to_string(actor) + " " + why;
}

Status ChildProcesses::Broadcast(void* data, size_t bytes) {
  for (size_t a = 0; a < children_.size(); ++a)
    if (!children_[a].gone && !WriteFrame(children_[a].fd, data, bytes))
      Lost(a, Reap(children_[a].pid, 5));
  return Status::Ok();  // a lost child is reported by the gather that misses its outcomes
}

Status ChildProcesses::GatherToRoot(const std::string&, std::vector<std::string>* all) {
  std::vector<bool> waiting(children_.size());
  size_t left = 0;
  for (size_t a = 0; a < children_.size(); ++a)
    if (!children_[a].gone) {
      waiting[a] = true;
      ++left;
    }
  // No deadline until one child reports (a long replay is not a stuck one); then the others
  // get wait_s, past their own watchdogs.
  std::chrono::steady_clock::time_point deadline{};
  bool any = false;
  while (left > 0) {
    std::vector<pollfd> fds;
    std::vector<size_t> who;
    for (size_t a = 0; a < children_.size(); ++a)
      if (waiting[a]) {
        fds.push_back({children_[a].fd, POLLIN, 0});
        who.push_back(a);
      }
    const int n = poll(fds.data(), fds.size(), 200);
    if (n < 0 && errno != EINTR) return IoError(std::string("poll: ") + std::strerror(errno));
    if (any && std::chrono::steady_clock::now() >= deadline) {
      for (size_t k = 0; k < who.size(); ++k) {
        kill(children_[who[k]].pid, SIGKILL);
        Lost(who[k], "did not report within " + std::to_string(static_cast<int>(wait_s_)) +
                         " s of the others and was killed");
        Reap(children_[who[k]].pid, 5);
      }
      break;
    }
    for (size_t k = 0; n > 0 && k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      const size_t a = who[k];
      waiting[a] = false;
      --left;
      uint64_t len = 0;
      std::string blob;
      bool ok = ReadAll(children_[a].fd, &len, sizeof len) && len < (1ull << 40);
      if (ok) {
        blob.resize(len);
        ok = ReadAll(children_[a].fd, blob.data(), len);
      }
      if (!ok) {
        Lost(a, Reap(children_[a].pid, 5) + " before reporting");
        continue;
      }
      all->push_back(std::move(blob));
      if (!any) {
        any = true;
        deadline = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(wait_s_));
      }
    }
  }
  std::string lost;
  for (const Child& c : children_)
    if (c.gone) lost += (lost.empty() ? "" : "; ") + c.why;
  if (!lost.empty()) return IoError(lost);
  return Status::Ok();
}

StatusOr<std::unique_ptr<ChildLink>> ChildLink::FromEnvironment() {
  const char* v = std::getenv(kChildVar);
  if (v == nullptr) return std::unique_ptr<ChildLink>();
  std::unique_ptr<ChildLink> link(new ChildLink());
  unsigned long long budget = 0;
  if (std::sscanf(v, "%d,%d,%d,%llu", &link->fd_, &link->actor_, &link->slot_, &budget) != 4 ||
      link->fd_ < 0 || link->actor_ < 0 || fcntl(link->fd_, F_GETFD) < 0)
    return InvalidArgument(std::string(kChildVar) + "='" + v +
                           "' is not a link from a parent replay (it is set only by `ncclrr "
                           "replay` for its own children; unset it)");
  link->budget_ = budget;
  fcntl(link->fd_, F_SETFD, FD_CLOEXEC);
  return link;
}

ChildLink::~ChildLink() {
  if (fd_ >= 0) close(fd_);
}

Status ChildLink::Broadcast(void* data, size_t bytes) {
  uint64_t len = 0;
  if (!ReadAll(fd_, &len, sizeof len) || len != bytes || !ReadAll(fd_, data, bytes))
    return IoError("lost the link to the parent replay");
  return Status::Ok();
}

Status ChildLink::GatherToRoot(const std::string& blob, std::vector<std::string>*) {
  if (!WriteFrame(fd_, blob.data(), blob.size()))
    return IoError("lost the link to the parent replay");
  return Status::Ok();
}

bool IsReplayChild() { return std::getenv(kChildVar) != nullptr; }

}  // namespace ncclrr::replay
