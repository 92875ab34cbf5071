# Embeds schema/cache.sql into ${CMAKE_BINARY_DIR}/generated/cache_schema.h as
# an ordinary C string literal. (A raw string literal R"(...)" would be
# shorter, but in C it is a GCC extension: clang rejects it, and the fuzz
# targets are built with clang.) Configure re-runs when the schema changes.
#
# Use from the top-level CMakeLists.txt: include(schema/cache_schema.cmake)
set(_zs_schema_sql_file ${CMAKE_CURRENT_LIST_DIR}/cache.sql)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_zs_schema_sql_file})
file(READ ${_zs_schema_sql_file} _zs_sql)
string(REPLACE "\r" "" _zs_sql "${_zs_sql}")
string(REPLACE "\\" "\\\\" _zs_sql "${_zs_sql}")
string(REPLACE "\"" "\\\"" _zs_sql "${_zs_sql}")
string(REPLACE "?" "\\?" _zs_sql "${_zs_sql}") # no trigraphs under -std=c11
string(REPLACE "\n" "\\n\"\n    \"" _zs_sql "${_zs_sql}")
set(ZS_CACHE_SCHEMA_C "    \"${_zs_sql}\"")
set(ZS_CACHE_SCHEMA_EMBEDDED 1)
configure_file(${CMAKE_CURRENT_LIST_DIR}/cache_schema.h.in
               ${CMAKE_BINARY_DIR}/generated/cache_schema.h @ONLY)
unset(_zs_sql)
unset(_zs_schema_sql_file)
