// safetensors files (docs/model.md "Checkpoints"; format of huggingface/safetensors):
//
//   [8 bytes]  N, little-endian u64: length of the JSON header
//   [N bytes]  JSON header, padded with spaces to a multiple of 8 bytes:
//              {"__metadata__": {"format": "attnlab", "version": "0.1.0"},
//               "<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...}
//   [rest]     raw little-endian float32 data, row-major; offsets are relative
//              to the start of this section
//
// The tensors of a param_layout are written in layout order, contiguous, so
// the data section is the flat parameter buffer as is. Reading checks the
// file against the layout the model expects and reports, naming the file,
// the first thing that is wrong (truncation, malformed header, dtype, offsets,
// a missing, extra or misshapen tensor); nothing is read partially.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "attnlab/model/params.hpp"

namespace attnlab {

// Ordered (key, value) pairs of the header's "__metadata__".
using safetensors_metadata = std::vector<std::pair<std::string, std::string>>;

// The bytes of a safetensors file holding `params` (layout.total() floats)
// as the layout's tensors. The metadata always starts with "format":
// "attnlab" and "version": ATTNLAB_VERSION, followed by `extra`.
std::string safetensors_encode(const param_layout& layout, const std::vector<float>& params,
                               const safetensors_metadata& extra = {});

// Checks `bytes` (the contents of a file; `label` names it in messages)
// against the layout and returns the parameters as one flat buffer in layout
// order (layout.total() floats). The file must hold exactly the layout's
// tensors (any order in the file), F32, with the layout's shapes. If
// `metadata` is given it receives the header's "__metadata__" (empty if
// absent). Throws io_error "<label>: <what is wrong>".
std::vector<float> safetensors_decode(const std::string& bytes, const std::string& label, const param_layout& layout,
                                      safetensors_metadata* metadata = nullptr);

// safetensors_encode written atomically to `path` (tmp file, fsync, rename).
void safetensors_write(const std::string& path, const param_layout& layout, const std::vector<float>& params,
                       const safetensors_metadata& extra = {});

// safetensors_decode of the file at `path` (label = path).
std::vector<float> safetensors_read(const std::string& path, const param_layout& layout,
                                    safetensors_metadata* metadata = nullptr);

}  // namespace attnlab
