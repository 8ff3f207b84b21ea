"""GGUF files opened as they are: their models' graphs and tokenizers written from their headers."""
