"""What a server is sent: a ``GenerationRequest`` as OpenAI's chat or text completion (the faces of
pharia:skill, Spin ``llm`` and RemoteLLM), or, for OpenAI's own faces, their request passed through
(tools and ``response_format`` then run on the server); csi-web's extensions refused, naming them."""

from __future__ import annotations

from typing import Any

from ..core.request import GenerationParams, GenerationRequest
from ..errors import InvalidInputError
from ..faces.openai.messages import text_of
from ..faces.openai.protocol import ChatCompletionRequest, CompletionRequest
from .endpoints import ServerModel

NOT_SENT = {"stream", "stream_options", "functions", "function_call", "extra_body", "model", "n", "echo"}


def sampling_body(params: GenerationParams) -> dict[str, Any]:
    """OpenAI's request fields for ``params`` (those at their defaults left out, and those the
    request left out: the server applies its model's defaults); what a server cannot be asked for
    is refused, naming it."""
    s = params.sampling
    if s.grammar is not None:
        raise InvalidInputError("a model on a server is not constrained by a grammar on this face; send "
                                "`response_format` through chat completions", s.grammar.param)
    # ``keep_special`` (the CSI's ``return_special_tokens``, on by default in pharia-skill) is not
    # refused: whether a server's text shows special tokens is the server's own setting
    body: dict[str, Any] = {}
    if s.temperature is not None:
        body["temperature"] = s.temperature
    if s.top_p is not None and s.top_p != 1.0:
        body["top_p"] = s.top_p
    if s.top_k:
        body["top_k"] = s.top_k
    if s.seed is not None:
        body["seed"] = s.seed
    if s.frequency_penalty:
        body["frequency_penalty"] = s.frequency_penalty
    if s.presence_penalty:
        body["presence_penalty"] = s.presence_penalty
    if s.repetition_penalty is not None and s.repetition_penalty != 1.0:
        body["repeat_penalty"] = body["repetition_penalty"] = s.repetition_penalty
    if s.logit_bias:
        body["logit_bias"] = {str(t): b for t, b in s.logit_bias}
    if params.max_tokens is not None:
        body["max_tokens"] = params.max_tokens
    if params.stop:
        body["stop"] = list(params.stop)
    if params.ignore_eos:
        body["ignore_eos"] = True
    return body


def request_body(request: GenerationRequest, model: ServerModel) -> tuple[str, dict[str, Any]]:
    """The path and body of ``request`` for the server: chat for messages, text completion otherwise."""
    if request.tools and request.tool_choice != "none":
        raise InvalidInputError("tools of a model on a server are served through chat completions only", "tools")
    s = request.params.sampling
    body = {"model": model.server_model, "stream": True, "stream_options": {"include_usage": True},
            **sampling_body(request.params)}
    if request.messages is not None:
        body["messages"] = [_message(m) for m in request.messages]
        if s.logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = s.top_logprobs
        if request.template_vars:
            body["chat_template_kwargs"] = dict(request.template_vars)
        return "chat/completions", body
    body["prompt"] = request.prompt if request.prompt is not None else list(request.prompt_ids or ())
    body.setdefault("max_tokens", None)  # the rest of the window, as here (a server's default is 16)
    if s.logprobs:
        body["logprobs"] = max(s.top_logprobs, 1)
    return "completions", body


def _message(m: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                             for c in m.tool_calls]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    return out


def passthrough_body(req: ChatCompletionRequest | CompletionRequest, model: ServerModel) -> tuple[str, dict[str, Any]]:
    """The OpenAI request as the server gets it: OpenAI's fields, streamed with usage (``n`` is one
    request per choice, ``echo`` is written here); what only csi-web can do is refused."""
    if req.return_token_ids:
        raise InvalidInputError(f"{model.endpoint.base_url} does not return token ids", "return_token_ids")
    extra = req.extra_body
    if extra is not None and extra.enable_latency_breakdown:
        raise InvalidInputError("a server does not report its latency by stage", "extra_body.enable_latency_breakdown")
    rf = req.response_format
    if rf is not None and rf.type in ("grammar", "regex", "structural_tag"):
        raise InvalidInputError(f"`{rf.type}` is csi-web's own response format; a server takes `json_schema` "
                                "or `json_object`", "response_format.type")
    if isinstance(req, CompletionRequest) and req.chat_logprobs:
        raise InvalidInputError("a server gives text completions' log-probabilities for `logprobs: <count>`",
                                "logprobs")
    body = req.model_dump(mode="json", exclude_unset=True, by_alias=True, exclude=NOT_SENT)
    if isinstance(req, ChatCompletionRequest):  # text parts as one text: not every server reads parts
        for out, m in zip(body["messages"], req.messages, strict=True):
            if isinstance(out.get("content"), list):
                out["content"] = text_of(getattr(m, "content", None) or [])
    if extra is not None and extra.enable_thinking is not None:
        body["chat_template_kwargs"] = {"enable_thinking": extra.enable_thinking}
    body.update(model=model.server_model, stream=True, stream_options={"include_usage": True})
    return ("chat/completions" if isinstance(req, ChatCompletionRequest) else "completions"), body
