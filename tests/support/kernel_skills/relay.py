"""Stream a model's answer to a question as it is generated (pharia-skill's `@message_stream`)."""

from pharia_skill import ChatParams, ChatStreamResponse, Csi, Message, MessageWriter, message_stream
from pydantic import BaseModel


class Question(BaseModel):
    text: str


class Ending(BaseModel):
    finish_reason: str


def ending(response: ChatStreamResponse) -> Ending:
    return Ending(finish_reason=response.finish_reason().value)


@message_stream
def relay(csi: Csi, writer: MessageWriter[Ending], input: Question) -> None:
    messages = [Message.system("Answer briefly."), Message.user(input.text)]
    with csi.chat_stream("llama-3.1-8b-instruct", messages, ChatParams(max_tokens=32)) as response:
        writer.forward_response(response, ending)
