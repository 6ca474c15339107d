#include "ncclrr/base/memory_use.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace ncclrr {

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
  return kib * 1024;
}

}  // namespace ncclrr
