#pragma once
// Where a Python environment keeps the CUDA libraries its wheels bring (PyTorch and JAX install
// NCCL and the CUDA runtime as nvidia-* packages): the real NCCL of a training job is often
// there and nowhere else. For offline tools only (replay, examples), never the preload.
#include <string>
#include <string_view>
#include <vector>

namespace ncclrr {

// The existing folders <prefix>/lib/python3*/site-packages/nvidia/<package>/lib, for the
// prefixes of the active environment ($VIRTUAL_ENV, $CONDA_PREFIX) and of every python3 on
// $PATH, in that order, without repeats. `package` is "nccl", "cuda_runtime", ...
std::vector<std::string> PythonNvidiaLibDirs(std::string_view package);

}  // namespace ncclrr
