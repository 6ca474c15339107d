#include "processes.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace ncclrr::example {
namespace {

constexpr const char* kRankVar = "NCCLRR_EXAMPLE_RANK";
constexpr const char* kIdsVar = "NCCLRR_EXAMPLE_IDS";

std::string HostName() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 && name[0] ? name : "host";
}

}  // namespace

int ChildRank() {
  const char* r = std::getenv(kRankVar);
  return r != nullptr ? std::atoi(r) : -1;
}

int RunRankProcesses(char** argv, int ranks, bool real_nccl) {
  const std::string ids = "/tmp/ncclrr-example-" + std::to_string(getpid()) + ".ids";
  unlink(ids.c_str());
  setenv(kIdsVar, ids.c_str(), 1);
  if (real_nccl && std::getenv("NCCL_SOCKET_IFNAME") == nullptr)
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  const pid_t parent = getpid();
  std::vector<pid_t> children;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("ncclrr-example: fork");
      break;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(2);
      setenv(kRankVar, std::to_string(r).c_str(), 1);
      if (real_nccl) setenv("NCCL_HOSTID", (HostName() + "-rank" + std::to_string(r)).c_str(), 1);
      execv("/proc/self/exe", argv);
      _exit(2);
    }
    children.push_back(pid);
  }
  int worst = children.size() == static_cast<size_t>(ranks) ? 0 : 2;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 2;
    // 3 (a hang) outranks 2 (an error), which outranks 1 (wrong results).
    if (code == 3 || (code == 2 && worst != 3) || (code == 1 && worst == 0)) worst = code;
  }
  unlink(ids.c_str());
  std::printf("processes: %d rank(s), exit %d\n", ranks, worst);
  return worst;
}

std::vector<ncclUniqueId> SharedIds(int count, int rank) {
  std::vector<ncclUniqueId> ids(static_cast<size_t>(count));
  const char* path = std::getenv(kIdsVar);
  if (path == nullptr) return ids;
  if (rank == 0) {
    for (ncclUniqueId& id : ids) ncclGetUniqueId(&id);
    const std::string tmp = std::string(path) + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "wb")) {
      std::fwrite(ids.data(), sizeof(ncclUniqueId), ids.size(), f);
      std::fclose(f);
      std::rename(tmp.c_str(), path);  // the others never see half a file
    }
    return ids;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (FILE* f = std::fopen(path, "rb")) {
      const size_t n = std::fread(ids.data(), sizeof(ncclUniqueId), ids.size(), f);
      std::fclose(f);
      if (n == ids.size()) return ids;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "ncclrr-example: rank %d: rank 0 never published the ids in %s\n", rank,
               path);
  std::exit(2);
}

}  // namespace ncclrr::example
