"""``python3 build.py bench`` (``run``): csi-web against transformers.js in one browser run, one
module per section (``decode``, ``embed``, ``memory``, ``startup``, ``package``, ``remote``, the
document ``index``; ``gpu`` for ``--device webgpu``), the texts they feed in (``text``, ``lang``),
and transformers.js's own worker, the baseline (``tjs_worker.js``, served as /bench/tjs_worker.js)."""
