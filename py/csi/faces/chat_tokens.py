"""``chat_tokens``: a conversation's token ids as the model's chat template renders them.

The Prompt API facade (web/prompt_api.js) measures a session's context usage with it, and prompts
with the ids it returns (as a completion's token prompt), which lets a reply continue an assistant
prefix (``prefix: true``) and follow a conversation that ends with an assistant turn. With
``tools`` (a session's tools), the ids are those a chat completion with the same messages and
tools renders, tool calls and results included.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from ..core.engine import Engine
from ..core.request import ChatMessage, GenerationRequest, ToolCall
from ..core.sampling_defaults import NEUTRAL, SamplingDefaults
from ..core.scope import Scope
from ..errors import ContextWindowExceededError, InvalidInputError, NotSupportedError, blame
from ..wire import Strict
from .structured import ChatCompletionTool, engine_tools


class CallTurn(Strict):
    """A tool call an assistant turn made; ``arguments`` is JSON text."""

    id: str
    name: str
    arguments: str


class TextTurn(Strict):
    """One turn of a conversation: text, an assistant's tool calls, or a tool's result."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: list[CallTurn] | None = None
    tool_call_id: str | None = None


class ChatTokensRequest(Strict):
    model: str | None = None
    messages: Annotated[list[TextTurn], Field(min_length=1)]
    """Rendered with the generation prompt added (the assistant's turn opened)."""
    prefix: str | None = None
    """The start of the assistant's reply: its tokens follow the generation prompt."""
    tools: list[ChatCompletionTool] | None = None
    """Rendered as a chat completion renders them (checked as it checks them)."""


class ModelSampling(BaseModel):
    """The model's sampling defaults, completed as an OpenAI request leaving them out gets them."""

    temperature: float
    top_k: int
    """0: off."""
    top_p: float
    repetition_penalty: float

    @classmethod
    def of(cls, declared: SamplingDefaults) -> ModelSampling:
        return cls(**declared.or_else(NEUTRAL).to_dict())


class ChatTokens(BaseModel):
    model: str
    token_ids: list[int] | None
    """``None`` when the conversation does not fit the context window (see ``count``)."""
    count: int
    """How many tokens the conversation takes (at least ``context_window`` when it does not fit)."""
    context_window: int
    sampling: ModelSampling
    """What a request that leaves sampling out gets on this model (the Prompt API's defaults)."""


_TOO_LONG = re.compile(r"has (\d+) tokens")


async def chat_tokens(engine: Engine, req: ChatTokensRequest, scope: Scope | None = None) -> ChatTokens:
    """Render ``req.messages`` (the engine checks the model and the window; nothing is generated)."""
    messages = tuple(ChatMessage(m.role, m.content, tuple(ToolCall(c.id, c.name, c.arguments)
                                                          for c in m.tool_calls or ()), m.tool_call_id)
                     for m in req.messages)
    tools, choice = engine_tools(req.tools, None)
    engine.runner(engine.resolve_model(req.model, "chat").model_id).needs_tokenizer(
        "a model on a server renders its prompts there: its tokens are not known here", "model", NotSupportedError)
    try:
        gen = engine.generate(GenerationRequest(model=req.model, messages=messages, tools=tools, tool_choice=choice),
                              scope)
    except ContextWindowExceededError as exc:
        model = engine.resolve_model(req.model, "chat")
        found = _TOO_LONG.search(str(exc))
        count = max(int(found.group(1)) if found else 0, model.context_length)
        return ChatTokens(model=model.model_id, token_ids=None, count=count, context_window=model.context_length,
                          sampling=ModelSampling.of(model.sampling))
    ids = list(gen.prompt_ids)
    if req.prefix:
        with blame("prefix"):
            ids += _text_ids(engine, gen.model.model_id, req.prefix, scope)
    window = gen.model.context_length
    return ChatTokens(model=gen.model.model_id, token_ids=ids if len(ids) < window else None, count=len(ids),
                      context_window=window, sampling=ModelSampling.of(gen.model.sampling))


def _text_ids(engine: Engine, model: str, text: str, scope: Scope | None) -> list[int]:
    """``text``'s tokens, without the special tokens the tokenizer adds to a whole prompt."""
    ids = list(engine.generate(GenerationRequest(model=model, prompt=text), scope).prompt_ids)
    try:
        added = list(engine.generate(GenerationRequest(model=model, prompt=""), scope).prompt_ids)
    except InvalidInputError:  # nothing added: the empty prompt stays empty
        added = []
    return ids[len(added):] if ids[:len(added)] == added else ids
