// ncclrr-compare-routes PLUGIN_DIR PRELOAD_DIR: do the profiler-plugin route and the preload
// route agree on a job (tests/gpu/profiler_acceptance.sh)? Exit 0 when they do, 1 when they
// differ, 2 when a trace cannot be read.
#include <cstdio>

#include "route_compare.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: ncclrr-compare-routes PLUGIN_TRACE_DIR PRELOAD_TRACE_DIR\n");
    return 2;
  }
  auto cmp = ncclrr::profiler::test::CompareRoutes(argv[1], argv[2]);
  if (!cmp.ok()) {
    std::fprintf(stderr, "ncclrr-compare-routes: %s\n", cmp.status().message().c_str());
    return 2;
  }
  std::fputs(cmp->Report().c_str(), stdout);
  return cmp->agree ? 0 : 1;
}
