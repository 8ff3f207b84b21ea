"""A haiku about a subject: one chat call (written against pharia-skill's documented API only)."""

from pharia_skill import ChatParams, Csi, Message, skill
from pydantic import BaseModel


class Topic(BaseModel):
    subject: str


class Poem(BaseModel):
    text: str


@skill
def haiku(csi: Csi, input: Topic) -> Poem:
    """Write a haiku about the subject."""
    messages = [Message.system("You answer with a single haiku."), Message.user(input.subject)]
    reply = csi.chat("llama-3.1-8b-instruct", messages, ChatParams(max_tokens=48))
    return Poem(text=reply.message.content.strip())
