// Architecture presets, config.json reading and TP divisibility rules.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "base/input_error.hpp"
#include "input/model/hf_config.hpp"
#include "input/presets.hpp"
#include "model/layers/arch_spec.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

TEST_CASE("every model preset loads with the numbers of its Hugging Face config") {
  const auto names = model::preset_names("models");
  REQUIRE(names.size() == 22);
  for (const auto& name : names) {
    const model::ArchSpec arch = model::load_model_preset(name);
    CHECK(arch.hidden > 0);
    CHECK(arch.heads % arch.kv_heads == 0);
  }
  const model::ArchSpec llama70 = model::load_model_preset("llama-3.1-70b");
  CHECK(llama70.hidden == 8192);
  CHECK(llama70.intermediate == 28672);
  CHECK(llama70.heads == 64);
  CHECK(llama70.kv_heads == 8);
  CHECK(llama70.layers == 80);
  CHECK(llama70.head_dim == 8192 / 64);
  const model::ArchSpec qwen3 = model::load_model_preset("qwen3-0.6b");
  CHECK(qwen3.head_dim == 128);  // explicit head_dim, not hidden / heads = 64
  CHECK(qwen3.qk_norm);
  CHECK_FALSE(llama70.qk_norm);
  const model::ArchSpec llama2 = model::load_model_preset("llama-2-7b");  // multi-head: as many kv heads as heads
  CHECK(llama2.kv_heads == 32);
  CHECK(llama2.intermediate == 11008);
  CHECK(llama2.vocab == 32000);
  CHECK_FALSE(llama2.moe.enabled());
  const model::ArchSpec qwen3_moe = model::load_model_preset("qwen3-30b-a3b");
  CHECK(qwen3_moe.moe.experts == 128);
  CHECK(qwen3_moe.moe.experts_per_token == 8);
  CHECK(qwen3_moe.moe.expert_ffn == 768);
  CHECK(qwen3_moe.qk_norm);
  const model::ArchSpec mixtral = model::load_model_preset("mixtral-8x7b");  // experts as wide as intermediate_size
  CHECK(mixtral.moe.experts == 8);
  CHECK(mixtral.moe.experts_per_token == 2);
  CHECK(mixtral.moe.expert_ffn == 14336);
  const model::ArchSpec starcoder2 = model::load_model_preset("starcoder2-15b");  // GQA, LayerNorm, GeLU, biases
  CHECK(starcoder2.kv_heads == 4);
  CHECK(starcoder2.style.norm == model::NormKind::kLayer);
  CHECK(starcoder2.style.mlp == model::MlpKind::kPlain);
  CHECK(starcoder2.style.linear_bias);
  CHECK(starcoder2.window_at(39) == 4096);
  const model::ArchSpec pythia = model::load_model_preset("pythia-12b");
  CHECK(pythia.style.parallel_residual);
  CHECK(pythia.rotary_fraction == 0.25);
}

TEST_CASE("expert parallelism splits whole experts, and must divide them") {
  const model::ArchSpec qwen3_moe = model::load_model_preset("qwen3-30b-a3b");
  CHECK(model::shard_for_tp(qwen3_moe, 2, 8).experts == 128 / 8);
  CHECK(model::shard_for_tp(qwen3_moe, 2, 8).ffn == 0);  // no dense FFN to split over tp
  CHECK_THROWS_WITH(model::shard_for_tp(qwen3_moe, 2, 24), Contains("ep must divide the 128 experts"));
}

TEST_CASE("an unknown model preset is rejected with the list of valid names") {
  CHECK_THROWS_WITH(model::load_model_preset("llama-9"), Contains("llama-3.1-8b") && Contains("qwen3-32b"));
}

TEST_CASE("a config.json file is read and its errors name the file, line and column") {
  const std::string path = "tpsim_test_config.json";
  {
    std::ofstream out(path);
    out << "{\n  \"hidden_size\": 2048,\n  \"intermediate_size\": \"big\",\n  \"num_attention_heads\": 16,\n"
           "  \"num_hidden_layers\": 4,\n  \"vocab_size\": 1000,\n  \"model_type\": \"llama\"\n}\n";
  }
  CHECK_THROWS_WITH(model::load_hf_config_file(path),
                    Contains(path + ":3:3") && Contains("intermediate_size") && Contains("positive integer"));
  {
    std::ofstream out(path);
    out << "{\n  \"hidden_size\": 2048,\n  \"intermediate_size\": 8192,\n  \"num_attention_heads\": 16,\n"
           "  \"num_key_value_heads\": 4,\n  \"num_hidden_layers\": 4,\n  \"vocab_size\": 1000,\n"
           "  \"model_type\": \"llama\"\n}\n";
  }
  const model::ArchSpec arch = model::load_hf_config_file(path);
  CHECK(arch.head_dim == 2048 / 16);
  CHECK(arch.kv_heads == 4);
  {
    std::ofstream out(path);
    out << "{\n  \"hidden_size\": 2048,\n  oops\n}\n";
  }
  CHECK_THROWS_WITH(model::load_hf_config_file(path), Contains(path + ":3:") && Contains("not valid JSON"));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(model::load_hf_config_file("no/such/config.json"), Contains("cannot open"));
}

TEST_CASE("tp must divide the query heads and FFN width, and KV heads are replicated below tp") {
  const model::ArchSpec qwen2 = model::load_model_preset("qwen2-7b");  // 28 heads, 4 KV heads
  CHECK_THROWS_WITH(model::shard_for_tp(qwen2, 8), Contains("28 query heads"));
  const model::TpShard four = model::shard_for_tp(qwen2, 4);
  CHECK(four.q_heads == 7);
  CHECK(four.kv_heads == 1);
  CHECK_FALSE(four.kv_replicated);
  const model::ArchSpec danube = model::load_model_preset("danube3-500m");  // 16 heads, 8 KV heads
  const model::TpShard sixteen = model::shard_for_tp(danube, 16);
  CHECK(sixteen.kv_replicated);
  CHECK(sixteen.kv_heads == 1);
  CHECK(sixteen.ffn == 4096 / 16);
  model::ArchSpec odd = danube;
  odd.kv_heads = 8;
  odd.heads = 24;
  odd.intermediate = 12 * 256;
  CHECK_THROWS_WITH(model::shard_for_tp(odd, 12), Contains("KV heads"));
}
