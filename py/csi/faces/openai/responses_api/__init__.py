"""OpenAI's Responses API (``responses.create`` and stored responses) on the engine."""
