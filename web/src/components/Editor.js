// A query editor: CodeMirror, loaded in its own chunk on first use.
import { useEffect, useRef } from 'preact/hooks';
import { html } from '../html.js';
import { promBase } from '../lib/api.js';

let cm = null;
const loadCM = () => (cm ||= import('../editor/cm.js'));

export function Editor({ lang, value, onChange, onRun, placeholder, testid }) {
  const el = useRef(null);
  const ed = useRef(null);
  const cbs = useRef({});
  cbs.current = { onChange, onRun };
  useEffect(() => {
    let live = true;
    loadCM().then((m) => {
      if (!live) return;
      ed.current = m.createEditor(el.current, {
        lang,
        value,
        placeholder,
        promBase: promBase(),
        onChange: (v) => cbs.current.onChange && cbs.current.onChange(v),
        onRun: (v) => cbs.current.onRun && cbs.current.onRun(v),
      });
    });
    return () => {
      live = false;
      if (ed.current) ed.current.destroy();
      ed.current = null;
    };
  }, [lang]);
  useEffect(() => {
    if (ed.current) ed.current.setValue(value || '');
  }, [value]);
  return html`<div class="editor" ref=${el} data-testid=${testid || 'editor'}></div>`;
}
