"""Every row of the public training steps (training_steps_public.csv) beside tpsim: a scenario for each job tpsim can
run, from TorchTitan's, Megatron's and fms-fsdp's settings, or why it cannot."""
import tempfile
from pathlib import Path

from doctables.common import ROOT, header, results_of, row


# Every row of shared/data/training_steps_public.csv: a scenario for each job tpsim can run (every layer simulated,
# so the step is the whole model's), or why it cannot. Nothing is fitted on these rows (docs/fidelity.md).
TRAINING_CSV = ROOT / "calibrate/data/public/training_steps_public.csv"
NOT_RUN = "no scenario for this row"
# fms-fsdp's shapes (foundation-model-stack/fms-fsdp fms_fsdp/utils/config_utils.py get_model_config): Llama-2-13B's,
# and its llama2_34b (CodeLlama-34B's: grouped-query attention, 8 KV heads).
LLAMA2_13B = ("{name: llama-2-13b, model_type: llama, hidden_size: 5120, intermediate_size: 13824, num_attention_heads: 40, "
              "num_key_value_heads: 40, num_hidden_layers: 40, vocab_size: 32000}")
LLAMA2_34B = ("{name: llama-2-34b, model_type: llama, hidden_size: 8192, intermediate_size: 22016, num_attention_heads: 64, "
              "num_key_value_heads: 8, num_hidden_layers: 48, vocab_size: 32000}")


def titan(model, nodes, batch, seq, recompute, tp, dp, fp8, eager=False, pp=1, microbatches=1, variants="sp", cp=1,
          fsdp_fp8=False):
    # Uncompiled (train.py's compile = false), every RMSNorm and SwiGLU runs as eager PyTorch's kernels, and the
    # selective checkpoint's caching mode holds every output its policy keeps (compiled: false).
    implementation = ("{preset: torchtitan-2024, add_norm: separate, rms_norm: eager, swiglu: eager, compiled: false}"
                      if eager else "torchtitan-2024")
    dtype = ", dtype: fp8, fp8_recipe: tensorwise" if fp8 else ""
    # 405B's 126 layers over 8 stages as TorchTitan splits them without split points (9dec370's
    # torchtitan/parallelisms/pipelining_utils.py generate_split_points: 126 // 8 layers each, the 6 left over one
    # each to the stages after the first): 15, then 16 six times, the last 15.
    pipeline = "pipeline: {schedule: 1f1b, chunk_layers: [15, 16, 16, 16, 16, 16, 16, 15]}\n" if pp > 1 else ""
    names = {"sp": "{name: sp, tp_mode: sp}", "async": "{name: async, tp_mode: async, chunks: 8, transport: copy_engine}"}
    return (f"model: {model}\nhardware: {{gpu: h100-sxm-96gb, topology: ib-rail, nodes: {nodes}}}\n"
            f"implementation: {implementation}\nworkload: {{phase: train, batch: {batch}, seq_len: {seq}, layers: all, "
            f"microbatches: {microbatches}, recompute: {recompute}{dtype}}}\nparallelism: {{tp: {tp}, pp: {pp}, dp: {dp}{titan_cp(cp)}}}\n"
            f"fsdp: {{reshard_after_forward: {'false' if pp > 1 else 'true'}{FSDP_FP8 if fsdp_fp8 else ''}}}\n{pipeline}"
            f"variants: [{names[variants]}]\n")


# TorchTitan's 405B config (9dec370's train_configs/llama3_405b.toml, [float8]): enable_fsdp_float8_all_gather and
# precompute_float8_dynamic_scale_for_fsdp, which its Float8Handler (torchtitan/float8.py) turns on only where FSDP's
# dp_shard degree is above 1 (`parallel_dims.dp_shard_enabled and ...`): not at fsdp 1 x cp 8, whose FSDP shards over
# the CP group alone and gathers bf16. The 8B and 70B configs of that commit enable no float8 and state neither.
FSDP_FP8 = ", fp8_all_gather: true, precompute_fp8_scales: true"


# TorchTitan's context parallelism: PyTorch's context_parallel with its default K/V rotation, all-gather (torchtitan's
# context_parallel_rotate_method "allgather"), as torch 1963fc8's _attention.py runs it (cp_comm_type torch_all_gather:
# cp SDPA calls merged in fp32, the fp32 dK/dV passed rank to rank); FSDP shards over dp x cp (its dp_shard_cp mesh).
def titan_cp(cp):
    return f", cp: {cp}, cp_comm_type: torch_all_gather" if cp > 1 else ""


