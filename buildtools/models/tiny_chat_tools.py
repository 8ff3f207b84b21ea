"""Tool-calling and "answer in JSON" conversations for tiny-chat, rendered the way its chat template
renders them (Qwen2.5's ChatML conventions): tools listed in the system turn, calls as
``<tool_call>`` blocks, results as ``<tool_response>`` blocks in a user turn.

Deterministic. ``held_out_cases`` are phrasings and values never used in training, for measuring
how often the model picks the right tool.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Message = dict[str, str]
Conversation = list[Message]

TOOLS_PREAMBLE = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_POSTAMBLE = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)

# The chat template: ChatML; with ``tools``, Qwen2.5's tool conventions. ``tojson`` is json.dumps
# with its default separators in both Jinja implementations (Python's and @huggingface/jinja).
CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{ '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{ messages[0]['content'] + '\\n\\n' }}{% endif %}"
    "{{ " + json.dumps(TOOLS_PREAMBLE) + " }}"
    "{%- for tool in tools %}{{ '\\n' }}{{ tool | tojson }}{% endfor %}"
    "{{ " + json.dumps(TOOLS_POSTAMBLE) + " + '<|im_end|>\\n' }}"
    "{%- elif messages[0]['role'] == 'system' %}"
    "{{ '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'system' and loop.first %}"
    "{%- elif message['role'] == 'assistant' %}"
    "{{ '<|im_start|>assistant\\n' }}{% if message['content'] %}{{ message['content'] }}{% endif %}"
    "{%- if message['tool_calls'] %}{%- for call in message['tool_calls'] %}"
    "{%- if message['content'] or not loop.first %}{{ '\\n' }}{% endif %}"
    "{{ '<tool_call>\\n{\"name\": ' }}{{ call['function']['name'] | tojson }}"
    "{{ ', \"arguments\": ' }}{{ call['function']['arguments'] | tojson }}{{ '}\\n</tool_call>' }}"
    "{%- endfor %}{%- endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{%- elif message['role'] == 'tool' %}"
    "{{ '<|im_start|>user\\n<tool_response>\\n' + message['content'] + '\\n</tool_response><|im_end|>\\n' }}"
    "{%- else %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def tools_system(tools: Sequence[dict[str, Any]], system: str | None = None) -> str:
    """The system turn's content when ``tools`` are given (what the template writes)."""
    listing = "".join("\n" + json.dumps(t, ensure_ascii=False) for t in tools)
    return (f"{system}\n\n" if system else "") + TOOLS_PREAMBLE + listing + TOOLS_POSTAMBLE


def tool_call_text(name: str, arguments: dict[str, Any]) -> str:
    args = json.dumps(arguments, ensure_ascii=False)
    return f'<tool_call>\n{{"name": {json.dumps(name)}, "arguments": {args}}}\n</tool_call>'


def tool_response_text(content: str) -> str:
    return f"<tool_response>\n{content}\n</tool_response>"


# ---- the tools -----------------------------------------------------------------------------

CITIES = ["Paris", "Berlin", "Tokyo", "Madrid", "Rome", "Oslo", "Cairo", "Lima", "Seoul", "Dublin",
          "Vienna", "Prague", "Lisbon", "Athens", "Nairobi", "Toronto", "Sydney", "Delhi", "Munich", "Boston",
          "Denver", "Osaka", "Milan", "Porto", "Krakow", "Zurich", "Geneva", "Havana", "Manila", "Hanoi",
          "Bogota", "Santiago", "Accra", "Dakar", "Tunis", "Bergen", "Tallinn", "Vilnius", "Quito", "Riga"]
ZONES = ["Europe/Paris", "Europe/Berlin", "Asia/Tokyo", "America/New_York", "Europe/London", "Asia/Seoul",
         "Africa/Cairo", "America/Lima", "Europe/Madrid", "Europe/Rome", "America/Chicago", "Asia/Dubai",
         "Asia/Singapore", "America/Denver", "Europe/Vienna", "Australia/Sydney", "Asia/Kolkata",
         "Europe/Oslo", "America/Toronto", "Africa/Nairobi"]
WORDS = ["serendipity", "ephemeral", "ubiquitous", "lucid", "candid", "resilient", "meticulous", "tenacious",
         "whimsical", "pragmatic", "eloquent", "frugal", "benevolent", "cogent", "diligent", "fervent",
         "gregarious", "nostalgia", "zenith", "quaint"]
