"""Servers that misbehave, in Chromium: the hostile server's every misbehavior through the page's
faces (chat streamed and not, text completions, embeddings, the CSI, Spin, a skill's CSI) from the
worker's fetch.
Each request ends in one result or one typed error naming the server within its deadline, no
connection is left open, and the local model answers between the groups."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.browser import EnginePage, tracked_context
from tests.support.hostile_matrix import (
    DEADLINE_S,
    TIMEOUT_S,
    Outcome,
    counts,
    groups,
    model_id,
    problems,
)
from tests.support.hostile_server import HostileProcess, running_hostile_server

pytestmark = pytest.mark.browser

ASK_SKILL = '''
from pydantic import BaseModel

from pharia_skill import ChatParams, Csi, Message, skill


class Input(BaseModel):
    model: str


class Output(BaseModel):
    text: str


@skill
def ask_server(csi: Csi, input: Input) -> Output:
    reply = csi.chat(input.model, [Message.user("What is the capital of France?")], ChatParams(max_tokens=8))
    return Output(text=reply.message.content)
'''

MATRIX = r"""async ([groups, server, faceNames, skill]) => {
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const ask = [{role: 'user', content: 'What is the capital of France?'}];
  const chatText = (c) => c.choices[0]?.delta?.content ?? '';
  const faces = {
    chat: async (m) => (await engine.chat.completions.create({model: m, messages: ask, max_tokens: 8}))
      .choices[0].message.content,
    chat_stream: async (m) => {
      let text = '';
      for await (const c of await engine.chat.completions.create({model: m, messages: ask, max_tokens: 8,
                                                                  stream: true})) text += chatText(c);
      return text;
    },
    completions_stream: async (m) => {
      let text = '';
      for await (const c of await engine.completions.create({model: m, prompt: 'Paris is', max_tokens: 8,
                                                             stream: true})) text += c.choices[0]?.text ?? '';
      return text;
    },
    embeddings: async (m) => { await engine.embeddings.create({model: m, input: ['Paris', 'Rome']}); return null; },
    csi_chat: async (m) => (await engine.csi.chat([{model: m, messages: ask, params: {max_tokens: 8}}]))[0]
      .message.content,
    spin_infer: async (m) => (await engine.llm.infer(m, 'Paris is', {max_tokens: 8})).text,
    skill_chat: async (m) => (await engine.skills.run('ask_server', {model: m})).text,
  };
  const worker = new Worker('/worker/worker.js', {type: 'module'});
  const all = groups.flat();
  const remotes = [{baseURL: server.base, timeoutMs: server.timeout * 1000, deadlineMs: server.deadline * 1000,
                    models: all.map((b) => ({id: server.ids[b], serverModel: b}))}];
  const engine = await CreateWebWorkerEngine(worker, ['tiny-chat'], {remotes});
  await engine.skills.register({name: 'ask_server', source: skill});
  const outcomes = [], local = [];
  const cell = async (behavior, face) => {
    const began = performance.now();
    let timer;
    const hang = new Promise((resolve) => { timer = setTimeout(() => resolve('hang'), 30000); });
    try {
      const text = await Promise.race([faces[face](server.ids[behavior]), hang]);
      if (text === 'hang') return {behavior, face, kind: 'hang', message: '', seconds: 30};
      return {behavior, face, kind: 'result', message: '', text, seconds: (performance.now() - began) / 1000};
    } catch (e) {
      // a skill's failure is a SkillError naming what the skill raised (here: the CSI's error)
      const raised = e?.name === 'SkillError' ? /raised (\w+): /.exec(String(e?.message))?.[1] : undefined;
      return {behavior, face, kind: raised ?? String(e?.name), message: String(e?.message),
              seconds: (performance.now() - began) / 1000};
    } finally { clearTimeout(timer); }
  };
  for (const group of groups) {
    await engine.reload([...group.map((b) => server.ids[b]), 'tiny-chat']);
    // Chromium opens at most 6 connections to one server: 5 cells at a time, so none waits for a socket
    const queue = group.flatMap((b) => faceNames.map((f) => [b, f]));
    await Promise.all(Array.from({length: 5}, async () => {
      while (queue.length) { const [b, f] = queue.shift(); outcomes.push(await cell(b, f)); }
    }));
    const reply = await engine.chat.completions.create({model: 'tiny-chat', messages: ask, max_tokens: 4});
    local.push(reply.choices[0].finish_reason);
  }
  return {outcomes, local};
}"""

FACES = ["chat", "chat_stream", "completions_stream", "embeddings", "csi_chat", "spin_infer", "skill_chat"]


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileProcess]:
    with running_hostile_server() as server:
        yield server


def test_every_misbehavior_through_the_pages_faces_ends_in_one_result_or_one_typed_error(browser, site_url, hostile):
    context, seen = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(600_000)
    page.goto(site_url + "web/engine.js")
    names = groups()
    server = {"base": hostile.base(), "timeout": TIMEOUT_S, "deadline": DEADLINE_S,
              "ids": {b: model_id(b) for g in names for b in g}}
    out = page.evaluate(MATRIX, [names, server, FACES, ASK_SKILL])
    outcomes = [Outcome(**o) for o in out["outcomes"]]
    figures = counts(outcomes)
    print("hostile matrix (Chromium):", figures)
    assert problems(outcomes, hostile.base()) == []
    assert figures["hangs"] == 0 and figures["requests"] == sum(len(g) for g in names) * len(FACES)
    assert hostile.settled() == 0, "a connection to the server was left open"
    assert out["local"] == ["length"] * len(names)
    assert EnginePage(page, seen).foreign_requests() == []
    context.close()
