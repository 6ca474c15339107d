// The workload inside a library loaded with dlopen(RTLD_LOCAL): its libnccl.so.2 is in a local
// scope, as with PyTorch's extension modules.
#include <dlfcn.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  std::string self = argv[0];
  const std::string dir = self.substr(0, self.rfind('/') + 1);
  void* h = dlopen((dir + "libinterposer_workload.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "app_local: %s\n", dlerror());
    return 70;
  }
  auto run = reinterpret_cast<int (*)(int, char**)>(dlsym(h, "ncclrr_test_workload_main"));
  return run != nullptr ? run(argc, argv) : 71;
}
