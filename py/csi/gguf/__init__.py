"""Reading GGUF files in the browser: what a GGUF's metadata and tensors become for transformers.js."""
