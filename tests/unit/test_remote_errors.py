"""A server's HTTP errors as csi-web's typed errors, with the server's own message kept: OpenAI's
error shape, FastAPI's validation errors (llama-cpp-python's 500 naming the field), plain text."""

from __future__ import annotations

import json

import pytest

from csi.errors import (
    AuthenticationError,
    ContextWindowExceededError,
    InvalidInputError,
    ModelNotSupportedError,
    RateLimitError,
    ServerError,
)
from csi.servers.endpoints import check_server_url as check_remote_url
from csi.servers.errors import http_error

WHERE = "the server at http://127.0.0.1:1/v1"


def openai_error(message: str, param: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": param}}).encode()


@pytest.mark.parametrize(("status", "body", "kind", "param"), [
    (400, openai_error("`temperature` must be at most 2", "temperature"), InvalidInputError, "temperature"),
    (422, json.dumps({"detail": [{"loc": ["body", "messages", 0, "role"], "msg": "bad role"}]}).encode(),
     InvalidInputError, "messages[0].role"),
    (400, openai_error("This model's maximum context length is 2048 tokens. However, you requested 3036 tokens",
                       "messages"), ContextWindowExceededError, "messages"),
    (413, b"Payload Too Large", ContextWindowExceededError, "messages"),
    (401, json.dumps({"detail": "Invalid API key"}).encode(), AuthenticationError, "api_key"),
    (403, b"forbidden", AuthenticationError, "api_key"),
    (404, openai_error("The model `x` does not exist"), ModelNotSupportedError, "model"),
    (429, openai_error("Rate limit reached"), RateLimitError, None),
    (503, b"Service Unavailable", ServerError, None),
    (500, openai_error("1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                       "'msg': \"Input should be 'text' or 'json_object'\"}"), InvalidInputError,
     "response_format.type"),
    (500, openai_error("1 validation error: {'loc': ('body', 'messages', 0, 'content')}"), InvalidInputError,
     "messages[0].content"),
    (500, b"Internal Server Error", ServerError, None),
])
def test_each_status_is_its_error_with_the_servers_message(status, body, kind, param):
    err = http_error(status, body, WHERE)
    assert type(err) is kind
    assert err.param == param
    assert err.message.startswith(f"{WHERE} answered {status}: ")
    said = json.loads(body)["error"]["message"] if body.startswith(b'{"error"') else None
    if said is not None:
        assert said in err.message


@pytest.mark.parametrize("url", ["ftp://x/v1", "http://", "javascript:alert(1)", "http://a b/v1", "x" * 3000, ""])
def test_a_base_url_that_is_not_http_is_refused_by_field(url):
    with pytest.raises(InvalidInputError) as err:
        check_remote_url(url, "remotes[0].base_url")
    assert err.value.param == "remotes[0].base_url"


def test_a_base_url_loses_its_trailing_slash():
    assert check_remote_url("http://127.0.0.1:8080/v1/", "p") == "http://127.0.0.1:8080/v1"
