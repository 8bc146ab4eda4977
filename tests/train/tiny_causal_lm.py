"""A tiny Llama-style causal language model written to a folder, as a user's local model is.

Random weights (seeded) and a byte-level BPE tokenizer trained on a few public sentences:
the real loading, tokenizing and fine-tuning code paths, in seconds.
"""

from __future__ import annotations

from pathlib import Path

SENTENCES = [
    "the quick brown fox jumps over the lazy dog",
    "my number is 1 2 3 4 5 6 and yours is 7 8 9 0",
    "see you at the station at six, bring the tickets",
    "free entry to win a prize, text win to 80086 now",
    "ok lar, joking with you, call me later tonight",
]


def write_tiny_causal_lm(folder: Path, *, layers: int = 3, seed: int = 0) -> Path:
    """A LlamaForCausalLM (width 32, ``layers`` layers) and its tokenizer in ``folder``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(SENTENCES * 4, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>")
    config = LlamaConfig(
        vocab_size=bpe.get_vocab_size(),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        initializer_range=0.3,  # room in the frozen head: logits of a few nats
        eos_token_id=0,
        bos_token_id=0,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        network = LlamaForCausalLM(config)
    folder.mkdir(parents=True, exist_ok=True)
    network.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