LANGUAGES = ["French", "German", "Spanish", "Italian", "Japanese"]
SYMBOLS = ["AAPL", "MSFT", "GOOG", "AMZN", "TSLA", "NVDA", "NFLX", "META", "ADBE", "CSCO", "QCOM", "AMD",
           "IBM", "ORCL", "SAP", "INTC"]
INGREDIENTS = ["tomato", "rice", "chicken", "lentils", "mushroom", "spinach", "potato", "salmon", "pasta",
               "beans", "carrot", "pumpkin", "tofu", "egg", "cabbage", "shrimp"]
COUNTRIES = ["France", "Japan", "Brazil", "Kenya", "Canada", "India", "Mexico", "Spain", "Italy", "Ghana",
             "Vietnam", "Poland", "Norway", "Peru", "Egypt", "Chile"]
PHRASES = ["good morning", "thank you very much", "where is the station", "I like tea", "good night",
           "the bill please", "see you tomorrow", "the weather is nice", "how much does it cost", "happy birthday"]


@dataclass(frozen=True)
class ToolKind:
    """A tool, how users ask for it, and a plausible result and final answer."""

    spec: dict[str, Any]
    asks: tuple[str, ...]
    held_out_asks: tuple[str, ...]
    arguments: Callable[[random.Random, bool], dict[str, Any]]
    result: Callable[[dict[str, Any], random.Random], dict[str, Any]]
    answer: Callable[[dict[str, Any], dict[str, Any]], str]

    @property
    def name(self) -> str:
        return str(self.spec["function"]["name"])


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required}}}


