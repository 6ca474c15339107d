#include "host_stream.h"

#include <dlfcn.h>

#include "symbols.h"

namespace ncclrr::interpose {
namespace {

HostStreamCallbackFn Resolve() {
  const char* name = "ncclrrHostStreamAddCallback";
  if (void* f = RealDlsym(RTLD_DEFAULT, name)) return reinterpret_cast<HostStreamCallbackFn>(f);
  void* handle = nullptr;  // the host NCCL loaded RTLD_LOCAL (dlopen'ed by the program)
  return reinterpret_cast<HostStreamCallbackFn>(FindInLoadedObjects(name, &handle));
}

}  // namespace

HostStreamCallbackFn HostStreamAddCallback() {
  static const HostStreamCallbackFn fn = Resolve();
  return fn;
}

}  // namespace ncclrr::interpose
