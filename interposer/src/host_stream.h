// The host NCCL's streams (hostnccl) are emulated: work runs when every rank has issued
// it. ncclrrHostStreamAddCallback puts a host function on such a stream (like cudaLaunchHostFunc),
// so sketches and captures read buffers in the same stream order a GPU kernel would.
#pragma once

namespace ncclrr::interpose {

using HostStreamCallbackFn = void (*)(void* stream, int device, void (*fn)(void*), void* arg);

// The host NCCL's ncclrrHostStreamAddCallback, or null (another NCCL). Resolved once.
HostStreamCallbackFn HostStreamAddCallback();

}  // namespace ncclrr::interpose
