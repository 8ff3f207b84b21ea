"""Example skill: find the language of a message, then answer in that language."""


from pharia_skill import ChatParams, Csi, Language, Message, skill
from pydantic import BaseModel, Field


class Input(BaseModel):
    message: str
    languages: list[Language] = Field(
        default=[Language.English, Language.German, Language.French, Language.Spanish, Language.Italian],
        description="The languages to choose from (ISO 639-3)")
    model: str = Field(default="smollm2-135m-instruct", description="A loaded chat model")
    max_tokens: int = Field(default=64, ge=1)


class Output(BaseModel):
    language: Language | None
    reply: str


@skill
def reply_in_language(csi: Csi, input: Input) -> Output:
    """Reply to a message in the language it was written in (English when that is unclear)."""
    language = csi.select_language(input.message, input.languages)
    name = (language or Language.English).name
    messages = [Message.system(f"You are a helpful assistant. Always answer in {name}."),
                Message.user(input.message)]
    response = csi.chat(input.model, messages, ChatParams(max_tokens=input.max_tokens, temperature=0.0))
    return Output(language=language, reply=response.message.content or "")
