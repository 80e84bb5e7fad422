// safetensors files (docs/model.md "Checkpoints"; format of huggingface/safetensors):
//
//   [8 bytes]  N, little-endian u64: length of the JSON header
//   [N bytes]  JSON header, padded with spaces to a multiple of 8 bytes:
//              {"__metadata__": {"format": "attnlab", "version": "0.1.0"},
//               "<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...}
//   [rest]     raw little-endian float32 data, row-major; offsets are relative
//              to the start of this section
//
// The file holds a list of named tensors that tile one flat float buffer
// (a model's parameters: model/params.hpp's param_layout::named_tensors();
// this reader knows no model). They are written in list order, contiguous,
// so the data section is the flat buffer as is. Reading checks the file
// against the tensors expected and reports, naming the file, the first thing
// that is wrong (truncation, malformed header, dtype, offsets, a missing,
// extra or misshapen tensor); nothing is read partially.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace attnlab {

// One tensor of a file: its name, its shape and where its values lie in the
// flat buffer of all the file's tensors.
struct named_tensor {
    std::string name;        // e.g. "blocks.0.attn.q.weight"
    std::vector<int> shape;  // row-major
    std::size_t offset = 0;  // into the flat buffer, in floats
    std::size_t size = 0;    // product of shape
};
using tensor_list = std::vector<named_tensor>;

// Ordered (key, value) pairs of the header's "__metadata__".
using safetensors_metadata = std::vector<std::pair<std::string, std::string>>;

// The bytes of a safetensors file holding `params` (the flat buffer the
// tensors tile, in order from offset 0) as those tensors. The metadata always
// starts with "format": "attnlab" and "version": ATTNLAB_VERSION, followed by
// `extra`.
std::string safetensors_encode(const tensor_list& layout, const std::vector<float>& params,
                               const safetensors_metadata& extra = {});

// Checks `bytes` (the contents of a file; `label` names it in messages)
// against the tensors expected and returns their values as one flat buffer
// (each at its offset). The file must hold exactly those tensors (any order
// in the file), F32, with their shapes. If
// `metadata` is given it receives the header's "__metadata__" (empty if
// absent). Throws io_error "<label>: <what is wrong>".
std::vector<float> safetensors_decode(const std::string& bytes, const std::string& label, const tensor_list& layout,
                                      safetensors_metadata* metadata = nullptr);

// safetensors_encode written atomically to `path` (tmp file, fsync, rename).
void safetensors_write(const std::string& path, const tensor_list& layout, const std::vector<float>& params,
                       const safetensors_metadata& extra = {});

// safetensors_decode of the file at `path` (label = path).
std::vector<float> safetensors_read(const std::string& path, const tensor_list& layout,
                                    safetensors_metadata* metadata = nullptr);

}  // namespace attnlab
