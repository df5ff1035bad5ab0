// CodeMirror 6 editors, in their own chunk (loaded when a page shows an
// editor). PromQL gets codemirror-promql (parser, linter, completion of
// metric names, label names and values from weft's Prometheus API); LogQL
// and TraceQL get small stream tokenizers for highlighting.
import { EditorView, keymap, placeholder as placeholderExt, drawSelection, highlightSpecialChars } from '@codemirror/view';
import { EditorState, Prec } from '@codemirror/state';
import { defaultKeymap, history, historyKeymap, insertNewlineAndIndent } from '@codemirror/commands';
import { autocompletion, completionKeymap, closeBrackets, closeBracketsKeymap, completionStatus } from '@codemirror/autocomplete';
import { syntaxHighlighting, bracketMatching, StreamLanguage, HighlightStyle } from '@codemirror/language';
import { lintKeymap } from '@codemirror/lint';
import { tags as t } from '@lezer/highlight';
import { PromQLExtension } from '@prometheus-io/codemirror-promql';
import { logqlTokenizer } from './logql.js';
import { traceqlTokenizer } from './traceql.js';
import { withTenant } from '../lib/tenant.js';

const style = HighlightStyle.define([
  { tag: [t.keyword, t.operatorKeyword, t.modifier], color: '#7a3e9d' },
  { tag: [t.function(t.variableName), t.function(t.name)], color: '#2b6cb0' },
  { tag: [t.string, t.special(t.string)], color: '#2f7d32' },
  { tag: [t.number, t.unit], color: '#b35c00' },
  { tag: [t.labelName, t.propertyName, t.attributeName], color: '#8a4b08' },
  { tag: [t.operator, t.compareOperator, t.arithmeticOperator, t.logicOperator], color: '#555' },
  { tag: t.comment, color: '#888', fontStyle: 'italic' },
  { tag: t.invalid, color: '#d00' },
]);

const theme = EditorView.theme({
  '&': { fontSize: '13px', border: '1px solid var(--border)', borderRadius: '4px', background: 'var(--bg)' },
  '&.cm-focused': { outline: '2px solid var(--accent-soft)' },
  '.cm-content': { fontFamily: 'var(--mono)', padding: '5px 0' },
  '.cm-scroller': { fontFamily: 'var(--mono)' },
});

const logql = StreamLanguage.define(logqlTokenizer);
const traceql = StreamLanguage.define(traceqlTokenizer);
const LANG_LABELS = { promql: 'PromQL query', logql: 'LogQL query', traceql: 'TraceQL query' };

// CodeMirror mounts its styles as <style> elements; weft's CSP admits them
// with the nonce index.html carries.
const nonceMeta = typeof document !== 'undefined' && document.querySelector('meta[name=csp-nonce]');
const cspNonce = EditorView.cspNonce.of(nonceMeta ? nonceMeta.content : '');

// createEditor mounts an editor in el. onRun is called with the text on
// Enter (Shift+Enter inserts a newline); onChange on every edit. It
// returns {view, setValue, destroy}.
export function createEditor(el, { lang, value, onChange, onRun, placeholder, promBase }) {
  const langExt = [];
  let promExt = null;
  if (lang === 'promql') {
    promExt = new PromQLExtension().activateCompletion(true).activateLinter(true).setComplete({
      remote: {
        url: promBase, httpMethod: 'GET', lookbackInterval: 12 * 3600 * 1000, httpErrorHandler: () => {},
        fetchFn: (input, init) => fetch(input, { ...init, headers: withTenant(init && init.headers) }),
      },
      maxMetricsMetadata: 10000,
    });
    langExt.push(promExt.asExtension());
  } else {
    langExt.push(lang === 'traceql' ? traceql : logql);
  }
  const run = (v) => {
    if (completionStatus(v.state) === 'active') return false; // Enter picks the completion
    onRun && onRun(v.state.doc.toString());
    return true;
  };
  const view = new EditorView({
    parent: el,
    state: EditorState.create({
      doc: value || '',
      extensions: [
        highlightSpecialChars(),
        history(),
        drawSelection(),
        bracketMatching(),
        closeBrackets(),
        autocompletion(),
        syntaxHighlighting(style),
        placeholderExt(placeholder || ''),
        EditorView.lineWrapping,
        theme,
        cspNonce,
        ...langExt,
        Prec.highest(keymap.of([
          { key: 'Enter', run },
          { key: 'Shift-Enter', run: insertNewlineAndIndent },
        ])),
        keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...completionKeymap, ...lintKeymap]),
        EditorView.updateListener.of((u) => {
          if (u.docChanged && onChange) onChange(u.state.doc.toString());
        }),
        EditorView.contentAttributes.of({ 'aria-label': LANG_LABELS[lang] || 'query', 'data-lang': lang }),
      ],
    }),
  });
  return {
    view,
    setValue(v) {
      if (v !== view.state.doc.toString()) view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: v } });
    },
    destroy() {
      view.destroy();
      if (promExt) promExt.destroy();
    },
  };
}