# Megatron-LM's and NeMo's recipes run the distributed optimizer with both overlaps (--use-distributed-optimizer,
# --overlap-grad-reduce, --overlap-param-gather); assumed for every Megatron row that does not state otherwise.
DIST_OPT = "distributed_optimizer: {overlap_grad_reduce: true, overlap_param_gather: true}\n"


# NeMo's MLPerf v5.0 Llama 3.1 405B submission reduces gradients in bf16 (its pretrain.py: grad_reduce_in_fp32=False in
# both MegatronMixedPrecision and DistributedDataParallelConfig).
DIST_OPT_BF16 = DIST_OPT.replace("}\n", ", reduce_dtype: bf16}\n")


# Transformer Engine's TP communication overlap (userbuffers) as the fp8 H100 recipes configure it: Megatron-Bridge's
# training/comm_overlap.py (HEAD 067f987, the perf recipes' tp_comm_overlap_cfg) gives every forward GEMM and the
# row-parallel data gradients TE's ring exchange, and the column-parallel backward TE's bulk overlaps with these SMs
# (num_sm of qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad). 70B: userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192
# (perf_recipes/llama/h100/llama3.py); 405B: userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192 (llama31.py). The
# Megatron-LM rows follow NeMo's performance scripts (their README), whose configs these are; NeMo's MLPerf v5.0
# 405B submission runs TP_COMM_OVERLAP=True from a tp_overlap file not among its published files: assumed the 405B one.
UB_70B = "{qkv_dgrad: 4, qkv_wgrad: 24, fc1_dgrad: 2, fc1_wgrad: 4}"
UB_405B = "{qkv_dgrad: 2, qkv_wgrad: 24, fc1_dgrad: 2, fc1_wgrad: 2}"


# Transformer Engine's fp8 scaling per row (the megatron-te preset runs TE's quantisation kernels): delayed where the
# shared table says so (Megatron-Bridge 25.09's rows; Megatron-LM's "fp8 hybrid", its default DelayedScaling recipe;
# NeMo 25.01's MLPerf submission, whose TE predates current scaling), current scaling ("tensorwise") where the table or
# the recipes say so (Megatron-Bridge 25.11's "FP8-CS"; 26.x's rows, whose H100 recipes are all *_fp8cs_config).
DELAYED, CURRENT = "delayed", "tensorwise"

# Megatron-Bridge's fp8 mixed-precision presets keep fp8 primary weights (training/mixed_precision.py:
# fp8_param_gather=True in bf16_with_fp8_delayed_scaling_mixed and bf16_with_fp8_current_scaling_mixed): under its
# FSDP the weights are gathered in fp8 and no GEMM casts them (fsdp.fp8_all_gather).
MEGATRON_FSDP = "fsdp: {reshard_after_forward: true, fp8_all_gather: true}\n"


def megatron(model, nodes, microbatches, tp=1, pp=1, dp=8, virtual=1, fsdp=False, cp=1, chunk_layers=None,
             dist_opt=DIST_OPT, userbuffers=None, recompute_layers=0, recipe=CURRENT):
    layout = f", chunk_layers: {chunk_layers}" if chunk_layers else ""
    pipeline = f"pipeline: {{schedule: interleaved, virtual_stages: {virtual}{layout}}}\n" if pp > 1 else ""
    implementation = f"{{preset: megatron-te, userbuffer_sms: {userbuffers}}}" if userbuffers else "megatron-te"
    recompute = f"full, recompute_layers: {recompute_layers}" if recompute_layers else "none"
    variant = ("{name: tp-overlap, tp_mode: async, transport: copy_engine}" if userbuffers
               else "{name: sp, tp_mode: sp}" if tp > 1 else "{name: dp, tp_mode: tp}")
    return (f"model: {model}\nhardware: {{gpu: h100-sxm, topology: ib-rail, nodes: {nodes}}}\nimplementation: {implementation}\n"
            f"workload: {{phase: train, batch: 1, seq_len: 8192, layers: all, microbatches: {microbatches}, recompute: {recompute}, "
            f"dtype: fp8, fp8_recipe: {recipe}}}\nparallelism: {{tp: {tp}, pp: {pp}, dp: {dp}" + (f", cp: {cp}" if cp > 1 else "") + "}\n"
            + (MEGATRON_FSDP if fsdp else "") + (dist_opt if not fsdp and dp * cp > 1 else "")
            + pipeline + f"variants: [{variant}]\n")


