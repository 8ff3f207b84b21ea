"""A GGUF's tokenizer metadata -> Hugging Face's ``tokenizer.json`` and ``tokenizer_config.json``,
so the browser opens a GGUF with no build step.

The files are the ones csi-web's build-time importer writes (``buildtools/models/gguf_import.py``:
transformers' GGUF reader, ``integrations/gguf/gguf_tokenizer_mapping.py``, then the importer's
fix-ups), rebuilt here from the metadata alone:

- ``tokenizer.ggml.model == "gpt2"``: byte-level BPE (SmolLM2, Llama 3, Qwen2/2.5/3), tokens
  respelled in GPT-2's byte alphabet, split by the regex ``tokenizer.ggml.pre`` names;
- ``"llama"``: sentencepiece-style BPE with byte fallback (older Llama, Phi-3, Gemma 3), the merges
  recovered from the scores (Gemma: from the order of the tokens) where the file has none;
- control tokens (token type 3) become special added tokens and user-defined ones (4) plain added
  tokens, after the special tokens transformers' builder class adds on its own (GPT-2's
  ``<|endoftext|>``, sentencepiece's ``<s>``, Gemma's ``<mask>``; a new id past the vocabulary
  where the file lacks them, as transformers gives it), then the file's bos/eos/unk/pad tokens;
- the post-processor adds BOS/EOS where the file's ``add_bos_token``/``add_eos_token`` say so
  (a sentencepiece file that says nothing adds BOS, as llama.cpp does).

The importer's own ``tokenizer_config.json`` keys ``is_local`` and ``local_files_only`` (how
transformers loaded the file) are left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby
from operator import itemgetter
from typing import Any

from .tokenizer_pipelines import BYTE_LEVEL_DECODER, Step, byte_level_pre_tokenizer, sentencepiece_steps

CONTROL, USER_DEFINED = 3, 4
# tokenizer_config key -> GGUF key, in the order transformers adds the named special tokens
NAMED = {"bos_token": "tokenizer.ggml.bos_token_id", "eos_token": "tokenizer.ggml.eos_token_id",
         "unk_token": "tokenizer.ggml.unknown_token_id", "pad_token": "tokenizer.ggml.padding_token_id"}
# transformers' builder of a sentencepiece vocabulary, by architecture (others: "llama")
SENTENCEPIECE_BUILDERS = {"gemma": "gemma", "gemma2": "gemma", "gemma3": "gemma", "phi3": "phi3"}
# the special tokens each builder class adds before the file's own (its defaults, in its order)
BUILDER_TOKENS = {"gpt2": ("<|endoftext|>",), "llama": ("<s>", "</s>", "<unk>"), "phi3": ("<s>", "</s>", "<unk>"),
                  "gemma": ("<bos>", "<eos>", "<unk>", "<pad>", "<mask>")}
# the class transformers' AutoTokenizer picks for the architecture: the name tokenizer_config.json
# carries, and the keys that class adds to it (architectures the importer refuses: the generic class)
CLASSES = {"llama": "TokenizersBackend", "phi3": "TokenizersBackend", "qwen2": "Qwen2Tokenizer",
           "qwen3": "Qwen2Tokenizer", "gemma3": "GemmaTokenizer"}
CLASS_KEYS: dict[str, dict[str, Any]] = {"Qwen2Tokenizer": {"add_prefix_space": None},
                                         "GemmaTokenizer": {"mask_token": "<mask>"}}
RESPECIAL_CLASSES = ("Qwen2Tokenizer",)  # re-adds its named tokens as special, user-defined ones too
# byte-level vocabularies of these families keep the file's pipeline under the generic class (the
# importer's choice: their own classes would redo it)
GENERIC_FAMILIES = ("qwen3", "gemma3", "phi3")
GENERIC_CLASS = "PreTrainedTokenizerFast"


class GGUFTokenizerError(ValueError):
    """A GGUF tokenizer this module cannot build; the message says why."""


def tokenizer_files(meta: Mapping[str, Any], model_max_length: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tokenizer.json, tokenizer_config.json) of the GGUF whose metadata is `meta`."""
    kind = meta.get("tokenizer.ggml.model")
    arch = str(meta.get("general.architecture", ""))
    tokens = meta.get("tokenizer.ggml.tokens")
    if kind not in ("gpt2", "llama"):
        raise GGUFTokenizerError(f"unsupported tokenizer.ggml.model {kind!r}: csi-web reads GGUF tokenizers of "
                                 "the 'gpt2' (byte-level BPE) and 'llama' (sentencepiece) kinds")
    if not isinstance(tokens, Sequence) or not tokens or not all(isinstance(t, str) for t in tokens):
        raise GGUFTokenizerError("the GGUF has no tokenizer.ggml.tokens list")
    types = list(meta.get("tokenizer.ggml.token_type") or ())
    builder = "gpt2" if kind == "gpt2" else SENTENCEPIECE_BUILDERS.get(arch, "llama")
    model, vocab, control, (normalizer, pre_tokenizer, decoder) = _model(meta, builder, tokens, types)

    added = _AddedTokens(vocab)
    for token in (*BUILDER_TOKENS[builder], *control):
        added.add(token, special=True)
    for token, k in zip(tokens, types, strict=False):  # transformers' zip: a short list leaves the rest out
        if k == USER_DEFINED and (token in vocab or token in added.ids):
            added.add(token, special=False)
    generic = builder == "gpt2" and arch in GENERIC_FAMILIES
    tokenizer_class = GENERIC_CLASS if generic else CLASSES.get(arch, GENERIC_CLASS)
    named = {name: _token(meta, key, tokens) for name, key in NAMED.items()}
    named.update(CLASS_KEYS.get(tokenizer_class, {}))
    for name, content in named.items():
        if name.endswith("_token") and content is not None and (content not in added.ids
                                                                 or tokenizer_class in RESPECIAL_CLASSES):
            added.add(content, special=True)

    spec = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added.spec(),
            "normalizer": normalizer, "pre_tokenizer": pre_tokenizer,
            "post_processor": _post_processor(meta, kind, named, added), "decoder": decoder, "model": model}
    config = dict(sorted({**named, "backend": "tokenizers", "model_max_length": int(model_max_length),
                          "tokenizer_class": tokenizer_class}.items()))
    template = meta.get("tokenizer.chat_template")
    if template:
        config["chat_template"] = str(template)  # transformers.js reads it from here only
    config["clean_up_tokenization_spaces"] = False
    return spec, config


