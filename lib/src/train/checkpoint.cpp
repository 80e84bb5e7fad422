// Saving and loading a run's parameters and its resume state (checkpoint.hpp).
#include "attnlab/train/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <type_traits>

#include "attnlab/io/safetensors.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

void checkpoint_save(const std::string& path, const transformer<float>& model, const build_info* build) {
    safetensors_metadata meta{{"vocab", std::to_string(model.vocab())},
                              {"max_positions", std::to_string(model.max_T())}};
    if (build) {
        meta.emplace_back("commit", build->commit);
        meta.emplace_back("build_type", build->build_type);
        meta.emplace_back("isa", build->isa);
        meta.emplace_back("threads", std::to_string(build->threads));
    }
    safetensors_write(path, model.layout().named_tensors(), model.params, meta);
}

template <class T>
void checkpoint_load(const std::string& path, transformer<T>& model) {
    // Only a missing file is "no such checkpoint file": safetensors_read names
    // anything else (a device, a FIFO, a directory) for what it is.
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec)))
        throw io_error(path + ": no such checkpoint file");
    std::vector<float> params = safetensors_read(path, model.layout().named_tensors());
    if constexpr (std::is_same_v<T, float>)
        model.params = std::move(params);
    else
        model.params.assign(params.begin(), params.end());  // every float is a double exactly
}

template void checkpoint_load<float>(const std::string&, transformer<float>&);
template void checkpoint_load<double>(const std::string&, transformer<double>&);

bool params_finite(const transformer<float>& model) {
    return std::all_of(model.params.begin(), model.params.end(), [](float x) { return std::isfinite(x); });
}

}  // namespace attnlab