# fms-fsdp as the blog's rows ran (pytorch.org 2024-03-13, "Maximizing training throughput using PyTorch FSDP", and
# foundation-model-stack/fms-fsdp's README of that day, 5e522b4): FSDP1 in bf16 with bf16 gradient reduction
# (fms_fsdp/policies/mixed_precision.py bfSixteen), HYBRID_SHARD for 7B (FSDP1 shards it within each 8-GPU node) and
# FULL_SHARD for the others (the README's table), and no torch.compile (scripts/train.sh use_torch_compile=False; the
# README's compiled numbers came in May 2024), so FMS's Llama layer runs eager (foundation-model-stack, March 2024):
# separate query/key/value and w1/wg linears (fms/modules/attention.py, feedforward.py), the RMSNorm in fp32
# (layernorm.py use_high_precision_pow), SiLU and the product apart, RoPE in fp32 (positions.py adjusted_qk), K and V
# expanded to the query heads before SDPA (attention.py), and the loss over bf16 logits. The network: the blog's
# "400Gbps" (A100) and "800Gbps" (H100) inter-node interconnects per node, as no NIC of the time gave one GPU that
# (A100 nodes carry ConnectX-6, 200 Gb/s at most; H100 nodes ConnectX-7, 400 Gb/s): 6.25 and 12.5 GB/s per GPU.
FMS_EAGER = ("{attention: fa2, qkv: separate, gate_up: separate, rope: fp32_unfused, repeat_kv: true, add_norm: separate, "
             "rms_norm: eager, swiglu: eager}")


def fms(model, gpu, gpus, nic, recompute, shard_degree=None):
    shard = f", shard_degree: {shard_degree}" if shard_degree else ""
    return (f"model: {model}\nhardware: {{gpu: {gpu}, topology: ib-rail, nodes: {gpus // 8}, nic_GBps: {nic}}}\n"
            f"implementation: {FMS_EAGER}\nworkload: {{phase: train, batch: 2, seq_len: 4096, layers: all, "
            f"microbatches: 1, recompute: {recompute}}}\nparallelism: {{tp: 1, dp: {gpus}}}\n"
            f"fsdp: {{reshard_after_forward: true, reduce_dtype: bf16{shard}}}\nvariants: [{{name: dp, tp_mode: tp}}]\n")


# Llama-3.1-405B's 126 layers over 8 stages x 8 virtual stages: the first chunk beside the embedding and the last beside
# the loss one layer lighter (Megatron's account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split,
# assumed from the 64 chunks the recipes' layout needs), every other chunk two layers.
LAYERS_405B_PP8_VP8 = "[" + ", ".join(["1"] + ["2"] * 62 + ["1"]) + "]"

# Megatron-Bridge's H100 8B recipe recomputes the first 5 layers whole (perf_recipes/llama/h100/llama3.py:
# recompute_granularity "full", recompute_method "block", recompute_num_layers 5).
RECOMPUTED_8B = 5

# Llama-3-70B's 80 layers over 8 stages x 5 virtual stages as the H100 recipe lays them out
# (perf_recipes/llama/h100/llama3.py, pipeline_model_parallel_layout "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL"): the embedding
# beside two layers, 34 chunks of two, one of three (chunk 35: stage 3's last virtual stage), three of two, and the last
# layer beside the loss.
LAYERS_70B_PP8_VP5 = "[" + ", ".join(["2"] * 35 + ["3"] + ["2"] * 3 + ["1"]) + "]"


