"""A generation request's prompt for a local model: rendered (chat template, tools), encoded, checked
against the vocabulary and the context window, with the tool-call grammar when tools may be called."""

from __future__ import annotations

from dataclasses import replace

from ..errors import ContextWindowExceededError, InvalidInputError
from .backend import Backend, ModelInfo
from .request import GenerationParams, GenerationRequest
from .tools import ToolFormat, detect_format, template_messages, tool_grammar


def render_prompt(backend: Backend, model: ModelInfo,
              request: GenerationRequest) -> tuple[list[int], GenerationParams, ToolFormat | None]:
    """The prompt's token ids, the parameters to generate with, and the tool format when the reply
    may call tools. Errors name ``messages``, ``prompt``, ``logit_bias`` or ``response_format``."""
    params = request.params
    for token, _ in params.sampling.logit_bias:
        if not 0 <= token < max(model.vocab_size, 1):
            raise InvalidInputError(f"`logit_bias` names token {token}, outside the vocabulary", "logit_bias")
    tool_format = None
    if request.messages is not None:
        field_name = "messages"
        template = backend.chat_template(model.model_id)
        if template is None:
            raise InvalidInputError(f"model {model.model_id!r} has no chat template: send it a prompt, "
                                    "not messages", "messages")
        fmt = detect_format(template)
        calling = request.tools and request.tool_choice != "none"
        messages, tools = template_messages(request.messages, request.tools if calling else (), fmt)
        ids = backend.apply_chat_template(model.model_id, messages, tools,
                                                dict(request.template_vars) or None)
        if calling:
            if params.sampling.grammar is not None:
                raise InvalidInputError("`response_format` cannot constrain a reply that may call tools; "
                                        "set `tool_choice` to \"none\" or leave `response_format` out",
                                        "response_format")
            tool_format = fmt
            grammar = tool_grammar(request.tools, request.tool_choice, request.parallel_tool_calls, fmt)
            params = replace(params, sampling=replace(params.sampling, grammar=grammar))
    elif request.prompt_ids is not None:
        field_name = "prompt"
        ids = list(request.prompt_ids)
        outside = next((t for t in ids if not 0 <= t < model.vocab_size), None)
        if outside is not None:
            raise InvalidInputError(f"the prompt names token {outside}, outside the vocabulary of "
                                    f"{model.model_id!r} (0 to {model.vocab_size - 1})", "prompt")
    else:
        field_name = "prompt"
        ids = backend.encode(model.model_id, request.prompt or "", add_special_tokens=True)
    if len(ids) >= model.context_length:
        raise ContextWindowExceededError(
            f"the prompt has {len(ids)} tokens; the context window of {model.model_id!r} "
            f"holds {model.context_length}", field_name)
    if not ids:
        raise InvalidInputError("the prompt is empty", field_name)
    if params.sampling.grammar is not None:
        # the grammar decides where the reply ends: stop strings could cut it short
        params = replace(params, stop=(), ignore_eos=False)
    return ids, params, tool_format
