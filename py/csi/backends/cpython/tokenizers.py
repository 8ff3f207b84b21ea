"""The tokenizers role of the CPython backend: HF tokenizers and Jinja chat templates."""

from __future__ import annotations

from typing import Any

from tokenizers import Tokenizer

from ...core.token_bytes import TokenBytes
from ...errors import ModelLoadError
from .models import ModelTable


class CPythonTokenizers(ModelTable):
    """``Tokenizers`` over the loaded chat models' tokenizers, and counters read from the models folder."""

    async def load_tokenizer(self, model_id: str) -> None:
        if model_id not in self._counters:
            path = self.models_dir / model_id / "tokenizer.json"
            if not path.exists():
                raise ModelLoadError(f"no tokenizer for {model_id!r} in the models folder", "model")
            tokenizer = Tokenizer.from_file(str(path))
            tokenizer.no_truncation()
            tokenizer.no_padding()
            self._counters[model_id] = tokenizer

    def count_tokens(self, model_id: str, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._counters[model_id].encode_batch(texts, add_special_tokens=False)]

    def chat_template(self, model_id: str) -> str | None:
        return self._chat(model_id).chat_template

    def apply_chat_template(self, model_id: str, messages: list[dict[str, Any]],
                            tools: list[dict[str, Any]] | None = None,
                            variables: dict[str, Any] | None = None) -> list[int]:
        m = self._chat(model_id)
        text = m.template.render(**{**(variables or {}), **m.special, "messages": messages, "tools": tools,
                                    "add_generation_prompt": True})
        return m.tokenizer.encode(text, add_special_tokens=False).ids

    def encode(self, model_id: str, text: str, add_special_tokens: bool = False) -> list[int]:
        return self._chat(model_id).tokenizer.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, model_id: str, ids: list[int]) -> str:
        return self._chat(model_id).tokenizer.decode(ids, skip_special_tokens=True)

    def token_bytes(self, model_id: str) -> TokenBytes | None:
        return self._chat(model_id).token_bytes