def _model(meta: Mapping[str, Any], builder: str, tokens: Sequence[str], types: Sequence[int]
           ) -> tuple[dict[str, Any], dict[str, int], list[str], tuple[Step | None, Step | None, Step]]:
    """The BPE model of ``builder``'s kind, its vocabulary, the control tokens it adds as special
    and its (normalizer, pre-tokenizer, decoder)."""
    model: dict[str, Any] = {"type": "BPE", "dropout": None, "unk_token": None}
    steps: tuple[Step | None, Step | None, Step]
    if builder == "gpt2":
        vocab, control = _byte_level_vocab(tokens, types)
        merges = _merges(meta, tokens, vocab)
        steps = (None, byte_level_pre_tokenizer(str(meta.get("tokenizer.ggml.pre", ""))), BYTE_LEVEL_DECODER)
        model.update(continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False, byte_fallback=False)
    else:
        pieces = tokens
        if builder == "gemma":  # tokens of spaces alone are stored with real spaces; the merges want ▁
            pieces = ["\u2581" * len(t) if " " in t and not t.strip() else t for t in tokens]
        vocab = {t: i for i, t in enumerate(pieces)}
        control = [t for t, k in zip(tokens, types, strict=False) if k == CONTROL]
        # Gemma's scores do not follow its merge order; the order of its tokens does
        order = {t: -float(i) for i, t in enumerate(pieces)} if builder == "gemma" else None
        merges = _merges(meta, pieces, vocab, order)
        steps = sentencepiece_steps(builder)
        model.update(unk_token="<unk>" if builder == "gemma" else None, continuing_subword_prefix=None,
                     end_of_word_suffix=None, fuse_unk=True, byte_fallback=True)
    model.update(ignore_merges=False, vocab=_by_id(vocab, len(tokens)), merges=merges)
    return model, vocab, control, steps


def _byte_alphabet() -> list[str]:
    """GPT-2's printable stand-in of each byte value (``bytes_to_unicode``), indexed by the byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    spelling: dict[int, int] = dict(zip(printable, printable, strict=True))
    for b in range(256):
        if b not in spelling:
            spelling[b] = 256 + len(spelling) - len(printable)
    return [chr(spelling[b]) for b in range(256)]


def _byte_level_vocab(tokens: Sequence[str], types: Sequence[int]) -> tuple[dict[str, int], list[str]]:
    """The vocabulary in the byte alphabet (a token written outside it, e.g. ``"你好"``, respelled)
    and the control tokens; one written outside it is a mislabel transformers skips."""
    spell = _byte_alphabet()
    alphabet = frozenset(spell)
    vocab = {t if alphabet.issuperset(t) else "".join([spell[b] for b in t.encode()]): i for i, t in enumerate(tokens)}
    control = [t for t, k in zip(tokens, types, strict=False) if k == CONTROL and alphabet.issuperset(t)]
    return vocab, control


def _merges(meta: Mapping[str, Any], tokens: Sequence[str], vocab: dict[str, int],
            order: dict[str, float] | None = None) -> list[list[str]]:
    """The file's merges, or (none in the file) the ones its vocabulary implies, best first."""
    listed = meta.get("tokenizer.ggml.merges")
    if listed is not None:
        merges = [m.split(" ") for m in listed]
        bad = next((m for m in merges if len(m) != 2), None)
        if bad is not None:
            raise GGUFTokenizerError(f"tokenizer.ggml.merges has an entry that is not two tokens: {' '.join(bad)!r}")
        return merges
    if order is None:
        scores = meta.get("tokenizer.ggml.scores")
        if scores is None:
            raise GGUFTokenizerError("the GGUF's tokenizer has neither merges nor scores to recover them from")
        order = dict(zip(tokens, map(float, scores), strict=False))
    return _implied_merges({t: i for i, t in enumerate(tokens)}, order)