# Each row: the scenario (and what it approximates), or the reason it cannot run.
TRAINING_JOBS = {
    "TT1-1": titan("llama-3.1-8b", 1, 2, 8192, "selective", 1, 8, False, eager=True),
    "TT1-2": titan("llama-3.1-8b", 1, 2, 8192, "selective", 1, 8, False),
    "TT1-3": titan("llama-3.1-8b", 1, 2, 8192, "selective", 1, 8, True),
    "TT2-1": titan("llama-3.1-8b", 1, 1, 32768, "full", 1, 8, True),
    "TT3-1": titan("llama-3.1-8b", 16, 2, 8192, "selective", 1, 128, False, eager=True),
    "TT3-2": titan("llama-3.1-8b", 16, 2, 8192, "selective", 1, 128, False),
    "TT3-3": titan("llama-3.1-8b", 16, 2, 8192, "selective", 1, 128, True),
    "TT4-1": titan("llama-3.1-70b", 32, 16, 8192, "full", 8, 32, True),
    "TT4-2": titan("llama-3.1-70b", 32, 16, 8192, "full", 8, 32, True, variants="async"),
    "TT2-2": titan("llama-3.1-8b", 1, 1, 65536, "full", 1, 4, True, cp=2),
    "TT2-3": titan("llama-3.1-8b", 1, 1, 131072, "full", 1, 2, True, cp=4),
    "TT2-4": titan("llama-3.1-8b", 1, 1, 262144, "full", 1, 1, True, cp=8),
    # The 405B rows' local batch of 8 in 8 micro-batches: TorchTitan's default without pipeline_parallel_microbatches is
    # the pp degree (9dec370's torchtitan/parallelisms/pipeline_llama.py).
    "TT6-1": titan("llama-3.1-405b", 64, 1, 32768, "full", 8, 8, True, pp=8, microbatches=8, variants="async", fsdp_fp8=True),
    "TT6-2": titan("llama-3.1-405b", 64, 1, 65536, "full", 8, 4, True, pp=8, microbatches=8, variants="async", cp=2, fsdp_fp8=True),
    "TT6-3": titan("llama-3.1-405b", 64, 1, 131072, "full", 8, 2, True, pp=8, microbatches=8, variants="async", cp=4, fsdp_fp8=True),
    # fsdp 1 x cp 8: TorchTitan's Float8Handler leaves FSDP's all-gather in bf16 (FSDP_FP8).
    "TT6-4": titan("llama-3.1-405b", 64, 1, 262144, "full", 8, 1, True, pp=8, microbatches=8, variants="async", cp=8),
    "NB-D01": megatron("llama-3.1-8b", 1, 16, fsdp=True, recompute_layers=RECOMPUTED_8B, recipe=DELAYED),
    "NB-D02": megatron("llama-3.1-70b", 8, 64, tp=4, pp=8, dp=2, virtual=5, chunk_layers=LAYERS_70B_PP8_VP5, userbuffers=UB_70B, recipe=DELAYED),
    "NB-D04": megatron("llama-3.1-8b", 1, 16, fsdp=True, recompute_layers=RECOMPUTED_8B),
    "NB-D05": megatron("llama-3.1-70b", 8, 64, tp=4, pp=8, dp=2, virtual=5, chunk_layers=LAYERS_70B_PP8_VP5, userbuffers=UB_70B),
    "NB-D07": megatron("llama-3.1-70b", 8, 128, tp=4, pp=8, dp=2, virtual=5, chunk_layers=LAYERS_70B_PP8_VP5, userbuffers=UB_70B),
    "NB-D10": megatron("llama-3.1-70b", 8, 128, tp=4, pp=8, dp=2, virtual=5, chunk_layers=LAYERS_70B_PP8_VP5, userbuffers=UB_70B),
    "ML-1": megatron("llama-3.1-8b", 1, 32, dp=4, cp=2, recipe=DELAYED),
    "ML-2": megatron("llama-3.1-70b", 8, 64, tp=4, pp=8, dp=2, virtual=5, chunk_layers=LAYERS_70B_PP8_VP5, userbuffers=UB_70B, recipe=DELAYED),
    "NB-D03": megatron("llama-3.1-405b", 128, 64, tp=8, pp=8, dp=8, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, userbuffers=UB_405B, recipe=DELAYED),
    "NB-D06": megatron("llama-3.1-405b", 128, 64, tp=8, pp=8, dp=8, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, userbuffers=UB_405B),
    "NB-D08": megatron("llama-3.1-405b", 128, 192, tp=8, pp=8, dp=8, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, userbuffers=UB_405B),
    "NB-D11": megatron("llama-3.1-405b", 128, 192, tp=8, pp=8, dp=8, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, userbuffers=UB_405B),
    "ML-3": megatron("llama-3.1-405b", 128, 64, tp=8, pp=8, dp=8, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, userbuffers=UB_405B, recipe=DELAYED),
    # NeMo's MLPerf v5.0 405B submissions, with the distributed optimizer as the Megatron rows above, in bf16.
    "ML5-1": megatron("llama-3.1-405b", 64, 288, tp=8, pp=8, dp=4, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, dist_opt=DIST_OPT_BF16, userbuffers=UB_405B, recipe=DELAYED),
    "ML5-2": megatron("llama-3.1-405b", 256, 72, tp=8, pp=8, dp=16, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, dist_opt=DIST_OPT_BF16, userbuffers=UB_405B, recipe=DELAYED),
    "ML5-3": megatron("llama-3.1-405b", 304, 64, tp=8, pp=8, dp=19, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, dist_opt=DIST_OPT_BF16, userbuffers=UB_405B, recipe=DELAYED),
    "ML5-4": megatron("llama-3.1-405b", 320, 56, tp=8, pp=8, dp=20, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, dist_opt=DIST_OPT_BF16, userbuffers=UB_405B, recipe=DELAYED),
    "ML5-5": megatron("llama-3.1-405b", 1024, 24, tp=8, pp=8, dp=64, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, dist_opt=DIST_OPT_BF16, userbuffers=UB_405B, recipe=DELAYED),
    # 13B's "selective AC" checkpoints every n-th block (fms_fsdp/policies/ac_handler.py, n not stated): run as tpsim's
    # op-level selective recomputation, between none and full.
    "IBM-1-a100": fms("llama-2-7b", "a100-sxm", 128, 6.25, "none", shard_degree=8),
    "IBM-1-h100": fms("llama-2-7b", "h100-sxm", 96, 12.5, "none", shard_degree=8),
    "IBM-2-a100": fms(LLAMA2_13B, "a100-sxm", 128, 6.25, "selective"),
    "IBM-2-h100": fms(LLAMA2_13B, "h100-sxm", 96, 12.5, "selective"),
    "IBM-3-a100": fms(LLAMA2_34B, "a100-sxm", 128, 6.25, "full"),
    "IBM-3-h100": fms(LLAMA2_34B, "h100-sxm", 96, 12.5, "full"),
    "IBM-4-a100": fms("llama-2-70b", "a100-sxm", 128, 6.25, "full"),
    "IBM-4-h100": fms("llama-2-70b", "h100-sxm", 96, 12.5, "full"),
}


