"""The lab's tiny model as one GGUF file, for the llama.cpp engine (stands in for a hub GGUF repo).

Usage: python make_tiny_gguf.py TINY_MODEL_DIR OUT_DIR   (gguf-py on PYTHONPATH: prepare.sh runs it
in the vLLM lab image, which has torch and numpy, with llama.cpp's own gguf-py from the same sdist
that the llama.cpp image is built from)

The weights are the tiny Llama's (make_tiny_model.py), unchanged but for float32 and the Q/K
row order llama.cpp's rope expects (the permutation of llama.cpp's convert_hf_to_gguf.py). Its
word-level tokenizer has no GGUF form (llama.cpp knows SentencePiece, BPE, WordPiece and Unigram,
all of which build words from smaller pieces or bytes), so it is written as a Unigram ("t5")
vocabulary with the same ids: a word becomes "▁word", a mark stays itself. Unigram's Viterbi
matches whole pieces without intermediate merges, and with remove_extra_whitespaces every word
gets its "▁", so "user Say hello." gives exactly the word-level ids. Newlines have no token: the
chat template below is ChatML with spaces where the Hugging Face one has newlines (the word-level
pre-tokenizer dropped them, so the model saw the same ids). Deterministic: fixed inputs, float32,
no timestamps.
"""

import json
import re
import sys
from pathlib import Path

import gguf
import numpy as np
import torch
from safetensors.torch import load_file

FILE = "tiny-llama-f32.gguf"
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + ' ' + message['content'] + '<|im_end|>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant' }}{% endif %}"
)
WORD = re.compile(r"\w+")


def permute(w: np.ndarray, heads: int) -> np.ndarray:
    """HF's rotary halves → llama.cpp's interleaved pairs (convert_hf_to_gguf.py LlamaModel.permute)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def vocabulary(model_dir: Path, size: int) -> tuple[list[str], list[int], dict]:
    tok = json.loads((model_dir / "tokenizer.json").read_text())
    by_id = {i: t for t, i in tok["model"]["vocab"].items()}
    special = {a["content"] for a in tok["added_tokens"]}
    pieces, types = [], []
    for i in range(size):
        t = by_id.get(i)
        if t is None:
            pieces.append(f"<|unused_{i}|>")
            types.append(gguf.TokenType.UNUSED)
        elif t in special:
            pieces.append(t)
            types.append(gguf.TokenType.UNKNOWN if t == tok["model"]["unk_token"] else gguf.TokenType.CONTROL)
        else:
            pieces.append("\u2581" + t if WORD.fullmatch(t) else t)
            types.append(gguf.TokenType.NORMAL)
    return pieces, types, tok["model"]["vocab"]


def main(model_dir: Path, out: Path) -> None:
    config = json.loads((model_dir / "config.json").read_text())
    special = json.loads((model_dir / "special_tokens_map.json").read_text())
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    pieces, types, ids = vocabulary(model_dir, config["vocab_size"])

    out.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(out / FILE), "llama")
    w.add_name("blackwell-lab tiny-llama")
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_context_length(config["max_position_embeddings"])
    w.add_embedding_length(config["hidden_size"])
    w.add_block_count(config["num_hidden_layers"])
    w.add_feed_forward_length(config["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(config["head_dim"])
    w.add_value_length(config["head_dim"])
    w.add_rope_dimension_count(config["head_dim"])
    w.add_rope_freq_base(config["rope_theta"])
    w.add_layer_norm_rms_eps(config["rms_norm_eps"])
    w.add_vocab_size(config["vocab_size"])
    w.add_tokenizer_model("t5")
    w.add_token_list(pieces)
    w.add_token_scores([-1.0] * len(pieces))   # every piece alike: Viterbi takes the fewest
    w.add_token_types(types)
    w.add_bos_token_id(ids[config_bos(config, ids)])
    w.add_eos_token_id(ids[special["eos_token"]])      # <|im_end|>: the end of an answer
    w.add_unk_token_id(ids[special["unk_token"]])
    w.add_pad_token_id(ids[special["pad_token"]])
    w.add_add_bos_token(False)                          # the template writes it
    w.add_add_eos_token(False)
    w.add_add_space_prefix(True)
    w.add_remove_extra_whitespaces(True)
    w.add_chat_template(CHAT_TEMPLATE)

    tensors = load_file(str(model_dir / "model.safetensors"))
    weights = {k: v.to(torch.float32).numpy() for k, v in sorted(tensors.items())}
    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    w.add_tensor("token_embd.weight", weights["model.embed_tokens.weight"])
    for layer in range(config["num_hidden_layers"]):
        for hf, ours in names.items():
            t = weights[f"model.layers.{layer}.{hf}.weight"]
            if ours == "attn_q":
                t = permute(t, heads)
            elif ours == "attn_k":
                t = permute(t, kv_heads)
            w.add_tensor(f"blk.{layer}.{ours}.weight", np.ascontiguousarray(t))
    w.add_tensor("output_norm.weight", weights["model.norm.weight"])
    w.add_tensor("output.weight", weights["lm_head.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    (out / FILE).chmod(0o644)
    print(f"wrote {out / FILE}: {(out / FILE).stat().st_size} bytes")


def config_bos(config: dict, ids: dict) -> str:
    return next(t for t, i in ids.items() if i == config["bos_token_id"])


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
