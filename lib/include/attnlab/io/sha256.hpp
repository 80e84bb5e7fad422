// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex: what `sha256sum`
// prints. Used to record and check the file a text task reads (docs/tasks.md).
#pragma once
#include <string>

namespace attnlab {

std::string sha256_hex(const std::string& bytes);

}  // namespace attnlab
