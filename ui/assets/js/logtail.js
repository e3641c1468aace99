// LogTail shows the end of a task's log and follows it by polling with a
// byte offset (origin=start&offset=<bytes seen>) every second while the
// task lives. No streaming connection: a poll that fails is just retried.
import { get, isAbort, APIError } from './api.js';
import { showError } from './dom.js';
import { toMillis } from './format.js';

const TAIL = 50000; // bytes shown when the page opens
const MAX_CHARS = 1000000; // keep the page light on chatty tasks

export class LogTail {
  /**
   * pre shows the log; status takes a short state line; allocID() and
   * taskState(task) -> {state, terminal} read the live allocation.
   */
  constructor({ pre, status, errSlot, signal, allocID, taskState }) {
    Object.assign(this, { pre, status, errSlot, pageSignal: signal, allocID, taskState });
    this.task = '';
    this.stream = 'stdout';
    this.ctl = null;
    this.wake = null;
  }

  /** switchTo restarts the tail on another task and/or stream (null keeps the current one). */
  switchTo(task, stream) {
    if (task) this.task = task;
    if (stream) this.stream = stream;
    this.ctl?.abort();
    if (this.pageSignal.aborted) return;
    const ctl = new AbortController();
    this.pageSignal.addEventListener('abort', () => ctl.abort(), { once: true });
    this.ctl = ctl;
    this.pre.textContent = '';
    this.chars = 0;
    this.seen = -1;
    this.skipLine = false;
    this.decoder = new TextDecoder();
    showError(this.errSlot, null);
    this.run(ctl.signal);
  }

  /** poke wakes the poll early, e.g. when the task's state changed. */
  poke() { this.wake?.(); }

  say(s) { if (this.status.textContent !== s) this.status.textContent = s; }

  nap(ms, signal) {
    return new Promise((resolve) => {
      const done = () => { clearTimeout(t); this.wake = null; signal.removeEventListener('abort', done); resolve(); };
      const t = setTimeout(done, ms);
      this.wake = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }

  async run(signal) {
    let backoff = 0;
    while (!signal.aborted) {
      const { state, terminal } = this.taskState(this.task);
      const dead = terminal || state?.State === 'dead';
      const started = state && (state.State !== 'pending' || toMillis(state.StartedAt));
      if (!started && !dead) {
        this.say('waiting for the task to start…');
        await this.nap(1000, signal);
        continue;
      }
      try {
        if (this.seen < 0) await this.load(signal);
        else await this.more(signal);
        showError(this.errSlot, null);
        backoff = 0;
      } catch (err) {
        if (signal.aborted || isAbort(err)) return;
        if (err.status === 404) {
          this.say(dead ? 'no log was written' : 'no output yet');
          if (dead) return;
        } else {
          showError(this.errSlot, err);
        }
        backoff = Math.min(backoff ? backoff * 2 : 1000, 10000);
        await this.nap(backoff, signal);
        continue;
      }
      if (dead) {
        this.say(`task ${state?.Failed ? 'failed' : 'finished'}: end of log`);
        return;
      }
      this.say('following…');
      await this.nap(1000, signal);
    }
  }

  path() { return `/v1/client/fs/logs/${encodeURIComponent(this.allocID())}`; }

  query(origin, offset) {
    return { task: this.task, type: this.stream, plain: 'true', origin, offset };
  }

  async read(origin, offset, signal) {
    const { data } = await get(this.path(), { signal, as: 'bytes', query: this.query(origin, offset) });
    return data;
  }

  // load shows the last TAIL bytes and learns their absolute offset.
  async load(signal) {
    const tail = await this.read('end', TAIL, signal);
    if (tail.byteLength < TAIL) {
      this.seen = tail.byteLength;
      this.append(tail);
      return;
    }
    // The log is longer than the tail: find where it ends, so that
    // following can ask for bytes from an absolute offset.
    const lo = await this.endAbove(signal);
    const from = Math.max(0, lo + 1 - TAIL);
    const buf = await this.read('start', from, signal);
    this.seen = from + buf.byteLength;
    this.pre.textContent = '… earlier output not shown …\n';
    this.skipLine = from > 0; // the cut is mid-line: start at the next one
    this.append(buf);
  }

  async more(signal) {
    const buf = await this.read('start', this.seen, signal);
    this.seen += buf.byteLength;
    this.append(buf);
  }

  // endAbove returns an offset lo with lo < log size <= lo + TAIL, by
  // asking whether a read from an offset has any bytes (reading just the
  // first chunk of each answer).
  async endAbove(signal) {
    let lo = TAIL - 1, hi = TAIL * 2;
    while (hi < 2 ** 50 && await this.hasBytesAt(hi, signal)) {
      lo = hi;
      hi *= 2;
    }
    while (hi - lo > TAIL) {
      const mid = Math.floor((lo + hi) / 2);
      if (await this.hasBytesAt(mid, signal)) lo = mid;
      else hi = mid;
    }
    return lo;
  }

  async hasBytesAt(offset, signal) {
    const q = new URLSearchParams(this.query('start', offset));
    let res;
    try {
      res = await fetch(`${this.path()}?${q}`, { signal, cache: 'no-store' });
    } catch (err) {
      if (isAbort(err) || signal.aborted) throw err;
      throw new APIError('GET', this.path(), 0, 'no answer from the agent', err?.message || '');
    }
    if (!res.ok) throw new APIError('GET', this.path(), res.status, res.statusText, (await res.text()).trim());
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return false;
        if (value.byteLength) return true;
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  append(buf) {
    let text = this.decoder.decode(buf, { stream: true });
    if (this.skipLine) {
      const nl = text.indexOf('\n');
      this.skipLine = nl < 0;
      text = nl < 0 ? '' : text.slice(nl + 1);
    }
    if (!text) return;
    const pre = this.pre;
    const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 24;
    this.chars += text.length;
    if (this.chars > MAX_CHARS) {
      const keep = (pre.textContent + text).slice(-Math.floor(MAX_CHARS * 0.8));
      pre.textContent = keep;
      this.chars = keep.length;
    } else {
      pre.append(text);
    }
    if (atBottom) pre.scrollTop = pre.scrollHeight;
  }
}
