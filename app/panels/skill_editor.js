// The skill studio's code editor: CodeMirror 6 with Python, colours from the page's theme
// variables (light and dark), Ctrl+Enter / Ctrl+S handed to the studio, and errors marked on
// their line as lint diagnostics.

import { EditorView, basicSetup } from "codemirror";
import { indentWithTab } from "@codemirror/commands";
import { python } from "@codemirror/lang-python";
import { syntaxHighlighting } from "@codemirror/language";
import { lintGutter, setDiagnostics } from "@codemirror/lint";
import { Prec } from "@codemirror/state";
import { keymap } from "@codemirror/view";
import { classHighlighter } from "@lezer/highlight";

/**
 * @typedef {object} EditorKeys
 * @property {() => void} run Ctrl+Enter (Cmd+Enter)
 * @property {() => void} register Ctrl+S (Cmd+S)
 */

/** The editor's chrome in the page's colours; token colours are classes styled in skills.css. */
const theme = EditorView.theme({
  "&": { backgroundColor: "var(--bg)", color: "var(--fg)", border: "1px solid var(--border)", borderRadius: ".35rem" },
  "&.cm-focused": { outline: "2px solid var(--focus)", outlineOffset: "1px" },
  ".cm-content": { caretColor: "var(--fg)", fontFamily: "ui-monospace, SFMono-Regular, Menlo, monospace" },
  ".cm-cursor, .cm-dropCursor": { borderLeftColor: "var(--fg)" },
  ".cm-gutters": { backgroundColor: "var(--surface)", color: "var(--muted)", borderRight: "1px solid var(--border)" },
  ".cm-activeLine": { backgroundColor: "color-mix(in srgb, var(--accent) 7%, transparent)" },
  ".cm-activeLineGutter": { backgroundColor: "color-mix(in srgb, var(--accent) 14%, transparent)", color: "var(--fg)" },
  "&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground":
    { backgroundColor: "color-mix(in srgb, var(--accent) 30%, transparent)" },
  ".cm-tooltip": { backgroundColor: "var(--surface)", color: "var(--fg)", border: "1px solid var(--border)" },
  ".cm-diagnostic-error": { borderLeftColor: "var(--danger)" },
  ".cm-panels": { backgroundColor: "var(--surface)", color: "var(--fg)" },
  ".cm-matchingBracket": { backgroundColor: "color-mix(in srgb, var(--ok) 25%, transparent)" },
  ".cm-searchMatch": { backgroundColor: "color-mix(in srgb, var(--accent) 25%, transparent)" },
});

/**
 * A Python editor in `parent`.
 * @param {HTMLElement} parent @param {string} source the first text @param {EditorKeys} keys
 */
export function createSkillEditor(parent, source, keys) {
  /** @param {() => void} f */
  const handled = (f) => () => { f(); return true; };
  const view = new EditorView({
    doc: source,
    parent,
    extensions: [
      Prec.highest(keymap.of([
        { key: "Mod-Enter", run: handled(keys.run) },
        { key: "Mod-s", run: handled(keys.register), preventDefault: true },
      ])),
      basicSetup,
      keymap.of([indentWithTab]),
      python(),
      syntaxHighlighting(classHighlighter),
      lintGutter(),
      theme,
      EditorView.lineWrapping, // long lines stay readable on a phone
      // tabindex: contenteditable is in the tab order already; said out loud, checkers see it too
      EditorView.contentAttributes.of({ "aria-label": "Skill source (Python)", tabindex: "0" }),
    ],
  });

  return {
    view,
    /** The source text. */
    source: () => view.state.doc.toString(),
    /** Replace the whole text (an example, a reset). @param {string} text */
    setSource(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
      view.dispatch(setDiagnostics(view.state, []));
    },
    /**
     * Mark one line (1-based; clamped to the text) with an error message; `null` clears the marks.
     * @param {{line: number, message: string}|null} mark
     */
    mark(mark) {
      if (!mark) {
        view.dispatch(setDiagnostics(view.state, []));
        return;
      }
      const doc = view.state.doc;
      const line = doc.line(Math.min(Math.max(1, mark.line), doc.lines));
      // a blank line has no text to underline: the mark covers its line break, or the line before's
      const from = line.length ? line.from : Math.max(0, line.from - 1);
      const to = line.length ? line.to : Math.min(doc.length, line.to + 1);
      view.dispatch(setDiagnostics(view.state, [{ from, to, severity: "error", message: mark.message }]));
      view.dispatch({ effects: EditorView.scrollIntoView(line.from, { y: "center" }) });
    },
    focus: () => view.focus(),
  };
}

/** @typedef {ReturnType<typeof createSkillEditor>} SkillEditor */
