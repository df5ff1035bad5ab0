// A query editor: CodeMirror, loaded in its own chunk on first use.
//
// CodeMirror is the largest chunk (154 kB gzipped); it is loaded when the
// user reaches for the editor (pointer or focus), or when the browser is
// idle after the page's first graph, so that graph does not wait behind
// its parsing. Until then
// the query shows as plain text.
//
// The editor owns its DOM: the component renders its host element once and
// never again (shouldComponentUpdate), so Preact never diffs CodeMirror's
// nodes. A new value prop that is not the echo of the user's own typing
// (a URL change) is written into the editor.
import { Component } from 'preact';
import { html } from '../html.js';
import { promBase } from '../lib/api.js';

// EDITOR_DELAY_MS bounds how long the editor waits for the first graph.
const EDITOR_DELAY_MS = 1500;

let cm = null;
const loadCM = () => (cm ||= import('../editor/cm.js'));

export class Editor extends Component {
  constructor(props) {
    super(props);
    this.host = null;
    this.ed = null;
    // emitted is the text the editor last reported.
    this.emitted = props.value || '';
  }

  componentDidMount() {
    this.live = true;
    const start = () => {
      if (this.started) return;
      this.started = true;
      this.mount();
    };
    this.host.addEventListener('pointerdown', start, { once: true });
    this.host.addEventListener('focusin', start, { once: true });
    // Otherwise after the page's first graph (or EDITOR_DELAY_MS), when idle.
    const idle = () => (typeof requestIdleCallback === 'function' ? requestIdleCallback(start, { timeout: 1000 }) : setTimeout(start, 50));
    addEventListener('weft:drawn', idle, { once: true });
    this.timer = setTimeout(idle, EDITOR_DELAY_MS);
  }

  mount() {
    loadCM().then((m) => {
      if (!this.live) return;
      const focus = this.host.contains(document.activeElement);
      this.host.textContent = '';
      const p = this.props;
      this.ed = m.createEditor(this.host, {
        lang: p.lang,
        value: p.value,
        placeholder: p.placeholder,
        promBase: promBase(),
        onChange: (v) => {
          this.emitted = v;
          if (this.props.onChange) this.props.onChange(v);
        },
        onRun: (v) => this.props.onRun && this.props.onRun(v),
      });
      if ((this.props.value || '') !== this.emitted) this.apply(this.props.value);
      if (focus) this.ed.view.focus();
    });
  }

  shouldComponentUpdate(next) {
    const v = next.value || '';
    if (v !== this.emitted) this.apply(v);
    return false;
  }

  apply(v) {
    this.emitted = v || '';
    if (this.ed) this.ed.setValue(this.emitted);
    else if (this.host && this.host.firstChild) this.host.firstChild.textContent = this.emitted || this.props.placeholder || '';
  }

  componentWillUnmount() {
    this.live = false;
    clearTimeout(this.timer);
    if (this.ed) this.ed.destroy();
    this.ed = null;
  }

  render({ testid, value, placeholder }) {
    return html`<div class="editor" ref=${(el) => (this.host = el)} data-testid=${testid || 'editor'}>
      <div class=${'editor-text' + (value ? '' : ' muted')} tabindex="0">${value || placeholder || ''}</div>
    </div>`;
  }
}