def _implied_merges(ids: dict[str, int], scores: dict[str, float]) -> list[list[str]]:
    """transformers' ``generate_merges``: every split of a token into two tokens, ranked by the
    token's score, then the longer left part, then the longer right part (ties as its stable sorts
    leave them).

    Its one sort of all the merges is done per score instead: a token whose score no other has (the
    usual case) just lists its splits, longest left part first."""
    ranked = sorted(scores.items(), key=itemgetter(1), reverse=True)  # stable: equal scores in file order
    merges: list[list[str]] = []
    for _, same_score in groupby(ranked, key=itemgetter(1)):
        pieces = [piece for piece, _ in same_score]
        if len(pieces) == 1:
            piece = pieces[0]
            merges += [[piece[:k], piece[k:]] for k in range(len(piece) - 1, 0, -1)
                       if piece[:k] in ids and piece[k:] in ids]
            continue
        group: list[tuple[str, str]] = []
        for piece in pieces:
            group += sorted(((piece[:k], piece[k:]) for k in range(1, len(piece))
                             if piece[:k] in ids and piece[k:] in ids), key=lambda m: (ids[m[0]], ids[m[1]]))
        group.sort(key=lambda m: (len(m[0]), len(m[1])), reverse=True)
        merges += [[left, right] for left, right in group]
    return merges


def _by_id(vocab: dict[str, int], count: int) -> dict[str, int]:
    """The vocabulary in id order, as tokenizers writes it (only repeated tokens disturb it)."""
    return vocab if len(vocab) == count else dict(sorted(vocab.items(), key=lambda kv: kv[1]))


def _token(meta: Mapping[str, Any], key: str, tokens: Sequence[str]) -> str | None:
    """The token whose id the GGUF gives under ``key`` (``None``: no such key)."""
    index = meta.get(key)
    if index is None:
        return None
    if not 0 <= int(index) < len(tokens):
        raise GGUFTokenizerError(f"{key} is {index}, outside the vocabulary of {len(tokens)} tokens")
    return tokens[int(index)]


class _AddedTokens:
    """tokenizers' added vocabulary: each token gets its vocabulary id (or, if new, the next id past
    the vocabulary and the tokens added so far); adding a token again replaces its flags."""

    def __init__(self, vocab: dict[str, int]) -> None:
        self.vocab = vocab
        self.ids: dict[str, int] = {}
        self.tokens: dict[int, tuple[str, bool]] = {}
        self.top = -1

    def add(self, content: str, special: bool) -> None:
        token_id = self.ids.get(content)
        if not content or (token_id is not None and self.tokens.get(token_id) == (content, special)):
            return
        if token_id is None:
            token_id = self.vocab.get(content)
        if token_id is None:
            token_id = self.top + 1 if self.top >= len(self.vocab) else len(self.vocab)
        self.ids[content] = token_id
        self.tokens[token_id] = (content, special)
        self.top = max(self.top, token_id)

    def id_of(self, content: str) -> int:
        return self.ids[content] if content in self.ids else self.vocab[content]

    def spec(self) -> list[dict[str, Any]]:
        return [{"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
                 "normalized": False, "special": special} for i, (content, special) in sorted(self.tokens.items())]


def _post_processor(meta: Mapping[str, Any], kind: str, named: dict[str, Any], added: _AddedTokens) -> Step:
    """A template adding BOS/EOS as the file says (where it says nothing: BOS for sentencepiece only)."""
    ends: dict[str, str | None] = {
        end: named[f"{end}_token"] if meta.get(f"tokenizer.ggml.add_{end}_token", default) else None
        for end, default in (("bos", kind == "llama"), ("eos", False))}

    def template(sequence: str, type_id: int) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = [{"Sequence": {"id": sequence, "type_id": type_id}}]
        if ends["bos"] is not None:
            items.insert(0, {"SpecialToken": {"id": ends["bos"], "type_id": type_id}})
        if ends["eos"] is not None:
            items.append({"SpecialToken": {"id": ends["eos"], "type_id": type_id}})
        return items

    specials = {t: {"id": t, "ids": [added.id_of(t)], "tokens": [t]} for t in ends.values() if t is not None}
    return {"type": "TemplateProcessing", "single": template("A", 0), "pair": template("A", 0) + template("B", 1),
            "special_tokens": specials}
