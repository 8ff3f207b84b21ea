"""The official `openai` npm client in a page of the site, talking to its `/v1/` endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.support.browser import boot_engine, tracked_context

CLIENT = """const { OpenAI } = await import('/vendor/openai/index.mjs');
            const client = new OpenAI({baseURL: location.origin + '/v1', apiKey: 'unused',
                                       dangerouslyAllowBrowser: true, maxRetries: 0});"""


def run_client(page: Any, body: str, arg: Any = None) -> Any:
    """Run ``body`` (an async function body with ``client`` and ``arg``) in ``page``; what it threw
    comes back as ``{thrown: {name, status, param, code, message}}``."""
    return page.evaluate(
        f"""async (arg) => {{
              try {{ {CLIENT} {body} }}
              catch (e) {{ return {{thrown: {{name: e.constructor.name, status: e.status ?? null,
                                               param: e.param ?? null, code: e.code ?? null,
                                               message: e.message}}}}; }}
            }}""", arg)


@contextmanager
def v1_tabs(browser: Any, site_url: str, models: list[str]) -> Iterator[tuple[Any, Any, list[str]]]:
    """A host tab (an engine on ``models``, served at /v1/ by serveV1) and a client tab of the same
    site, and every request of their context."""
    context, requests = tracked_context(browser)
    host = context.new_page()
    host.set_default_timeout(300_000)
    boot_engine(host, site_url, models)
    host.evaluate("""async () => {
                       const { serveV1 } = await import('/web/v1_host.js');
                       window.served = await serveV1(window.engine);
                     }""")
    client = context.new_page()
    client.set_default_timeout(300_000)
    client.goto(site_url + "web/engine.js")
    assert client.evaluate("!!navigator.serviceWorker.controller")  # /v1/ goes through the service worker
    try:
        yield host, client, requests
    finally:
        context.close()
