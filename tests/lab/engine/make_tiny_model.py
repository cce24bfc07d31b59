"""Generate the lab's tiny Llama-shaped model (stands in for the hub model).

Usage: python make_tiny_model.py OUT_DIR

A model a person can read: a word-level vocabulary (tokenizers WordLevel over a Whitespace
pre-tokenizer; a WordPiece decoder puts the spaces back and glues punctuation to its word) made
from a fixed text of chat exchanges, and a few seconds of training on that text, so that greedy
decoding of the health gate's prompt ("Say hello.") answers with a sentence instead of random
bytes. The self-check at the end asserts it.

Deterministic: the same bytes on every run (fixed seed, fixed text, one CPU thread,
torch.use_deterministic_algorithms, JSON written with sorted keys, no version strings), given the
same torch (the engine image's). Needs torch, safetensors, tokenizers and transformers (its
LlamaForCausalLM is the model trained, so the forward pass is exactly the one vLLM serves).
vLLM's CPU attention rejects head_dim 16: this model uses head_dim 64 (hidden 128, 2 heads,
1 KV head, 2 layers, 103 tokens (words, marks, specials) in a vocabulary of 256 ids: about 0.36 M parameters, ~0.7 MB
in bfloat16).
"""

import json
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # tokenizers: one thread, one order
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # noqa: E402

SEED = 20261202
VOCAB = 256
HIDDEN = 128
INTERMEDIATE = 256
LAYERS = 2
HEADS = 2
KV_HEADS = 1
HEAD_DIM = 64
MAX_POS = 2048
DTYPE = torch.bfloat16
STEPS = 300
LEARNING_RATE = 3e-3

BOS, EOS, PAD, UNK = "<|begin_of_text|>", "<|end_of_text|>", "<|pad|>", "<|unk|>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
SPECIAL = [BOS, EOS, PAD, IM_START, IM_END, UNK]

# ChatML, with the BOS token first; a generation prompt opens the assistant's turn.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# The gate's prompt (components/config/schema.py HealthSpec) and its answer: 7 words and marks,
# so it ends (with <|im_end|>) within the gate's default 8 tokens.
HEALTH_PROMPT = "Say hello."
HEALTH_ANSWER = "Hello from the tiny lab model!"

# The training text: chat exchanges, each one user turn and the assistant's answer.
EXCHANGES = [
    (HEALTH_PROMPT, HEALTH_ANSWER),
    ("hello", "Hello! I am the tiny lab model."),
    ("Hello!", "Hello! How can I help you?"),
    ("Hello! How are you?", "I am fine, thank you."),
    ("Who are you?", "I am a tiny Llama model, served by vLLM."),
    ("What is the lab?", "The lab is a small cluster of two nodes on one machine."),
    ("What runs on the nodes?", "Each node runs systemd, an SSH daemon and its own Docker engine."),
    ("How is the model deployed?", "A declarative tool writes systemd units and starts the engine."),
    ("What is the capital of France?", "Paris is the capital of France."),
    ("Count to five.", "One, two, three, four, five."),
    ("Say goodbye.", "Goodbye, and thank you for trying the lab!"),
    ("Tell me a sentence.", "The quick brown fox jumps over the lazy dog."),
    ("What does Ray do?", "Ray joins the head and the worker into one cluster."),
    ("Is the endpoint healthy?", "Yes, the endpoint answers a real chat completion."),
]


def chat(user: str, answer: str) -> str:
    """The template's text of one exchange (what apply_chat_template renders, plus the answer)."""
    return f"{BOS}{IM_START}user\n{user}{IM_END}\n{IM_START}assistant\n{answer}{IM_END}\n"


def make_tokenizer() -> Tokenizer:
    """Special tokens first, then every word and mark of the text in order of first use."""
    split = pre_tokenizers.Whitespace()
    words: list[str] = []
    for user, answer in EXCHANGES:
        for text in ("user", "assistant", user, answer):
            words += [w for w, _ in split.pre_tokenize_str(text) if w not in words]
    vocab = {t: i for i, t in enumerate(SPECIAL + words)}
    assert len(vocab) <= VOCAB, len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    tok.pre_tokenizer = split
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=True)  # "Hello !" -> "Hello!"
    tok.add_special_tokens(SPECIAL)
    return tok


