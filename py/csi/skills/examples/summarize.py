"""Example skill: chunk a long text with the model's tokenizer, then complete a summary per chunk."""


from pharia_skill import ChatParams, ChatRequest, ChunkParams, Csi, Message, skill
from pydantic import BaseModel, Field

SYSTEM = "Summarize the text you are given in one short sentence."


class Input(BaseModel):
    text: str = Field(description="The text to summarize")
    model: str = Field(default="smollm2-135m-instruct", description="A loaded chat model")
    chunk_tokens: int = Field(default=128, ge=8, description="Tokens per chunk")
    summary_tokens: int = Field(default=32, ge=1, le=512, description="Tokens per chunk summary")


class Output(BaseModel):
    summary: str
    chunks: int


@skill
def summarize(csi: Csi, input: Input) -> Output:
    """Summarize a text of any length: one greedy one-sentence summary per chunk, joined."""
    chunks = csi.chunk(input.text, ChunkParams(input.model, max_tokens=input.chunk_tokens))
    params = ChatParams(max_tokens=input.summary_tokens, temperature=0.0)
    requests = [ChatRequest(input.model, [Message.system(SYSTEM), Message.user(c.text)], params) for c in chunks]
    lines = [" ".join((r.message.content or "").split()) for r in csi.chat_concurrent(requests)]
    return Output(summary=" ".join(line for line in lines if line), chunks=len(chunks))
