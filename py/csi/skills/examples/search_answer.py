"""Example skill: search a document index, then answer a question from the sections found."""


from pharia_skill import ChatParams, Csi, IndexPath, Message, SearchResult, skill
from pydantic import BaseModel, Field

NOTHING_FOUND = "I found nothing in the documents about this."
SYSTEM = ("You answer questions using only the numbered sections of documents you are given. "
          "If they do not contain the answer, say so.")


class Input(BaseModel):
    question: str = Field(min_length=1)
    namespace: str
    collection: str
    index: str = Field(description="The search index of the collection to search")
    max_results: int = Field(default=3, ge=1, le=10, description="How many sections to put in the prompt")
    min_score: float | None = Field(default=None, description="Leave out sections scoring below this")
    model: str = Field(default="smollm2-135m-instruct", description="A loaded chat model")
    max_tokens: int = Field(default=64, ge=1)


class Position(BaseModel):
    item: int = Field(description="The document's content item")
    position: int = Field(description="Character position in the item (inclusive)")


class Source(BaseModel):
    name: str = Field(description="The document's name in the collection")
    content: str
    score: float
    start: Position
    end: Position


class Output(BaseModel):
    answer: str
    sources: list[Source] = Field(description="The sections the answer was given from, best first (section n is [n])")


def prompt(question: str, results: list[SearchResult]) -> str:
    """The user turn: the sections, numbered from 1 in score order, then the question."""
    sections = "\n\n".join(f"[{n}] {r.document_path.name}:\n{r.content.strip()}" for n, r in enumerate(results, 1))
    return f"Sections:\n\n{sections}\n\nQuestion: {question}"


@skill
def search_answer(csi: Csi, input: Input) -> Output:
    """Answer a question from the best-matching sections of a document index, citing them as sources.

    The sections go into the prompt numbered [1], [2], ... and the chat model answers greedily
    (temperature 0). When the search finds nothing, the model is not asked: the answer says that
    nothing was found and ``sources`` is empty.
    """
    path = IndexPath(input.namespace, input.collection, input.index)
    results = csi.search(path, input.question, input.max_results, input.min_score)
    if not results:
        return Output(answer=NOTHING_FOUND, sources=[])
    messages = [Message.system(SYSTEM), Message.user(prompt(input.question, results))]
    response = csi.chat(input.model, messages, ChatParams(max_tokens=input.max_tokens, temperature=0.0))
    sources = [Source(name=r.document_path.name, content=r.content, score=r.score,
                      start=Position(item=r.start.item, position=r.start.position),
                      end=Position(item=r.end.item, position=r.end.position)) for r in results]
    return Output(answer=(response.message.content or "").strip(), sources=sources)
