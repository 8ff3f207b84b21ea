"""Skills written against pharia-skill's documented API (0.20.0), in our own words: the tests run
each one unchanged in CPython (``local_csi``) and in Chromium (``engine.skills``)."""

# A plain @skill naming a Kernel model: it runs through an alias.
HAIKU = '''
from pydantic import BaseModel

from pharia_skill import ChatParams, Csi, Message, skill


class Input(BaseModel):
    topic: str


class Output(BaseModel):
    haiku: str


@skill
def haiku(csi: Csi, input: Input) -> Output:
    """Write a short poem about a topic."""
    messages = [Message.system("You are a poet. Answer with a three-line poem."), Message.user(input.topic)]
    response = csi.chat("llama-3.1-8b-instruct", messages, ChatParams(max_tokens=40, temperature=0.0))
    return Output(haiku=response.message.content.strip())
'''

# The same request, streamed by a @message_stream skill through the SDK's forward_response.
HAIKU_STREAM = '''
from pydantic import BaseModel

from pharia_skill import ChatParams, Csi, Message, MessageWriter, message_stream


class Input(BaseModel):
    topic: str


class Done(BaseModel):
    finish_reason: str
    completion_tokens: int


@message_stream
def haiku_stream(csi: Csi, writer: MessageWriter[Done], input: Input) -> None:
    """Stream a short poem about a topic as it is written."""
    messages = [Message.system("You are a poet. Answer with a three-line poem."), Message.user(input.topic)]
    with csi.chat_stream("llama-3.1-8b-instruct", messages, ChatParams(max_tokens=40, temperature=0.0)) as response:
        writer.forward_response(response, lambda r: Done(finish_reason=r.finish_reason().value,
                                                        completion_tokens=r.usage().completion))
'''

# A RAG skill over the document index: search, then answer from what was found.
RAG = '''
from pydantic import BaseModel

from pharia_skill import ChatParams, Csi, IndexPath, Message, skill


class Input(BaseModel):
    question: str


class Output(BaseModel):
    answer: str
    sources: list[str]


@skill
def rag(csi: Csi, input: Input) -> Output:
    """Answer from the best sections of the 'docs' collection."""
    found = csi.search(IndexPath("skills", "docs", "small"), input.question, max_results=2)
    context = "\\n\\n".join(r.content.strip() for r in found)
    messages = [Message.system("Answer using only this text:\\n" + context), Message.user(input.question)]
    response = csi.chat("llama-3.1-8b-instruct", messages, ChatParams(max_tokens=32, temperature=0.0))
    return Output(answer=response.message.content.strip(), sources=[r.document_path.name for r in found])
'''

# Tools: the SDK's own tool loop (chat_stream with tools=[...]) and a direct invoke_tool.
TOOL_USER = '''
from pydantic import BaseModel

from pharia_skill import ChatParams, Csi, Message, ToolError, skill


class Input(BaseModel):
    question: str


class Output(BaseModel):
    tools: list[str]
    direct: str
    failed: str
    answer: str


@skill
def tool_user(csi: Csi, input: Input) -> Output:
    """Ask a model that may call the weather tool; also call the tools directly."""
    names = [t.name for t in csi.list_tools()]
    direct = csi.invoke_tool("get_weather", city="Oslo").text()
    try:
        csi.invoke_tool("broken_tool", reason="test")
        failed = ""
    except ToolError as e:
        failed = e.message
    messages = [Message.user(input.question)]
    with csi.chat_stream("tool-model", messages, ChatParams(max_tokens=64, temperature=0.0),
                         tools=["get_weather"]) as response:
        answer = response.consume_message().content
    return Output(tools=names, direct=direct, failed=failed, answer=answer)
'''

# Structured output: a tool's schema as the shape of the reply (the SDK's chat_stream_step).
STRUCTURED = '''
from pydantic import BaseModel

from pharia_skill import ChatParams, Csi, Message, Tool, skill

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}


class Input(BaseModel):
    text: str


class Output(BaseModel):
    called: bool
    name: str
    parameters: dict


@skill
def extract(csi: Csi, input: Input) -> Output:
    """Offer a record_person tool and read the call the model makes, if any."""
    tool = Tool("record_person", "Record a person mentioned in the text", PERSON)
    response = csi.chat_stream_step("tool-model", [Message.user(input.text)],
                                    ChatParams(max_tokens=64, temperature=0.0), [tool])
    call = response.tool_call()
    if call is None:
        return Output(called=False, name="", parameters={})
    return Output(called=True, name=call.name, parameters=call.parameters)
'''

PEOPLE = (
    "Record the person: Ada Lovelace, aged 36.",
    "Record the person: Alan Turing, aged 41.",
    "Record this person: Grace Hopper, 85 years old.",
    "Ada Lovelace is 36. Record her.",
    "Record the person named Ada Lovelace who is 36 years old.",
    "Call record_person for Ada Lovelace, aged 36.",
    "Record the person: Linus, aged 54.",
)
"""Texts for STRUCTURED: whether tiny-chat calls on a given one depends on how its training came
out (the Python whose docstrings it learned), so a test asks them all and needs a call on one."""


JINJA = '''
from jinja2 import Environment
from pydantic import BaseModel

from pharia_skill import Csi, skill


class Input(BaseModel):
    items: list[str]


class Output(BaseModel):
    html: str


@skill
def listing(csi: Csi, input: Input) -> Output:
    """Render the items as an escaped HTML list with jinja2."""
    env = Environment(autoescape=True)
    template = env.from_string("<ul>{% for i in items %}<li>{{ i }}</li>{% endfor %}</ul>")
    return Output(html=template.render(items=input.items))
'''

NUMPY = '''
import numpy
from pydantic import BaseModel

from pharia_skill import Csi, skill


class Input(BaseModel):
    n: int


class Output(BaseModel):
    n: int


@skill
def uses_numpy(csi: Csi, input: Input) -> Output:
    return Output(n=int(numpy.int64(input.n)))
'''

WEATHER_TOOL = {"name": "get_weather", "description": "The current weather in a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                                 "required": ["city"]}}
BROKEN_TOOL = {"name": "broken_tool", "description": "Always fails",
               "input_schema": {"type": "object", "properties": {"reason": {"type": "string"}}}}
