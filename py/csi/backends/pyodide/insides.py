"""The insides role of the Pyodide backend: Python reads the graph and plans, the bridge computes."""

from __future__ import annotations

from json import dumps, loads

from pyodide.ffi import JsException, to_js

from ...core.insides import GraphSummary, InsidesArrays, InsidesPlan, find_tensors, rotary_inv_freq
from ...errors import ModelNotSupportedError
from .bridge_state import BridgeState


class PyodideInsides(BridgeState):
    """``Insides`` over the bridge; the tensors to read are found once per model."""

    async def insides(self, model_id: str, ids: list[int], *, fft: bool, keep: int, top_k: int) -> InsidesArrays:
        found = self._insides.get(model_id)
        if found is None:
            try:
                spec = loads(await self._bridge.insidesGraph(model_id))
            except JsException as exc:
                raise ModelNotSupportedError(f"could not read the model's ONNX graph: {exc.message}", "model") from None
            tensors = find_tensors(GraphSummary.from_json(spec["graph"]), spec["config"])
            found = (tensors, None if tensors.positional else rotary_inv_freq(spec["config"]))
            self._insides[model_id] = found
        plan = InsidesPlan(found[0], found[1], fft, keep, top_k)
        try:
            out = await self._bridge.insides(model_id, to_js(ids), dumps(plan.to_json()))
        except JsException as exc:
            raise ModelNotSupportedError(f"the model's insides could not be computed: {exc.message}",
                                         "model") from None
        rows, width, pos_width = int(out.rows), int(out.width), int(out.posWidth)
        flat = out.data.to_py().tolist()

        def matrix(start: int, w: int) -> list[list[float]]:
            return [flat[start + i * w: start + (i + 1) * w] for i in range(rows)]

        return InsidesArrays(matrix(0, width), matrix(rows * width, pos_width),
                          matrix(rows * (width + pos_width), width),
                          [(int(i), float(lg), float(p)) for i, lg, p in loads(out.top)])
