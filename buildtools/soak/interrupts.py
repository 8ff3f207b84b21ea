"""Mixed traffic with interrupts: skills with time limits (waiting on CSI calls, sleeping, spinning),
``interruptGenerate()`` at random times, calls with short ``timeoutMs``, chats, streams, CSI
batches, embeddings and index searches, three or four at a time. ``build.py soak`` runs it for a
third of its minutes; the suite runs it briefly. Every call must settle (no hang), none with an
untyped error or ``InternalError``; at the end nothing is pending and greedy answers are unchanged."""

from __future__ import annotations

WAITER = """from pydantic import BaseModel
from pharia_skill import skill, CompletionParams

class I(BaseModel):
    n: int = 20

class O(BaseModel):
    done: int

@skill
def waiter(csi, input: I) -> O:
    for i in range(input.n):
        # sampled: tiny-chat's own default is greedy, and its greedy reply to 'Module i' ends at once
        csi.complete('tiny-chat', f'Module {i}', CompletionParams(max_tokens=150, temperature=1.0))
    return O(done=input.n)
"""

SLEEPER = """import time
from pydantic import BaseModel
from pharia_skill import skill

class I(BaseModel):
    pass

class O(BaseModel):
    n: int

@skill
def sleeper(csi, input: I) -> O:
    while True:
        time.sleep(0.5)
"""

SPIN = """from pydantic import BaseModel
from pharia_skill import skill

class I(BaseModel):
    pass

class O(BaseModel):
    n: int

@skill
def spin(csi, input: I) -> O:
    while True:
        pass
"""

SKILLS = {"waiter": WAITER, "sleeper": SLEEPER, "spin": SPIN}

TRAFFIC = """
async ([minutes, skills]) => {
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const engine = await CreateWebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}),
                                             ['tiny-chat', 'all-minilm-l6-v2'], {device: 'wasm'});
  for (const [name, source] of Object.entries(skills)) await engine.skills.register({name, source});
  const ns = {namespace: 'soak-interrupts', collection: 'c'};
  await engine.index.createIndex({...ns, index: 'i', model: 'all-minilm-l6-v2', max_tokens: 64});
  await engine.index.put([0, 1, 2, 3, 4].map((i) => ({path: {...ns, name: `d${i}`},
    contents: [{text: `Document ${i} is about module number ${i} of the standard library.`}], metadata: null})));
  const greedy = async () => (await engine.completions.create(
    {prompt: 'The json module', max_tokens: 8, temperature: 0})).choices[0].text;
  const before = await greedy();
  const typed = new Set(['SkillError', 'TimeoutError', 'InvalidInputError', 'ContextWindowExceededError']);
  let seed = 7;
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const user = (t) => [{role: 'user', content: t}];
  const ops = {
    chat: () => engine.chat.completions.create({messages: user('What does json.dumps do?'), max_tokens: 24}),
    stream: async () => {
      const s = await engine.chat.completions.create({messages: user('Tell me about textwrap.'), stream: true,
                                                      max_tokens: 60});
      for await (const _ of s) {}
    },
    timed_out: () => engine.completions.create({prompt: 'The os module', max_tokens: 300, ignore_eos: true},
                                               {timeoutMs: 50 + rnd() * 500}),
    batch: () => engine.csi.complete([0, 1, 2, 3].map((i) => ({model: 'tiny-chat', prompt: `Module ${i}`,
                                                            params: {max_tokens: 40}}))),
    embeddings: () => engine.embeddings.create({input: ['soak test', 'more text'], model: 'all-minilm-l6-v2'}),
    search: () => engine.csi.search([{index_path: {...ns, index: 'i'}, query: 'module', max_results: 3}]),
    waiter: () => engine.skills.run('waiter', {n: 6}, {timeLimitMs: 200 + rnd() * 2500}),
    sleeper: () => engine.skills.run('sleeper', {}, {timeLimitMs: 200 + rnd() * 1200}),
    spin: () => engine.skills.run('spin', {}, {timeLimitMs: 100 + rnd() * 900}),
    summarize: () => engine.skills.run('summarize', {text: 'Soak tests run for a long time. '.repeat(20),
                                                     model: 'tiny-chat'}),
  };
  const names = Object.keys(ops);
  const outcomes = {};
  const bad = [];
  let hangs = 0, calls = 0, interrupts = 0;
  const inflight = new Set();
  const launch = () => {
    const name = names[Math.floor(rnd() * names.length)];
    calls++;
    const call = ops[name]().then(() => 'ok', (e) => {
      const n = e?.name ?? 'Error';
      if (!typed.has(n)) bad.push([name, n, String(e?.message ?? e).slice(0, 300)]);
      return n;
    });
    const hang = new Promise((r) => setTimeout(() => r('hang'), 90000));
    const done = Promise.race([call, hang]).then((r) => {
      if (r === 'hang') hangs++;
      outcomes[`${name}:${r}`] = (outcomes[`${name}:${r}`] ?? 0) + 1;
      inflight.delete(done);
    });
    inflight.add(done);
  };
  const t0 = performance.now();
  while (performance.now() - t0 < minutes * 60000) {
    while (inflight.size < 3 + (rnd() < 0.5 ? 1 : 0)) launch();
    await Promise.race([...inflight, new Promise((r) => setTimeout(r, 50 + rnd() * 500))]);
    if (rnd() < 0.15) {
      engine.interruptGenerate();
      interrupts++;
    }
  }
  await Promise.all([...inflight]);
  const after = await greedy();
  const pending = engine.pendingCount;
  engine.terminate();
  return {calls, interrupts, outcomes, bad: bad.slice(0, 20), bad_count: bad.length, hangs, before, after,
          pending_at_end: pending};
}
"""


def interrupt_traffic(page: object, minutes: float) -> dict[str, object]:
    """Run ``TRAFFIC`` in ``page`` (a Playwright page on the site) and return its report."""
    return page.evaluate(TRAFFIC, [minutes, SKILLS])  # type: ignore[attr-defined,no-any-return]


def healthy(report: dict[str, object]) -> bool:
    """Whether an interrupt run ended as it must."""
    return (not report["bad_count"] and not report["hangs"] and not report["pending_at_end"]
            and report["before"] == report["after"])
