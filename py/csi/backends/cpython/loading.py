"""The loading role of the CPython backend: model folders read into sessions and tokenizers."""

from __future__ import annotations

from json import dumps, loads
from typing import Any

import onnxruntime as ort
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import Tokenizer

from ...core.backend import ModelInfo, ProgressFn
from ...core.sampling_defaults import from_generation_config
from ...errors import ModelLoadError
from .models import ChatModel, EmbeddingModel, ModelTable
from .tokenizer_json import read_token_bytes

CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")


class CPythonLoading(ModelTable):
    """``Loading`` from ``models_dir/<id>/`` (this backend never downloads)."""

    async def load_model(self, model_id: str, device: str, progress: ProgressFn | None,
                         hub: str | None = None, gguf_budget: int | None = None) -> ModelInfo:
        """Load from the models folder (this backend never downloads: ``hub`` has no effect, nor
        ``gguf_budget``: GGUF files open in the page)."""
        folder = self.models_dir / model_id
        if not (folder / "config.json").exists():
            raise ModelLoadError(f"could not load model {model_id!r}: it is not in the models folder "
                                 f"(known: {', '.join(self.builtin_models()) or 'none'})", "model")
        try:
            config = loads((folder / "config.json").read_text())
            tok_config = loads((folder / "tokenizer_config.json").read_text())
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            options = ort.SessionOptions()
            options.log_severity_level = 3
            session = ort.InferenceSession(str(folder / "onnx" / "model.onnx"), options,
                                           providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - a broken folder; the message names files, not paths
            detail = str(exc)
            for prefix in (str(self.models_dir.resolve()), str(self.models_dir)):
                detail = detail.replace(prefix, "<models>")
            raise ModelLoadError(f"could not load model {model_id!r}: {type(exc).__name__}: {detail}",
                                 "model") from None
        if progress:
            progress({"stage": "ready", "file": None, "loaded": 1, "total": 1, "model": model_id})
        if any(a.endswith(CAUSAL_SUFFIXES) for a in config.get("architectures", [])):
            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
            env.filters["tojson"] = _tojson
            special = {k: v for k, v in tok_config.items() if k.endswith("_token") and isinstance(v, str)}
            names = [i.name for i in session.get_inputs()]
            heads = config.get("num_attention_heads", config.get("n_head"))
            width = config.get("hidden_size", config.get("n_embd"))
            chat = ChatModel(
                tokenizer=tokenizer, session=session,
                template=env.from_string(tok_config.get("chat_template") or ""), special=special,
                kv_heads=config.get("num_key_value_heads", heads), head_dim=config.get("head_dim") or width // heads,
                cache_inputs=[n for n in names if n.startswith("past_key_values.")],
                uses_position_ids="position_ids" in names,
                token_bytes=read_token_bytes(folder / "tokenizer.json"),
                chat_template=tok_config.get("chat_template"),
                folder=folder, config=config,
            )
            self._models[model_id] = chat
            gen_path = folder / "generation_config.json"
            gen = loads(gen_path.read_text()) if gen_path.exists() else {}
            eos = [gen.get("eos_token_id"), config.get("eos_token_id")]
            eos_ids = sorted({e for x in eos for e in (x if isinstance(x, list) else [x]) if isinstance(e, int)})
            chat.grammar_args = (folder, int(config.get("vocab_size", 0)), eos_ids)
            context = config.get("max_position_embeddings", config.get("n_positions", 2048))
            return ModelInfo(model_id, "chat", int(context), tuple(eos_ids), int(config.get("vocab_size", 0)),
                             sampling=from_generation_config(gen))
        max_len = int(tok_config.get("model_max_length", 512))
        tokenizer.enable_truncation(min(max_len, 100_000))
        tokenizer.enable_padding(pad_id=tokenizer.token_to_id(tok_config.get("pad_token", "[PAD]")) or 0)
        self._models[model_id] = EmbeddingModel(tokenizer=tokenizer, session=session)
        return ModelInfo(model_id, "embedding", max_len, (), int(config.get("vocab_size", 0)))

    def cancel_loads(self) -> None:
        pass  # loads read local files: nothing to stop

    async def unload_model(self, model_id: str) -> None:
        self._models.pop(model_id, None)

    def builtin_models(self) -> tuple[str, ...]:
        if not self.models_dir.is_dir():
            return ()
        return tuple(sorted(p.name for p in self.models_dir.iterdir() if (p / "tokenizer.json").exists()))


def _tojson(value: Any, indent: int | None = None, separators: tuple[str, str] | None = None,
            sort_keys: bool = False, ensure_ascii: bool = False) -> str:
    """Jinja's ``tojson`` as chat templates expect it (Hugging Face's and @huggingface/jinja's:
    ``json.dumps``, no HTML escaping), not Jinja's own HTML-safe one."""
    return dumps(value, indent=indent, separators=separators, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
