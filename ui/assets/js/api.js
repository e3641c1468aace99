// HTTP API access: requests with readable errors, and blocking-query
// watches (?index=N&wait=...) that follow X-Nomad-Index.

/** APIError is a failed API call: method, path, HTTP status and the body's text. */
export class APIError extends Error {
  constructor(method, path, status, statusText, body) {
    const head = status ? `${status} ${statusText || ''}`.trim() : statusText;
    super(`${method} ${path}: ${head}${body ? ` — ${body}` : ''}`);
    this.name = 'APIError';
    this.status = status;
    this.body = body;
  }
}

let region = '';

// The ACL token lives in session storage only: it leaves with the tab,
// and no other site can read it.
const TOKEN_KEY = 'drover.aclToken';

/** token returns the ACL token the UI sends ('' for none). */
export function token() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

/** setToken keeps t for this tab's requests; '' forgets it. */
export function setToken(t) {
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch { /* storage refused: requests go without a token */ }
}

/** setRegion makes every later request carry ?region= (empty for the agent's own). */
export function setRegion(r) { region = r || ''; }

export const isAbort = (err) => err?.name === 'AbortError';

function url(path, query) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  if (region && !q.has('region')) q.set('region', region);
  const s = q.toString();
  return s ? `${path}${path.includes('?') ? '&' : '?'}${s}` : path;
}

/**
 * request calls the API and returns {data, index, headers, readMs} (readMs:
 * time spent reading and decoding the body). as is 'json'
 * (default), 'text' or 'bytes' (an ArrayBuffer). Failures throw APIError;
 * an aborted request throws the AbortError unchanged.
 */
export async function request(method, path, { body, query, signal, as = 'json' } = {}) {
  const init = { method, signal, headers: {}, cache: 'no-store' };
  const t = token();
  if (t) init.headers['X-Nomad-Token'] = t;
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    init.headers['Content-Type'] = 'application/json';
  }
  let res;
  try {
    res = await fetch(url(path, query), init);
  } catch (err) {
    if (isAbort(err) || signal?.aborted) throw abortError();
    throw new APIError(method, path, 0, 'no answer from the agent', err?.message || '');
  }
  const index = Number(res.headers.get('X-Nomad-Index')) || 0;
  const t0 = performance.now();
  let data;
  try {
    if (!res.ok) {
      const text = (await res.text()).trim();
      throw new APIError(method, path, res.status, res.statusText, text);
    }
    if (as === 'bytes') data = await res.arrayBuffer();
    else if (as === 'text') data = await res.text();
    else {
      try {
        data = await res.json();
      } catch (err) {
        if (isAbort(err) || signal?.aborted) throw err;
        throw new APIError(method, path, res.status, 'answer is not JSON', err?.message || '');
      }
    }
  } catch (err) {
    if (isAbort(err) || signal?.aborted) throw abortError();
    throw err;
  }
  return { data, index, headers: res.headers, readMs: performance.now() - t0 };
}

function abortError() {
  return new DOMException('aborted', 'AbortError');
}

export const get = (path, opts) => request('GET', path, opts);

/** sleep resolves after ms, or at once when signal aborts. */
export function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** whenVisible resolves once the tab is visible (background tabs do not poll). */
function whenVisible(signal) {
  if (!document.hidden || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      if (document.hidden && !signal?.aborted) return;
      document.removeEventListener('visibilitychange', done);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    document.addEventListener('visibilitychange', done);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * watch reads path, calls onData(data, index), then long-polls with
 * ?index=<last X-Nomad-Index>&wait=<wait> and calls onData again whenever
 * the index moves. Endpoints without X-Nomad-Index are polled every
 * pollInterval. Errors go to onError and are retried with backoff; the
 * watch ends quietly when signal aborts. minInterval spaces requests out so
 * a busy cluster does not turn the page into a hot loop.
 */
export async function watch(path, { signal, query, onData, onError, wait = '30s', minInterval = 1000, pollInterval = 5000 }) {
  let index = 0;
  let backoff = 0;
  while (!signal.aborted) {
    try {
      const q = index ? { ...query, index, wait } : query;
      const res = await get(path, { query: q, signal });
      if (signal.aborted) return;
      const changed = !index || res.index !== index;
      // An index that goes backwards means a new leader or a restored
      // snapshot: start over from whatever it says now.
      index = res.index;
      backoff = 0;
      const t0 = performance.now();
      if (changed) onData(res.data, res.index);
      // A list that takes long to render waits longer before the next
      // update, so the page stays responsive on big clusters.
      const spent = performance.now() - t0 + res.readMs;
      await sleep(index ? Math.max(minInterval, 10 * spent) : pollInterval, signal);
    } catch (err) {
      if (signal.aborted || isAbort(err)) return;
      onError?.(err);
      backoff = Math.min(backoff ? backoff * 2 : 1000, 15000);
      index = 0;
      await sleep(backoff, signal);
    }
    await whenVisible(signal);
  }
}

/**
 * poll calls fn every interval ms until signal aborts; errors go to
 * onError. For endpoints without blocking queries.
 */
export async function poll(fn, { signal, interval = 5000, onError }) {
  while (!signal.aborted) {
    try {
      await fn();
    } catch (err) {
      if (signal.aborted || isAbort(err)) return;
      onError?.(err);
    }
    await sleep(interval, signal);
    await whenVisible(signal);
  }
}
