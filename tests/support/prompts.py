"""Conversations the greedy-equivalence tests run (inputs only; expected outputs are computed)."""

PROMPTS = [
    [{"role": "user", "content": "What does json.dumps do?"}],
    [{"role": "user", "content": "Explain the textwrap module."}],
    [{"role": "system", "content": "You are a helpful assistant."},
     {"role": "user", "content": "Tell me about os.path.join."}],
    [{"role": "user", "content": "What is a list comprehension?"},
     {"role": "assistant", "content": "It builds a list from an iterable."},
     {"role": "user", "content": "And a generator?"}],
    [{"role": "user", "content": "How do I read a file line by line? Ünïcödé — ok?"}],
]
