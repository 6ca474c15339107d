#include "env.h"

#include <cstdio>
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

const OutputFlip& OutputFlipFault() {
  static const OutputFlip flip = [] {
    OutputFlip f;
    const char* v = std::getenv("NCCLRR_HOST_FLIP_OUTPUT");
    if (v == nullptr || *v == '\0') return f;
    // RANK:SEQ[:BIT], decimal, nothing else.
    uint64_t field[3] = {0, 0, f.bit};
    int n = 0;
    const char* p = v;
    while (*p >= '0' && *p <= '9') {
      char* end = nullptr;
      field[n++] = std::strtoull(p, &end, 10);
      p = end;
      if (*p != ':' || n == 3) break;
      ++p;
    }
    if (n < 2 || *p != '\0' || field[0] > 1u << 30) {
      std::fprintf(stderr,
                   "ncclrr-host: NCCLRR_HOST_FLIP_OUTPUT=%s ignored: expected RANK:SEQ[:BIT]\n", v);
      return f;
    }
    f.rank = int(field[0]);
    f.seq = field[1];
    f.bit = field[2];
    return f;
  }();
  return flip;
}

}  // namespace ncclrr::host
