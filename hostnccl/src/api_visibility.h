// Every translation unit includes NCCL's header through this one. The library is built with
// -fvisibility=hidden so only the API is exported (the version script says which names); the
// declarations in nccl.h and hostnccl.h must therefore carry default visibility.
#pragma once
#pragma GCC visibility push(default)
#include <nccl.h>
#include "ncclrr/hostnccl.h"
#pragma GCC visibility pop

// ncclX as a weak alias of the strong pncclX, as real NCCL exports them (the PMPI idea).
#define NCCLRR_WEAK_ALIAS(name) \
  extern "C" decltype(p##name) name __attribute__((weak, alias("p" #name)));
