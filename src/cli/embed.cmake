# embed.cmake: turn a text file into a C header defining it as a string, so
# a resource kept in its own file (flamegraph.js) is compiled into the
# binary with no tool beyond cmake. Leading lines starting with "//" (the
# file's own description) are left out; the rest is embedded byte for byte.
#
#   cmake -DIN=file -DOUT=header.h -DNAME=identifier -P embed.cmake
#
# The header defines `static const char NAME[]` (NUL-terminated).
foreach(v IN ITEMS IN OUT NAME)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "embed.cmake: -D${v}=... missing")
  endif()
endforeach()
file(READ "${IN}" text)
string(REGEX REPLACE "^(//[^\n]*\n)+" "" text "${text}")
file(WRITE "${OUT}.tmp" "${text}")
file(READ "${OUT}.tmp" hex HEX)
file(REMOVE "${OUT}.tmp")
set(b "[0-9a-f][0-9a-f]")
string(REGEX REPLACE "(${b}${b}${b}${b}${b}${b}${b}${b}${b}${b}${b}${b})"
  "\\1\n" hex "${hex}")
string(REGEX REPLACE "(${b})" "0x\\1," hex "${hex}")
get_filename_component(src "${IN}" NAME)
file(WRITE "${OUT}.new"
  "/* Generated from ${src} by embed.cmake; do not edit. */\n"
  "static const char ${NAME}[] = {\n${hex}0x00};\n")
# Only touch the header when its content changes (no needless rebuilds).
file(COPY_FILE "${OUT}.new" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.new")
