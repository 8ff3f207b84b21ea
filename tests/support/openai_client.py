"""The official `openai` npm client in a page of the site, talking to its `/v1/` endpoint."""

from __future__ import annotations

from typing import Any

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
