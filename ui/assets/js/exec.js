// ExecPanel runs a command in a task of the allocation, on whichever node
// it is, in a terminal (xterm.js, vendored, loaded on first use) over the
// agent's exec websocket (Nomad's message shape): keystrokes go as stdin,
// the terminal's size as tty_size, and stdout/stderr come back.
import { showError } from './dom.js';
import { token } from './api.js';

const COLS = 100;
const ROWS = 26;

let xterm = null; // the vendored module, once loaded

function loadTerminal() {
  if (!xterm) {
    const css = document.createElement('link');
    css.rel = 'stylesheet';
    css.href = 'vendor/xterm.css';
    document.head.append(css);
    xterm = import('../vendor/xterm.js');
  }
  return xterm;
}

const b64encode = (bytes) => {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
};
const b64decode = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

/** parseCommand reads a JSON array (["sh", "-c", "echo hi"]) or words split on spaces. */
export function parseCommand(text) {
  const t = text.trim();
  if (t.startsWith('[')) {
    const v = JSON.parse(t);
    if (!Array.isArray(v) || !v.length || v.some((x) => typeof x !== 'string')) throw new Error('the command must be a JSON array of strings');
    return v;
  }
  const words = t.split(/\s+/).filter(Boolean);
  if (!words.length) throw new Error('type a command, such as /bin/sh');
  return words;
}

export class ExecPanel {
  /** root holds the panel; allocID() and tasks() read the live allocation. */
  constructor({ root, signal, allocID, tasks }) {
    Object.assign(this, { root, allocID, tasks });
    this.ws = null;
    this.term = null;
    root.querySelector('[data-testid="exec-run"]').addEventListener('click', () => this.start(), { signal });
    root.querySelector('[data-testid="exec-stop"]').addEventListener('click', () => this.stop('closed'), { signal });
    signal.addEventListener('abort', () => this.stop(''), { once: true });
  }

  status(text) { this.root.querySelector('[data-testid="exec-status"]').textContent = text; }

  async start() {
    const errSlot = this.root.querySelector('.exec-err');
    showError(errSlot, null);
    this.stop('');
    let command;
    try {
      command = parseCommand(this.root.querySelector('[data-testid="exec-command"]').value);
    } catch (err) {
      showError(errSlot, err);
      return;
    }
    const task = this.root.querySelector('[data-testid="exec-task"]').value || this.tasks()[0] || '';
    const { Terminal } = await loadTerminal();
    const box = this.root.querySelector('[data-testid="exec-term"]');
    box.textContent = '';
    const term = new Terminal({ cols: COLS, rows: ROWS, cursorBlink: true, rendererType: 'dom' });
    term.open(box);
    term.focus();
    this.term = term;
    // The token goes in the first message (a websocket takes no headers).
    const q = new URLSearchParams({ task, tty: 'true', command: JSON.stringify(command), ws_handshake: 'true' });
    const proto = location.protocol === 'https:' ? 'wss' : 'ws';
    const ws = new WebSocket(`${proto}://${location.host}/v1/client/allocation/${encodeURIComponent(this.allocID())}/exec?${q}`);
    this.ws = ws;
    const decoder = new TextDecoder();
    const encoder = new TextEncoder();
    this.status('connecting…');
    ws.onopen = () => {
      ws.send(JSON.stringify({ version: 1, auth_token: token() }));
      this.status(`running ${command.join(' ')}`);
      ws.send(JSON.stringify({ tty_size: { height: ROWS, width: COLS } }));
    };
    term.on('data', (d) => {
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ stdin: { data: b64encode(encoder.encode(d)) } }));
    });
    ws.onmessage = (ev) => {
      const m = JSON.parse(ev.data);
      const out = m.stdout || m.stderr;
      if (out?.data) term.write(decoder.decode(b64decode(out.data), { stream: true }));
      if (m.exited) this.status(`exited with code ${m.result?.exit_code ?? '?'}`);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (ev.code !== 1000 && ev.code !== 1005) this.status(`ended: ${ev.reason || `connection closed (${ev.code})`}`);
    };
  }

  stop(why) {
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      ws.close();
      if (why) this.status(why);
    }
  }
}
