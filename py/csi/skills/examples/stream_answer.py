"""Example skill: answer a question, streaming the reply as the model writes it."""

from pharia_skill import ChatParams, ChatStreamResponse, Csi, Message, MessageWriter, message_stream
from pydantic import BaseModel, Field


class Input(BaseModel):
    question: str = Field(min_length=1)
    model: str = Field(default="smollm2-135m-instruct", description="A loaded chat model")
    max_tokens: int = Field(default=96, ge=1)


class Done(BaseModel):
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


def done(response: ChatStreamResponse) -> Done:
    usage = response.usage()
    return Done(finish_reason=response.finish_reason().value, prompt_tokens=usage.prompt,
                completion_tokens=usage.completion)


@message_stream
def stream_answer(csi: Csi, writer: MessageWriter[Done], input: Input) -> None:
    """Answer a question; the reply streams token by token, then its finish reason and usage."""
    messages = [Message.system("You are a helpful assistant. Answer briefly."), Message.user(input.question)]
    with csi.chat_stream(input.model, messages, ChatParams(max_tokens=input.max_tokens, temperature=0.0)) as response:
        writer.forward_response(response, done)
