"""xgrammar for one chat model of the CPython backend: its vocabulary, compiler and the compiled
grammars (least recently used dropped first)."""

from __future__ import annotations

from collections import OrderedDict
from json import dumps, loads
from pathlib import Path
from typing import Any

from ...core.grammar import Grammar, GrammarError, compact_json_formats, vocab_type
from .tokenizer_json import vocab_list

GRAMMAR_CACHE_SIZE = 64


class Grammars:
    """The compiler of one model's vocabulary and its cache of compiled grammars."""

    def __init__(self, folder: Path, vocab_size: int, stop_ids: list[int]) -> None:
        import xgrammar as xgr  # only when a grammar is asked for

        self.xgr = xgr
        spec = loads((folder / "tokenizer.json").read_text())
        vocab = vocab_list(spec)
        kind, prepend = vocab_type(spec.get("decoder"))
        info = xgr.TokenizerInfo(vocab, xgr.VocabType[kind.upper()], vocab_size=max(vocab_size, len(vocab)),
                                 stop_token_ids=stop_ids, add_prefix_space=prepend)
        self.vocab_size = info.vocab_size
        self.compiler = xgr.GrammarCompiler(info, max_threads=1)
        self.cache: OrderedDict[tuple[str, str], Any] = OrderedDict()

    def json_ebnf(self, schema: Any) -> str:
        """A JSON Schema as compact EBNF (the form ``compile_json_schema`` is given)."""
        return str(self.xgr.Grammar.from_json_schema(dumps(schema), any_whitespace=False, separators=(", ", ": "),
                                                     strict_mode=True))

    def compiled(self, grammar: Grammar) -> Any:
        """``grammar`` compiled (from the cache when it was before); ``GrammarError`` if it cannot be."""
        key = (grammar.kind, grammar.source)
        if key in self.cache:
            self.cache.move_to_end(key)
            return self.cache[key]
        try:
            if grammar.kind == "json_schema":
                out = self.compiler.compile_json_schema(grammar.source, any_whitespace=False,
                                                       separators=(", ", ": "), strict_mode=True)
            elif grammar.kind == "ebnf":
                out = self.compiler.compile_grammar(grammar.source)
            else:
                tag = compact_json_formats(loads(grammar.source), self.json_ebnf)
                out = self.compiler.compile_structural_tag(dumps(tag))
        except (RuntimeError, ValueError, TypeError) as exc:
            raise GrammarError(str(exc)) from None
        self.cache[key] = out
        if len(self.cache) > GRAMMAR_CACHE_SIZE:
            self.cache.popitem(last=False)
        return out
