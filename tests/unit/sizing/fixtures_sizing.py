"""Model config fixtures for the fit tests: only the fields the fit arithmetic reads.

Numbers come from public model cards and configs (Hugging Face, March 2026):

* Qwen/Qwen3.5-122B-A10B(-FP8): ``Qwen3_5MoeForConditionalGeneration``, decoder under
  ``text_config``; 48 layers in a repeating 3 x Gated DeltaNet + 1 x gated attention
  pattern (36 linear + 12 full), 32 query heads, 2 KV heads, head_dim 256, hidden 3072,
  262,144 native context.  Weight size ~125 GB on disk (the seeds' figure).  The
  linear-attention head counts of this checkpoint were not confirmed, so they are left
  out here (the fit then counts no linear state: it is < 0.1 GB per sequence anyway).
* nvidia/Qwen3.5-397B-A17B-NVFP4 (model card): 60 layers = 15 blocks of 3 x Gated
  DeltaNet + 1 x gated attention; attention 32 Q heads, 2 KV heads, head_dim 256;
  DeltaNet 64 value heads, 16 QK heads, head_dim 128; hidden 4096; 262,144 native
  context, ~1,010,000 with YaRN.  Checkpoint size: public figures for NVFP4 exports of this
  model are ~224-234 GB (lukealonso's ModelOpt export states ~233 GB); the nvidia repo's
  exact ``total_size`` could not be confirmed offline, so the tests use 234 GB and check
  the verdict holds from 224 to 250 GB.
* Qwen/Qwen3-Next-80B-A3B: ``Qwen3NextForCausalLM``, fields at top level, 48 layers with
  ``full_attention_interval`` 4, 16 Q heads, 2 KV heads, head_dim 256.  Older revisions
  carry no ``layer_types``; the fixture omits it to exercise the interval spelling.
* Qwen3.5 configs carry ``linear_conv_kernel_dim`` 4 and ``mamba_ssm_dtype`` float32
  (seen in the public Qwen3.5 small-model configs).
"""

GB = 10**9

_QWEN35_PATTERN = ["linear_attention", "linear_attention", "linear_attention", "full_attention"]

QWEN35_122B_A10B_FP8_CONFIG = {
    "architectures": ["Qwen3_5MoeForConditionalGeneration"],
    "model_type": "qwen3_5_moe",
    "text_config": {
        "model_type": "qwen3_5_moe_text",
        "dtype": "bfloat16",
        "hidden_size": 3072,
        "num_hidden_layers": 48,
        "num_attention_heads": 32,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "full_attention_interval": 4,
        "layer_types": _QWEN35_PATTERN * 12,
        "max_position_embeddings": 262144,
    },
}
QWEN35_122B_A10B_FP8_WEIGHT_BYTES = 125 * GB

QWEN35_397B_A17B_NVFP4_CONFIG = {
    "architectures": ["Qwen3_5MoeForConditionalGeneration"],
    "model_type": "qwen3_5_moe",
    "text_config": {
        "model_type": "qwen3_5_moe_text",
        "dtype": "bfloat16",
        "hidden_size": 4096,
        "num_hidden_layers": 60,
        "num_attention_heads": 32,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "full_attention_interval": 4,
        "linear_num_value_heads": 64,
        "linear_num_key_heads": 16,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4,
        "mamba_ssm_dtype": "float32",
        "max_position_embeddings": 262144,
    },
}
QWEN35_397B_A17B_NVFP4_WEIGHT_BYTES = 234 * GB

QWEN3_NEXT_80B_A3B_CONFIG = {
    "architectures": ["Qwen3NextForCausalLM"],
    "model_type": "qwen3_next",
    "torch_dtype": "bfloat16",
    "hidden_size": 2048,
    "num_hidden_layers": 48,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "full_attention_interval": 4,
    "max_position_embeddings": 262144,
}

# A plain dense GQA model without head_dim (derived from hidden / heads): Llama-3.1-8B.
LLAMA31_8B_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "torch_dtype": "bfloat16",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
}
