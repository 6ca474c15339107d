#include "ncclrr/base/memory_use.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace ncclrr {
namespace {

// The first number in `path` (0 and false where there is none: "max", a missing file).
bool ReadNumber(const std::string& path, uint64_t* out) {
  std::ifstream in(path);
  unsigned long long v = 0;
  if (!(in >> v)) return false;
  *out = v;
  return true;
}

// The value of `key` in a memory.stat file, or 0.
uint64_t StatValue(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string k;
  unsigned long long v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return 0;
}

// What the memory cgroups this process is in (its own and every one above, cgroup v2 or v1) let
// it allocate still: the least of limit - usage, usage counted without the page cache, which the
// kernel reclaims before it kills anything (a cgroup that read files is full of it). UINT64_MAX
// where no limit is set or none can be read. A job under Slurm or in a container has far less than
// the machine's MemAvailable.
uint64_t CgroupRoomBytes() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  uint64_t room = UINT64_MAX;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    const bool v2 = line.compare(0, a, "0") == 0 && controllers.empty();
    bool v1 = false;
    std::stringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');) v1 = v1 || c == "memory";
    if (!v2 && !v1) continue;
    const std::string root = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
    const char* limit_file = v2 ? "/memory.max" : "/memory.limit_in_bytes";
    const char* usage_file = v2 ? "/memory.current" : "/memory.usage_in_bytes";
    const char* inactive = v2 ? "inactive_file" : "total_inactive_file";
    const char* active = v2 ? "active_file" : "total_active_file";
    for (;;) {
      const std::string dir = root + (path == "/" ? "" : path);
      uint64_t limit = 0, usage = 0;
      if (ReadNumber(dir + limit_file, &limit) && ReadNumber(dir + usage_file, &usage) &&
          limit < (uint64_t{1} << 60)) {
        const uint64_t reclaimable =
            StatValue(dir + "/memory.stat", inactive) + StatValue(dir + "/memory.stat", active);
        const uint64_t used = usage - std::min(usage, reclaimable);
        room = std::min(room, limit - std::min(limit, used));
      }
      if (path.empty() || path == "/" || path.find('/') == std::string::npos) break;
      path = path.substr(0, path.rfind('/'));
      if (path.empty()) path = "/";
    }
  }
  return room;
}

}  // namespace

uint64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  const long page = sysconf(_SC_PAGESIZE);
  return got == 2 && page > 0 ? resident * static_cast<uint64_t>(page) : 0;
}

uint64_t AvailableMemoryBytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kib = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "MemAvailable:", 13) == 0) {
      unsigned long long v = 0;
      if (std::sscanf(line + 13, "%llu", &v) == 1) kib = v;
      break;
    }
  std::fclose(f);
  const uint64_t room = CgroupRoomBytes();
  return room == UINT64_MAX ? kib * 1024 : std::min(kib * 1024, room);
}

}  // namespace ncclrr
