"""The model folders csi-web serves or tests with: the built-in models (``smollm2``, ``tiny_chat*``,
``minilm``, ``tiny_gpt2``), the Hub-only test model (``tiny_qwen2``), the bench's shapes
(``bench_models``), what they are made with (``gguf_import`` with ``gguf_blocks``, ``onnx_decoder``,
``traceable_decoder``, ``atomic_dir``), the local Hub mirror that serves them (``hub_mirror``) and ``cache``: each built
once into .cache/models, again only when its sources change."""
