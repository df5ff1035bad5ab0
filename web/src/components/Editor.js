// A query editor: CodeMirror, loaded in its own chunk on first use.
//
// The editor owns its DOM: the component renders its host element once and
// never again (shouldComponentUpdate), so Preact never diffs CodeMirror's
// nodes. A new value prop that is not the echo of the user's own typing
// (a URL change) is written into the editor.
import { Component } from 'preact';
import { html } from '../html.js';
import { promBase } from '../lib/api.js';

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
    loadCM().then((m) => {
      if (!this.live) return;
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
  }

  componentWillUnmount() {
    this.live = false;
    if (this.ed) this.ed.destroy();
    this.ed = null;
  }

  render({ testid }) {
    return html`<div class="editor" ref=${(el) => (this.host = el)} data-testid=${testid || 'editor'}></div>`;
  }
}
