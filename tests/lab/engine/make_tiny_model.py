"""Generate the lab's tiny Llama-shaped model (stands in for the hub model).

Usage: python make_tiny_model.py OUT_DIR

Deterministic: the same bytes on every run (fixed seed, fixed corpus, JSON written with sorted
keys, no version strings). Needs torch, safetensors, tokenizers; transformers only for the
self-check at the end. vLLM's CPU attention rejects head_dim 16: this model uses head_dim 64
(hidden 128, 2 heads, 1 KV head, 2 layers, vocab 512: about 0.4 M parameters, ~0.9 MB).
"""

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # tokenizers' trainer: one thread, one order

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

SEED = 20261202
VOCAB = 512
HIDDEN = 128
INTERMEDIATE = 256
LAYERS = 2
HEADS = 2
KV_HEADS = 1
HEAD_DIM = 64
MAX_POS = 2048
DTYPE = torch.bfloat16

BOS, EOS, PAD = "<|begin_of_text|>", "<|end_of_text|>", "<|pad|>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
SPECIAL = [BOS, EOS, PAD, IM_START, IM_END]

# ChatML, with the BOS token first; a generation prompt opens the assistant's turn.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

CORPUS = """\
The lab is a small cluster on one machine: containers that behave like nodes, each running
systemd, an SSH daemon and its own Docker engine, on a management network and a fabric network.
A declarative tool deploys a language model server onto those nodes: it stops the services of the
previous model, keeps the others running, builds an engine image with a newer transformers layer,
copies the image and the weights from node to node, starts Ray on the head and on the workers,
writes systemd units, and checks the endpoint with a real chat completion.
Hello! How are you today? I am fine, thank you. What is the capital of France? Paris.
Count with me: one, two, three, four, five, six, seven, eight, nine, ten.
The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.
user assistant system: answer briefly and politely. Tokens per second, latency, throughput.
0 1 2 3 4 5 6 7 8 9 10 100 1000 { } [ ] ( ) < > = + - * / , . ; : ! ? ' " # % & _ |
"""


def train_tokenizer() -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([line for line in CORPUS.splitlines() if line], trainer=trainer)
    assert tok.get_vocab_size() <= VOCAB, tok.get_vocab_size()
    return tok


def weights() -> dict:
    gen = torch.Generator().manual_seed(SEED)

    def normal(*shape, std=0.02):
        return (torch.randn(*shape, generator=gen) * std).to(DTYPE).contiguous()

    def ones(n):
        return torch.ones(n, dtype=DTYPE)

    w = {"model.embed_tokens.weight": normal(VOCAB, HIDDEN)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = ones(HIDDEN)
        w[p + "self_attn.q_proj.weight"] = normal(HEADS * HEAD_DIM, HIDDEN)
        w[p + "self_attn.k_proj.weight"] = normal(KV_HEADS * HEAD_DIM, HIDDEN)
        w[p + "self_attn.v_proj.weight"] = normal(KV_HEADS * HEAD_DIM, HIDDEN)
        w[p + "self_attn.o_proj.weight"] = normal(HIDDEN, HEADS * HEAD_DIM)
        w[p + "post_attention_layernorm.weight"] = ones(HIDDEN)
        w[p + "mlp.gate_proj.weight"] = normal(INTERMEDIATE, HIDDEN)
        w[p + "mlp.up_proj.weight"] = normal(INTERMEDIATE, HIDDEN)
        w[p + "mlp.down_proj.weight"] = normal(HIDDEN, INTERMEDIATE)
    w["model.norm.weight"] = ones(HIDDEN)
    # A wider head than the rest: random logits far enough apart to give varied tokens.
    w["lm_head.weight"] = normal(VOCAB, HIDDEN, std=1.0)
    return w


def write_json(path: Path, obj: dict) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tok = train_tokenizer()
    tok.save(str(out / "tokenizer.json"))
    ids = {t: tok.token_to_id(t) for t in SPECIAL}

    write_json(out / "config.json", {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": VOCAB,
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "max_position_embeddings": MAX_POS,
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "initializer_range": 0.02,
        "torch_dtype": "bfloat16",
        "bos_token_id": ids[BOS],
        "eos_token_id": [ids[EOS], ids[IM_END]],
        "pad_token_id": ids[PAD],
        "use_cache": True,
    })
    write_json(out / "generation_config.json", {
        "bos_token_id": ids[BOS],
        "eos_token_id": [ids[EOS], ids[IM_END]],
        "pad_token_id": ids[PAD],
        "do_sample": False,
    })
    write_json(out / "special_tokens_map.json", {
        "bos_token": BOS, "eos_token": IM_END, "pad_token": PAD,
    })
    write_json(out / "tokenizer_config.json", {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS,
        "eos_token": IM_END,
        "pad_token": PAD,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": MAX_POS,
        "chat_template": CHAT_TEMPLATE,
        "added_tokens_decoder": {
            str(ids[t]): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                          "single_word": False, "special": True}
            for t in SPECIAL
        },
    })
    save_file(weights(), str(out / "model.safetensors"), metadata={"format": "pt"})
    for f in out.iterdir():
        f.chmod(0o644)
    self_check(out)


def self_check(out: Path) -> None:
    """Load the result with transformers and run one chat turn through it."""
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        print("transformers not installed: self-check skipped")
        return
    tok = AutoTokenizer.from_pretrained(str(out))
    model = AutoModelForCausalLM.from_pretrained(str(out))
    prompt = tok.apply_chat_template([{"role": "user", "content": "Hello! How are you?"}],
                                     add_generation_prompt=True, tokenize=False)
    enc = tok(prompt, return_tensors="pt")
    with torch.no_grad():
        gen = model.generate(**enc, max_new_tokens=8, do_sample=False)
    print("prompt:", repr(prompt))
    print("sample:", repr(tok.decode(gen[0][enc["input_ids"].shape[1]:])))
    print("parameters:", sum(p.numel() for p in model.parameters()))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
