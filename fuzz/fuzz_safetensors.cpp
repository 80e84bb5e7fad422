// libFuzzer target for the safetensors reader: safetensors_decode
// (lib/include/attnlab/io/safetensors.hpp), which `attnlab eval` reaches
// through checkpoint_load. Built and run by scripts/fuzz.
//
// The input is the bytes of a model.safetensors (header length, JSON header,
// data), checked against the layout of the seed run's model (fuzz/README.md):
// the seeds in fuzz/corpus/safetensors/ read in full. Expected: io_error
// naming the file. A finding is a crash, a sanitizer report, a leak, any
// other exception, a hang, an allocation beyond scripts/fuzz's
// -malloc_limit_mb (the reader must refuse a header that claims a huge
// tensor before it allocates), or a broken contract checked below: what
// reads, written again, reads back to the same parameters and metadata.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "attnlab/io/safetensors.hpp"
#include "attnlab/model/params.hpp"
#include "attnlab/util/error.hpp"
#include "fuzz_support.hpp"

namespace {

// The model of the seed run (fuzz/seed_run.yaml): copy task, vocab 8 + 2
// special tokens, 1 layer, d_model 8, 2 heads, rope, no MLP.
const attnlab::param_layout& seed_layout() {
    static const attnlab::param_layout layout = [] {
        attnlab::model_config m;
        m.layers = 1;
        m.d_model = 8;
        m.heads = 2;
        m.mlp = attnlab::mlp_kind::none;
        m.position = attnlab::position_kind::rope;
        attnlab::model_offsets offsets;
        return attnlab::build_param_layout(m, attnlab::attention_config{}, 10, 9, offsets);
    }();
    return layout;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnlab;
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    const param_layout& model_layout = seed_layout();
    const tensor_list layout = model_layout.named_tensors();

    std::vector<float> params;
    safetensors_metadata metadata;
    if (!attnlab_fuzz::read_or_refuse<io_error>("safetensors_decode", "model.safetensors", [&] {
            params = safetensors_decode(bytes, "model.safetensors", layout, &metadata);
        }))
        return 0;

    if (params.size() != model_layout.total())
        attnlab_fuzz::finding("wrong parameter count", std::to_string(params.size()));
    // Written again (the metadata after the two entries the writer adds), it
    // reads back bit for bit.
    safetensors_metadata extra;
    for (const auto& kv : metadata)
        if (kv.first != "format" && kv.first != "version") extra.push_back(kv);
    std::vector<float> again;
    safetensors_metadata metadata_again;
    try {
        again = safetensors_decode(safetensors_encode(layout, params, extra), "again", layout, &metadata_again);
    } catch (const std::exception& e) {
        attnlab_fuzz::finding("a checkpoint that reads is refused when written again", e.what());
    }
    if (std::memcmp(again.data(), params.data(), params.size() * sizeof(float)) != 0)
        attnlab_fuzz::finding("parameters differ when written again", "");
    for (const auto& kv : extra) {
        bool found = false;
        for (const auto& kv2 : metadata_again) found = found || kv2 == kv;
        if (!found) attnlab_fuzz::finding("metadata differs when written again", kv.first + ": " + kv.second);
    }
    return 0;
}
