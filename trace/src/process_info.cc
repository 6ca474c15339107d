#include "ncclrr/trace/process_info.h"

#include <cstring>
#include <fstream>

extern char** environ;

namespace ncclrr {

std::vector<std::string> ProcessArgv() {
  std::vector<std::string> argv;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(in, arg, '\0')) argv.push_back(arg);
  return argv;
}

std::map<std::string, std::string> NcclEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* kv = *e;
    if (std::strncmp(kv, "NCCL_", 5) != 0 && std::strncmp(kv, "NCCLRR_", 7) != 0) continue;
    if (const char* eq = std::strchr(kv, '=')) env[std::string(kv, eq)] = eq + 1;
  }
  return env;
}

}  // namespace ncclrr
