"""A skill that imports `requests`: `pharia-skill build` refuses it (no outbound HTTP in a skill)."""

import requests
from pharia_skill import Csi, skill
from pydantic import BaseModel


class Url(BaseModel):
    url: str


class Page(BaseModel):
    status: int


@skill
def fetcher(csi: Csi, input: Url) -> Page:
    return Page(status=requests.get(input.url, timeout=5).status_code)
