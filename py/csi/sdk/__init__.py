"""The skill SDK: write a skill as ``@skill def f(csi: Csi, input: Model) -> Output`` and use the
CSI (inference, chunking, language selection, document search). Skills written for pharia-skill's
``Csi`` of the WIT 0.3 era run with ``from csi.sdk import ...`` in place of ``from pharia_skill import ...``.
"""

from .chunking import Chunk, ChunkParams, ChunkRequest
from .csi import Csi
from .document_index import (
    After,
    AtOrAfter,
    AtOrBefore,
    Before,
    Cursor,
    Document,
    DocumentPath,
    EqualTo,
    FilterCondition,
    GreaterThan,
    GreaterThanOrEqualTo,
    Image,
    IndexPath,
    IsNull,
    JsonSerializable,
    LessThan,
    LessThanOrEqualTo,
    MetadataFilter,
    Modality,
    SearchFilter,
    SearchRequest,
    SearchResult,
    Text,
    With,
    WithAll,
    WithOneOf,
    Without,
)
from .inference import (
    ChatParams,
    ChatRequest,
    ChatResponse,
    Completion,
    CompletionParams,
    CompletionRequest,
    Distribution,
    FinishReason,
    JsonSchema,
    Logprob,
    Logprobs,
    Message,
    NoLogprobs,
    ResponseFormat,
    Role,
    SampledLogprobs,
    TokenUsage,
    Tool,
    ToolCall,
    ToolChoice,
    TopLogprobs,
)
from .language import Language, SelectLanguageRequest
from .skill import Skill, SkillMetadata, skill

__all__ = [
    "After", "AtOrAfter", "AtOrBefore", "Before", "ChatParams", "ChatRequest", "ChatResponse", "Chunk",
    "ChunkParams", "ChunkRequest", "Completion", "CompletionParams", "CompletionRequest", "Csi", "Cursor",
    "Distribution", "Document", "DocumentPath", "EqualTo", "FilterCondition", "FinishReason", "GreaterThan",
    "GreaterThanOrEqualTo", "Image", "IndexPath", "IsNull", "JsonSchema", "JsonSerializable", "Language", "LessThan",
    "LessThanOrEqualTo", "Logprob", "Logprobs", "Message", "MetadataFilter", "Modality", "NoLogprobs",
    "ResponseFormat", "Role", "SampledLogprobs", "SearchFilter", "SearchRequest", "SearchResult",
    "SelectLanguageRequest", "Skill", "SkillMetadata", "Text", "TokenUsage", "Tool", "ToolCall", "ToolChoice",
    "TopLogprobs", "With", "WithAll", "WithOneOf", "Without", "skill",
]
