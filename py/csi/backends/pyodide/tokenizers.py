"""The tokenizers role of the Pyodide backend: the bridge's tokenizers and chat templates."""

from __future__ import annotations

from json import dumps, loads
from typing import Any

from pyodide.ffi import JsException, to_js

from ...core.grammar import vocab_type
from ...core.token_bytes import TokenBytes, build_token_bytes
from ...errors import ModelNotSupportedError
from .bridge_state import BridgeState


class PyodideTokenizers(BridgeState):
    """``Tokenizers`` over the bridge (ids cross as typed arrays, structures as JSON text)."""

    def chat_template(self, model_id: str) -> str | None:
        template = self._bridge.chatTemplate(model_id)
        return template if isinstance(template, str) else None

    def apply_chat_template(self, model_id: str, messages: list[dict[str, Any]],
                            tools: list[dict[str, Any]] | None = None,
                            variables: dict[str, Any] | None = None) -> list[int]:
        tools_json = dumps(tools) if tools else None
        return self._bridge.applyChatTemplate(model_id, dumps(messages), tools_json,
                                              dumps(variables or {})).to_py().tolist()

    def encode(self, model_id: str, text: str, add_special_tokens: bool = False) -> list[int]:
        return self._bridge.encode(model_id, text, add_special_tokens).to_py().tolist()

    def decode(self, model_id: str, ids: list[int]) -> str:
        return self._bridge.decode(model_id, to_js(ids))

    def token_bytes(self, model_id: str) -> TokenBytes | None:
        spec = loads(self._bridge.tokenTable(model_id))
        self._vocab_types[model_id] = vocab_type(spec["decoder"])  # for grammars, without a second copy
        return build_token_bytes(spec["decoder"], spec["vocab"], [tuple(a) for a in spec["added"]])

    async def load_tokenizer(self, model_id: str) -> None:
        try:
            await self._bridge.loadTokenizer(model_id)
        except JsException as exc:
            raise ModelNotSupportedError(f"no tokenizer for {model_id!r}: {exc.message}", "model") from None

    def count_tokens(self, model_id: str, texts: list[str]) -> list[int]:
        return self._bridge.countTokens(model_id, dumps(texts)).to_py().tolist()
