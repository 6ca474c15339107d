#include "env.h"

#include <cstdlib>

namespace ncclrr::host {
namespace {

int64_t ReadInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  return (end != v && x >= 0) ? x : fallback;
}

}  // namespace

int64_t TimeoutNs() {
  static const int64_t ns = ReadInt("NCCLRR_HOST_TIMEOUT_MS", 10000) * 1000000;
  return ns;
}

bool NoopMode() {
  static const bool noop = ReadInt("NCCLRR_HOST_NOOP", 0) != 0;
  return noop;
}

}  // namespace ncclrr::host
