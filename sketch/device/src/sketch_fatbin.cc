// Embeds the fatbin nvcc produced (path in NCCLRR_SKETCH_FATBIN_PATH, set by CMake) with the
// assembler's .incbin: no generated source, no copy of the bytes in the build tree's sources.
#include "fatbin.h"
#include "ncclrr/sketch/device.h"

#if defined(NCCLRR_SKETCH_FATBIN_PATH)
__asm__(
    ".pushsection .rodata.ncclrr_sketch_fatbin, \"a\"\n"
    ".balign 64\n"
    ".globl ncclrr_sketch_fatbin_begin\n"
    ".hidden ncclrr_sketch_fatbin_begin\n"
    "ncclrr_sketch_fatbin_begin:\n"
    ".incbin \"" NCCLRR_SKETCH_FATBIN_PATH
    "\"\n"
    ".globl ncclrr_sketch_fatbin_end\n"
    ".hidden ncclrr_sketch_fatbin_end\n"
    "ncclrr_sketch_fatbin_end:\n"
    ".popsection\n");
extern "C" const unsigned char ncclrr_sketch_fatbin_begin[];
extern "C" const unsigned char ncclrr_sketch_fatbin_end[];
#endif

namespace ncclrr::sketch {

const unsigned char* SketchFatbin(size_t* size) {
#if defined(NCCLRR_SKETCH_FATBIN_PATH)
  *size = size_t(ncclrr_sketch_fatbin_end - ncclrr_sketch_fatbin_begin);
  return ncclrr_sketch_fatbin_begin;
#else
  *size = 0;
  return nullptr;
#endif
}

bool DeviceKernelsBuiltIn() {
  size_t size = 0;
  return SketchFatbin(&size) != nullptr && size > 0;
}

}  // namespace ncclrr::sketch