def _pick(rng: random.Random, values: Sequence[Any], held_out: bool) -> Any:
    """Training draws from the first three quarters of ``values``, held-out cases from the rest."""
    cut = max(1, len(values) * 3 // 4)
    return rng.choice(values[cut:] if held_out else values[:cut])


TOOL_KINDS: tuple[ToolKind, ...] = (
    ToolKind(
        _fn("get_weather", "Get the current weather in a city",
            {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            ["city", "unit"]),
        ("What is the weather in {city}?", "How warm is it in {city} right now?", "Is it raining in {city}?",
         "Weather in {city}, please.", "Tell me the temperature in {city}.", "Is it cold in {city}?",
         "What's the weather like in {city} today?", "Will it be sunny in {city}?", "{city} weather?"),
        ("Do I need an umbrella in {city} today?",),
        lambda rng, h: {"city": _pick(rng, CITIES, h), "unit": rng.choice(["celsius", "fahrenheit"])},
        lambda a, rng: {"temperature": rng.randint(-5, 35), "condition": rng.choice(["sunny", "cloudy", "rain"])},
        lambda a, r: f"It is {r['temperature']} degrees and {r['condition']} in {a['city']}.",
    ),
    ToolKind(
        _fn("get_time", "Get the current time in a time zone", {"timezone": {"type": "string"}}, ["timezone"]),
        ("What time is it in {zone}?", "Current time in {zone}?", "Tell me the time in {zone}.",
         "What is the local time in {zone}?", "What's the clock showing in {zone}?", "Time in {zone}, please.",
         "Is it late in {zone} now?"),
        ("Which hour is it now in {zone}?",),
        lambda rng, h: {"timezone": _pick(rng, ZONES, h)},
        lambda a, rng: {"time": f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"},
        lambda a, r: f"It is {r['time']} in {a['timezone']}.",
    ),
    ToolKind(
        _fn("add", "Add two integers", {"a": {"type": "integer"}, "b": {"type": "integer"}}, ["a", "b"]),
        ("What is {x} plus {y}?", "Add {x} and {y}.", "What is the sum of {x} and {y}?", "Compute {x} + {y}.",
         "{x} + {y} = ?", "Can you add {x} to {y}?", "What do {x} and {y} add up to?"),
        ("How much do {x} and {y} make together?",),
        lambda rng, h: {"a": rng.randint(1, 999), "b": rng.randint(1, 999)},
        lambda a, rng: {"result": a["a"] + a["b"]},
        lambda a, r: f"{a['a']} plus {a['b']} is {r['result']}.",
    ),
    ToolKind(
        _fn("multiply", "Multiply two integers", {"a": {"type": "integer"}, "b": {"type": "integer"}}, ["a", "b"]),
        ("What is {x} times {y}?", "Multiply {x} by {y}.", "What is the product of {x} and {y}?",
         "Compute {x} * {y}.", "{x} x {y} = ?", "What is {x} multiplied with {y}?"),
        ("How much is {x} multiplied by {y}?",),
        lambda rng, h: {"a": rng.randint(2, 99), "b": rng.randint(2, 99)},
        lambda a, rng: {"result": a["a"] * a["b"]},
        lambda a, r: f"{a['a']} times {a['b']} is {r['result']}.",
    ),
    ToolKind(
        _fn("define_word", "Look up the meaning of an English word", {"word": {"type": "string"}}, ["word"]),
        ("What does the word {word} mean?", "Define {word}.", "What is the meaning of {word}?",
         "Look up the word {word}.", "What is the definition of {word}?", "I don't know the word {word}."),
        ("Explain the word {word} to me.",),
        lambda rng, h: {"word": _pick(rng, WORDS, h)},
        lambda a, rng: {"definition": "a word found in the dictionary"},
        lambda a, r: f"{a['word']}: {r['definition']}.",
    ),
    ToolKind(
        _fn("translate", "Translate a phrase into another language",
            {"text": {"type": "string"}, "language": {"type": "string", "enum": LANGUAGES}}, ["text", "language"]),
        ("Translate \"{phrase}\" into {lang}.", "How do you say \"{phrase}\" in {lang}?",
         "What is \"{phrase}\" in {lang}?", "Please translate \"{phrase}\" to {lang}.",
         "\"{phrase}\" in {lang}?"),
        ("Say \"{phrase}\" in {lang}, please.",),
        lambda rng, h: {"text": _pick(rng, PHRASES, h), "language": rng.choice(LANGUAGES)},
        lambda a, rng: {"translation": "..."},
        lambda a, r: f"In {a['language']}, \"{a['text']}\" is: {r['translation']}",
    ),
    ToolKind(
        _fn("get_stock_price", "Get the latest price of a stock", {"symbol": {"type": "string"}}, ["symbol"]),
        ("What is the stock price of {symbol}?", "How much is {symbol} trading at?", "Price of {symbol} shares?",
         "How is {symbol} stock doing?", "What does one share of {symbol} cost?"),
        ("Quote me {symbol}.",),
        lambda rng, h: {"symbol": _pick(rng, SYMBOLS, h)},
        lambda a, rng: {"price": rng.randint(10, 900)},
        lambda a, r: f"{a['symbol']} trades at {r['price']} dollars.",
    ),
    ToolKind(
        _fn("find_recipe", "Find a recipe with an ingredient", {"ingredient": {"type": "string"}}, ["ingredient"]),
        ("Find me a recipe with {ingredient}.", "What can I cook with {ingredient}?",
         "Give me a {ingredient} recipe.", "What should I make for dinner with {ingredient}?",
         "A recipe using {ingredient}, please."),
        ("I have some {ingredient}. Any dish ideas?",),
        lambda rng, h: {"ingredient": _pick(rng, INGREDIENTS, h)},
        lambda a, rng: {"recipe": f"{a['ingredient']} soup"},
        lambda a, r: f"Try a {r['recipe']}.",
    ),
    ToolKind(
        _fn("get_population", "Get the population of a country", {"country": {"type": "string"}}, ["country"]),
        ("What is the population of {country}?", "How many people live in {country}?",
         "Population of {country}?", "How big is the population of {country}?",
         "How many inhabitants does {country} have?"),
        ("How populous is {country}?",),
        lambda rng, h: {"country": _pick(rng, COUNTRIES, h)},
        lambda a, rng: {"population": rng.randint(1, 300) * 1_000_000},
        lambda a, r: f"About {r['population']} people live in {a['country']}.",
    ),
    ToolKind(
        _fn("set_timer", "Start a timer for a number of minutes", {"minutes": {"type": "integer"}}, ["minutes"]),
        ("Set a timer for {n} minutes.", "Start a {n} minute timer.", "Remind me in {n} minutes.",
         "Timer: {n} minutes.", "Wake me up in {n} minutes."),
        ("Count down {n} minutes for me.",),
        lambda rng, h: {"minutes": rng.randint(1, 90)},
        lambda a, rng: {"ok": True},
        lambda a, r: f"Your timer for {a['minutes']} minutes is running.",
    ),
)
TOOLS_BY_NAME = {k.name: k for k in TOOL_KINDS}

NO_TOOL_ASKS = (
    ("Hello!", "Hello! How can I help you today?"),
    ("Thanks!", "You are welcome!"),
    ("Who are you?", "I am a tiny assistant. I can call the tools I am given."),
    ("What is Python?", "Python is a high-level, general-purpose programming language."),
    ("Goodbye", "Goodbye!"),
)


def _ask(kind: ToolKind, args: dict[str, Any], rng: random.Random, held_out: bool) -> str:
    template = rng.choice(kind.held_out_asks if held_out else kind.asks)
    values = {"city": args.get("city"), "zone": args.get("timezone"), "x": args.get("a"), "y": args.get("b"),
              "word": args.get("word"), "phrase": args.get("text"), "lang": args.get("language"),
              "symbol": args.get("symbol"), "ingredient": args.get("ingredient"), "country": args.get("country"),
              "n": args.get("minutes")}
    return template.format(**values)


def _tool_set(kind: ToolKind, rng: random.Random) -> list[dict[str, Any]]:
    others = rng.sample([k for k in TOOL_KINDS if k is not kind], rng.randint(0, 2))
    chosen = [kind, *others]
    rng.shuffle(chosen)
    return [k.spec for k in chosen]


def tool_conversations(seed: int, count: int) -> list[Conversation]:
    """Tool calls and their follow-up answers; a few turns where the tools are not needed."""
    rng = random.Random(f"tools-{seed}")
    out: list[Conversation] = []
    for i in range(count):
        if i % 8 == 7:
            ask, reply = rng.choice(NO_TOOL_ASKS)
            tools = [k.spec for k in rng.sample(TOOL_KINDS, rng.randint(1, 3))]
            out.append([{"role": "system", "content": tools_system(tools)}, {"role": "user", "content": ask},
                        {"role": "assistant", "content": reply}])
            continue
        kind = TOOL_KINDS[i % len(TOOL_KINDS)]
        args = kind.arguments(rng, False)
        result = kind.result(args, rng)
        convo: Conversation = [
            {"role": "system", "content": tools_system(_tool_set(kind, rng))},
            {"role": "user", "content": _ask(kind, args, rng, False)},
            {"role": "assistant", "content": tool_call_text(kind.name, args)},
        ]
        if rng.random() < 0.6:
            convo += [{"role": "user", "content": tool_response_text(json.dumps(result))},
                      {"role": "assistant", "content": kind.answer(args, result)}]
        out.append(convo)
    return out


def held_out_cases(count: int, new_phrasings: bool = True,
                   seed: int = 99) -> list[tuple[list[dict[str, Any]], str, str]]:
    """(tools, user question, the right tool's name) with 2 or 3 tools offered: values never
    trained on, and (``new_phrasings``) questions worded as no training question is."""
    rng = random.Random(f"held-out-{seed}-{new_phrasings}")
    cases = []
    for i in range(count):
        kind = TOOL_KINDS[i % len(TOOL_KINDS)]
        args = kind.arguments(rng, True)
        tools = _tool_set(kind, rng)
        if len(tools) == 1:
            tools.append(rng.choice([k for k in TOOL_KINDS if k is not kind]).spec)
        question = _ask(kind, args, rng, True) if new_phrasings else _ask(kind, args, rng, False)
        cases.append((tools, question, kind.name))
    return cases


# ---- answering in JSON -----------------------------------------------------------------------

JSON_ASKS = (
    "{q} Answer in JSON.",
    "{q} Reply with a JSON object.",
    "{q} Respond only with JSON.",
)


def json_conversations(items: Sequence[Any], seed: int, count: int) -> list[Conversation]:
    """Questions about documented objects answered as a JSON object ``{"name", "kind", "summary"}``."""
    rng = random.Random(f"json-{seed}")
    out: list[Conversation] = []
    for item in rng.sample(list(items), min(count, len(items))):
        summary = item.answer.split(". ")[0].rstrip(".")[:160]
        name = f"{item.module}.{item.qualname}" if item.qualname else item.module
        body = {"name": name, "kind": item.kind, "summary": summary}
        question = rng.choice(JSON_ASKS).format(q=f"What is {name}?")
        out.append([{"role": "user", "content": question},
                    {"role": "assistant", "content": json.dumps(body, ensure_ascii=False)}])
    return out