def training_rows():
    import csv
    with open(TRAINING_CSV) as f:
        return list(csv.DictReader(f))


def training_published():
    # Whatever it shows: nothing in tpsim is fitted on these rows.
    rows = training_rows()
    runnable = [r for r in rows if r["row"] in TRAINING_JOBS]
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for r in runnable:
            path = Path(folder) / f"{r['row']}.yaml"
            path.write_text(f"name: {r['row']}\n" + TRAINING_JOBS[r["row"]])
            paths.append(str(path))
        predicted = dict(zip((r["row"] for r in runnable), results_of(paths)))
    header("row", "framework", "model", "GPUs", "layout", "published tok/s/GPU", "tpsim tok/s/GPU", "error",
           "published GiB", "tpsim peak reserved GiB", "error")
    for r in rows:
        layout = f"{r['dp_or_fsdp']}, tp {r['tp']}, pp {r['pp']}, cp {r['cp']}"
        if r["row"] not in predicted:
            row(r["row"], r["framework"], r["model"], r["gpus"], layout, r["tokens_per_s_per_gpu"], NOT_RUN, "", r["memory_GiB"], "", "")
            continue
        v = predicted[r["row"]]["results"][0]
        tokens, published = v["tokens_per_s_per_gpu"], float(r["tokens_per_s_per_gpu"])
        memory = v["memory"]["peak_reserved"] / 2**30
        memory_error = f"{100 * (memory / float(r['memory_GiB']) - 1):+.0f}%" if r["memory_GiB"] else ""
        row(r["row"], r["framework"], r["model"], r["gpus"], layout, r["tokens_per_s_per_gpu"], f"{tokens:.0f}",
            f"{100 * (tokens / published - 1):+.0f}%", r["memory_GiB"], f"{memory:.1f}", memory_error)
