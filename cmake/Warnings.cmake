# One warning policy for every target of the project.
add_library(ncclrr_warnings INTERFACE)
target_compile_options(ncclrr_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wformat=2>
  $<$<AND:$<COMPILE_LANGUAGE:CXX,C>,$<BOOL:${NCCLRR_WERROR}>>:-Werror>)
