#include "ncclrr/base/env_knobs.h"

#include <strings.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ncclrr::env {
namespace {

const char* Get(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

bool Bool(const char* name, bool fallback, const char* who) {
  const char* v = Get(name);
  if (v == nullptr) return fallback;
  for (const char* yes : {"1", "true", "yes", "on"})
    if (!strcasecmp(v, yes)) return true;
  for (const char* no : {"0", "false", "no", "off"})
    if (!strcasecmp(v, no)) return false;
  std::fprintf(stderr, "%s: %s=\"%s\" is not 0 or 1 (nor true/false, yes/no, on/off); using %d\n",
               who, name, v, fallback ? 1 : 0);
  return fallback;
}

uint64_t Unsigned(const char* name, uint64_t fallback, uint64_t max, const char* who) {
  const char* v = Get(name);
  if (v == nullptr) return fallback;
  errno = 0;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (errno != 0 || *end != '\0' || v[0] == '-' || n > max) {
    std::fprintf(stderr, "%s: %s=\"%s\" is not a whole number between 0 and %llu; using %llu\n",
                 who, name, v, static_cast<unsigned long long>(max),
                 static_cast<unsigned long long>(fallback));
    return fallback;
  }
  return n;
}

std::string String(const char* name, const char* fallback) {
  const char* v = Get(name);
  return v != nullptr ? v : fallback;
}

}  // namespace ncclrr::env
