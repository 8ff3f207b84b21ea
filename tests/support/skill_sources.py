"""Python sources of skills the tests register, in CPython and in the browser alike."""

from pydantic import BaseModel, Field

ECHO = '''
"""Echo a topic back with a count."""
from pydantic import BaseModel, Field

from pharia_skill import Csi, skill


class Input(BaseModel):
    topic: str
    times: int = Field(default=1, ge=1, le=5)


class Output(BaseModel):
    echoed: list[str]


@skill
def echo(csi: Csi, input: Input) -> Output:
    """Repeat the topic `times` times."""
    return Output(echoed=[input.topic] * input.times)
'''


class Echo:
    """The same models as ECHO's source, written here to compare schemas with pydantic's."""

    class Input(BaseModel):
        topic: str
        times: int = Field(default=1, ge=1, le=5)

    class Output(BaseModel):
        echoed: list[str]


RAISES = '''
from pydantic import BaseModel

from pharia_skill import Csi, skill


class Input(BaseModel):
    n: int


class Output(BaseModel):
    quotient: int


def helper(n):
    return 10 // n


@skill
def divide(csi: Csi, input: Input) -> Output:
    """Ten divided by n."""
    return Output(quotient=helper(input.n))
'''

# Uses csi.chat, csi.chunk and csi.select_language; greedy, so CPython and the browser agree.
CSI_TOUR = '''
from pydantic import BaseModel

from pharia_skill import ChatParams, ChunkParams, Csi, Language, Message, skill


class Input(BaseModel):
    text: str


class Output(BaseModel):
    language: Language | None
    chunks: list[str]
    reply: str
    finish_reason: str
    usage: list[int]


@skill
def tour(csi: Csi, input: Input) -> Output:
    """Chunk, detect the language, then chat about the first chunk."""
    chunks = [c.text for c in csi.chunk(input.text, ChunkParams("tiny-chat", max_tokens=12, overlap=2))]
    language = csi.select_language(input.text, [Language.English, Language.German, Language.French])
    response = csi.chat("tiny-chat", [Message.user(chunks[0])], ChatParams(max_tokens=16, temperature=0.0))
    return Output(language=language, chunks=chunks, reply=response.message.content,
                  finish_reason=response.finish_reason.value,
                  usage=[response.usage.prompt, response.usage.completion])
'''

TOUR_TEXT = ("Die Katze schläft auf dem warmen Fensterbrett, während draußen der Regen fällt. "
             "Später wird sie hungrig aufwachen und laut nach ihrem Futter rufen.")

SYNTAX_ERROR = "from pharia_skill import skill\n\ndef broken(:\n    pass\n"
IMPORT_ERROR = "from pharia_skill import skill\n\nimport numpy_is_not_here\n"
NO_SKILL = "x = 1\n"


# Documents of a few sentences in an index of small chunks, so search results are parts of them.
SEARCH_DOCS = {
    "json.txt": "The json module encodes Python objects as JSON text. It has four functions. "
                "json.dumps returns a string; json.loads parses a string back into Python objects.",
    "owls.txt": "Owls are birds of prey that hunt at night. Their large eyes see well in the dark, "
                "and they can turn their heads far around.",
    "tea.txt": "Green tea is brewed with water at about eighty degrees for two minutes. "
               "Black tea wants boiling water and longer steeping.",
}
