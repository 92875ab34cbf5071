# SPDX-License-Identifier: BSD-3-Clause
# Embeds the cache's migrations (schema/cache.sql = migration 1,
# schema/migration2.sql, ...) into ${CMAKE_BINARY_DIR}/generated/cache_schema.h
# as ordinary C string literals. (A raw string literal R"(...)" would be
# shorter, but in C it is a GCC extension: clang rejects it, and the fuzz
# targets are built with clang.) Configure re-runs when a file changes.
#
# Use from the top-level CMakeLists.txt: include(schema/cache_schema.cmake)
function(zs_embed_sql file var)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  file(READ ${file} sql)
  string(REPLACE "\r" "" sql "${sql}")
  string(REPLACE "\\" "\\\\" sql "${sql}")
  string(REPLACE "\"" "\\\"" sql "${sql}")
  string(REPLACE "?" "\\?" sql "${sql}") # no trigraphs under -std=c11
  string(REPLACE "\n" "\\n\"\n    \"" sql "${sql}")
  set(${var} "    \"${sql}\"" PARENT_SCOPE)
endfunction()
zs_embed_sql(${CMAKE_CURRENT_LIST_DIR}/cache.sql ZS_CACHE_SCHEMA_C)
zs_embed_sql(${CMAKE_CURRENT_LIST_DIR}/migration2.sql ZS_CACHE_MIGRATION2_C)
zs_embed_sql(${CMAKE_CURRENT_LIST_DIR}/migration3.sql ZS_CACHE_MIGRATION3_C)
zs_embed_sql(${CMAKE_CURRENT_LIST_DIR}/migration4.sql ZS_CACHE_MIGRATION4_C)
zs_embed_sql(${CMAKE_CURRENT_LIST_DIR}/migration5.sql ZS_CACHE_MIGRATION5_C)
set(ZS_CACHE_SCHEMA_EMBEDDED 1)
configure_file(${CMAKE_CURRENT_LIST_DIR}/cache_schema.h.in
               ${CMAKE_BINARY_DIR}/generated/cache_schema.h @ONLY)
