"""The insides role of the CPython backend: a chat model's token, position and hidden vectors."""

from __future__ import annotations

import numpy as np

from ...core.insides import InsidesArrays
from .insides_session import InsidesSession
from .models import ModelTable, chat_feeds


class CPythonInsides(ModelTable):
    """``Insides`` over a second session of the chat model, made on first use."""

    async def insides(self, model_id: str, ids: list[int], *, fft: bool, keep: int, top_k: int) -> InsidesArrays:
        m = self._chat(model_id)
        if m.insides is None:
            m.insides = InsidesSession.create(m.folder, m.config)
        feeds = chat_feeds(m, ids, 0)
        feeds.setdefault("position_ids", np.arange(len(ids), dtype=np.int64)[None, :])
        feeds = {k: v for k, v in feeds.items() if k in {i.name for i in m.insides.session.get_inputs()}}
        return m.insides.run(feeds, fft, keep, top_k)
