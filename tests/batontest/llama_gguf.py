"""A tiny random-weight Qwen3 GGUF carrying the REAL Qwen3 vocabulary and chat template, for a real llama-server.

Why: a real llama-server needs a model file, nothing can be downloaded here, and what Baton's counts depend on is
the vocabulary and the template, not the weights. The vocabulary is written as llama.cpp's own converter writes
a Qwen3 one (``convert_hf_to_gguf.py``: ``get_vocab_base`` + ``_set_vocab_gpt2``: BPE ``gpt2`` model, ``qwen2``
pre-tokenizer, added tokens CONTROL or USER_DEFINED, padding up to ``vocab_size``, merges, special ids and the
chat template through ``gguf.SpecialVocab``); the layers are two, 64 wide, random.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from batontest import assets
from batontest.assets import cache_root, qwen3_dir

VOCAB_SIZE = 151936  # Qwen3's embedding rows (the tokenizer's 151,669 tokens, padded as the converter pads)
EMBED, HEADS, KV_HEADS, HEAD_DIM, FFN, LAYERS = 64, 2, 1, 32, 128, 2


def tiny_qwen3_gguf() -> Path:
    """The model file, written once into the tokenizer cache (``batontest.assets.cache_root``) and reused."""
    target = cache_root() / "qwen3-tiny-gguf"
    assets._build_once(target, lambda tmp: write_tiny_qwen3_gguf(tmp / "model.gguf"))  # atomic: a rename
    return target / "model.gguf"


def write_tiny_qwen3_gguf(target: Path, *, context_length: int = 131072, seed: int = 0) -> Path:
    """Write the model to ``target`` (a .gguf path) and return it; ``context_length`` is its training window
    (llama-server caps a slot's window at it)."""
    import gguf
    from transformers import AutoTokenizer

    tokenizer_dir = qwen3_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    writer = gguf.GGUFWriter(str(target), "qwen3")
    writer.add_name("qwen3-tiny-random")
    writer.add_context_length(context_length)
    writer.add_embedding_length(EMBED)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_key_length(HEAD_DIM)
    writer.add_value_length(HEAD_DIM)
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    tokens, types = _vocabulary(tokenizer, gguf.TokenType)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    gguf.SpecialVocab(tokenizer_dir, load_merges=True, n_vocab=len(tokens)).add_to_gguf(writer)

    for name, shape in _tensor_shapes():
        writer.add_tensor(name, _weights(np.random.default_rng([seed, len(name)]), name, shape))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return target


def _vocabulary(tokenizer, token_type) -> tuple[list[str], list[int]]:  # type: ignore[no-untyped-def]
    """The token list and types as ``convert_hf_to_gguf.py``'s ``get_vocab_base`` builds them for Qwen3."""
    reverse = {index: token for token, index in tokenizer.vocab.items()}
    added = tokenizer.get_added_vocab()
    decoder = tokenizer.added_tokens_decoder
    tokens, types = [], []
    for index in range(VOCAB_SIZE):
        token = reverse.get(index)
        if token is None:
            tokens.append(f"[PAD{index}]")
            types.append(token_type.UNUSED)
        elif token in added:
            tokens.append(token)
            types.append(token_type.CONTROL if decoder[index].special or _looks_special(token)
                         else token_type.USER_DEFINED)
        else:
            tokens.append(token)
            types.append(token_type.NORMAL)
    return tokens, types


def _looks_special(token: str) -> bool:
    """The converter's ``does_token_look_special`` for the forms Qwen3's added tokens take."""
    return token.startswith("<|") and token.endswith("|>")


def _tensor_shapes() -> list[tuple[str, tuple[int, ...]]]:
    """numpy shapes (ggml's dimensions reversed); the output projection is tied to the embedding."""
    shapes: list[tuple[str, tuple[int, ...]]] = [("token_embd.weight", (VOCAB_SIZE, EMBED)),
                                                 ("output_norm.weight", (EMBED,))]
    for layer in range(LAYERS):
        block = f"blk.{layer}"
        shapes += [
            (f"{block}.attn_norm.weight", (EMBED,)),
            (f"{block}.attn_q.weight", (HEADS * HEAD_DIM, EMBED)),
            (f"{block}.attn_k.weight", (KV_HEADS * HEAD_DIM, EMBED)),
            (f"{block}.attn_v.weight", (KV_HEADS * HEAD_DIM, EMBED)),
            (f"{block}.attn_output.weight", (EMBED, HEADS * HEAD_DIM)),
            (f"{block}.attn_q_norm.weight", (HEAD_DIM,)),
            (f"{block}.attn_k_norm.weight", (HEAD_DIM,)),
            (f"{block}.ffn_norm.weight", (EMBED,)),
            (f"{block}.ffn_gate.weight", (FFN, EMBED)),
            (f"{block}.ffn_up.weight", (FFN, EMBED)),
            (f"{block}.ffn_down.weight", (EMBED, FFN)),
        ]
    return shapes


def _weights(rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> np.ndarray:
    if len(shape) == 1:  # norms: ones, so activations stay finite
        return np.ones(shape, dtype=np.float32)
    return (rng.standard_normal(shape) * 0.02).astype(np.float32)