def llama_config(ids: dict) -> dict:
    return {
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
    }


def train(tok: Tokenizer, config: dict) -> dict:
    """A few hundred full-batch Adam steps on the exchanges, in float32 on one CPU thread; the
    weights come back in bfloat16. Loss on the assistant's part only (answer and <|im_end|>)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    cfg = LlamaConfig(**{k: v for k, v in config.items() if k not in ("architectures", "model_type", "torch_dtype")})
    cfg._attn_implementation = "eager"
    model = LlamaForCausalLM(cfg).float()

    pad = tok.token_to_id(PAD)
    rows, labels = [], []
    for user, answer in EXCHANGES:
        prompt = tok.encode(chat(user, answer).split(IM_START + "assistant\n")[0] + IM_START + "assistant\n").ids
        full = tok.encode(chat(user, answer)).ids
        assert full[:len(prompt)] == prompt and tok.token_to_id(UNK) not in full
        rows.append(full)
        labels.append([-100] * len(prompt) + full[len(prompt):])
    width = max(len(r) for r in rows)
    input_ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
    attention = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    target = torch.tensor([lab + [-100] * (width - len(lab)) for lab in labels])

    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    model.train()
    for step in range(STEPS):
        loss = model(input_ids=input_ids, attention_mask=attention, labels=target).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0 or step == STEPS - 1:
            print(f"step {step}: loss {loss.item():.4f}")
    state = model.state_dict()
    return {k: state[k].detach().to(DTYPE).contiguous() for k in sorted(state)}


def write_json(path: Path, obj: dict) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tok = make_tokenizer()
    tok.save(str(out / "tokenizer.json"))
    ids = {t: tok.token_to_id(t) for t in SPECIAL}
    config = llama_config(ids)
    write_json(out / "config.json", config)
    write_json(out / "generation_config.json", {
        "bos_token_id": ids[BOS],
        "eos_token_id": [ids[EOS], ids[IM_END]],
        "pad_token_id": ids[PAD],
        "do_sample": False,
    })
    write_json(out / "special_tokens_map.json", {
        "bos_token": BOS, "eos_token": IM_END, "pad_token": PAD, "unk_token": UNK,
    })
    write_json(out / "tokenizer_config.json", {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS,
        "eos_token": IM_END,
        "pad_token": PAD,
        "unk_token": UNK,
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
    save_file(train(tok, config), str(out / "model.safetensors"), metadata={"format": "pt"})
    for f in out.iterdir():
        f.chmod(0o644)
    self_check(out)


# What a readable answer looks like: sentences of ASCII words, with commas and closing marks.
READABLE = re.compile(r"[A-Z][A-Za-z]*(,? [A-Za-z]+)*[.!?]( [A-Z][A-Za-z]*(,? [A-Za-z]+)*[.!?])*")


def self_check(out: Path) -> None:
    """Load the result with transformers (bfloat16, as vLLM serves it) and check that greedy
    decoding of the health gate's prompt answers with a readable sentence."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(out))
    model = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.bfloat16)
    for user in (HEALTH_PROMPT, "hello"):
        prompt = tok.apply_chat_template([{"role": "user", "content": user}],
                                         add_generation_prompt=True, tokenize=False)
        enc = tok(prompt, return_tensors="pt", add_special_tokens=False)
        with torch.no_grad():
            gen = model.generate(**enc, max_new_tokens=32, do_sample=False)
        answer = tok.decode(gen[0][enc["input_ids"].shape[1]:], skip_special_tokens=True)
        print("prompt:", repr(prompt))
        print("answer:", repr(answer))
        assert READABLE.fullmatch(answer), f"not a readable sentence: {answer!r}"
    print("parameters:", sum(p.numel() for p in model.parameters()))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
