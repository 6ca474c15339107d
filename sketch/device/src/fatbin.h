#pragma once
// The sketch kernels' fatbin, embedded at build time (sketch_fatbin.cc); null when the library
// was built without nvcc.
#include <cstddef>

namespace ncclrr::sketch {

const unsigned char* SketchFatbin(size_t* size);

}  // namespace ncclrr::sketch
