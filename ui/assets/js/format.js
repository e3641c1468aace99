// Pure formatting helpers: no DOM, no fetch.

const escapes = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** esc escapes text for HTML content and attribute values. */
export function esc(s) {
  return String(s ?? '').replace(/[&<>"']/g, (c) => escapes[c]);
}

/** Raw marks a string as already-safe HTML. */
export class Raw {
  constructor(s) { this.s = s; }
  toString() { return this.s; }
}

export const raw = (s) => new Raw(s);

function part(v) {
  if (v == null || v === false) return '';
  if (v instanceof Raw) return v.s;
  if (Array.isArray(v)) return v.map(part).join('');
  return esc(v);
}

/** html is a tagged template that escapes every interpolated value except Raw ones (and arrays of them). */
export function html(strings, ...vals) {
  let out = strings[0];
  for (let i = 0; i < vals.length; i++) out += part(vals[i]) + strings[i + 1];
  return new Raw(out);
}

export const shortId = (id) => (id ? String(id).slice(0, 8) : '');

export function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function pct(part, total) {
  if (!total) return '—';
  return `${Math.round((100 * part) / total)}%`;
}

/** toMillis accepts unix nanoseconds (number) or an RFC 3339 string; 0 and Go's zero time give null. */
export function toMillis(t) {
  if (t == null || t === 0 || t === '') return null;
  if (typeof t === 'number') return t / 1e6;
  const ms = Date.parse(t);
  if (Number.isNaN(ms) || ms <= 0) return null;
  return ms;
}

function pad(n) { return String(n).padStart(2, '0'); }

/** dateTime formats a time as "2024-05-01 13:04:05" in local time, or "—". */
export function dateTime(t) {
  const ms = toMillis(t);
  if (ms == null) return '—';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** ago formats a time relative to now: "12s ago", "3m ago", "2h ago", "4d ago". */
export function ago(t, now = Date.now()) {
  const ms = toMillis(t);
  if (ms == null) return '—';
  return `${duration(Math.max(0, now - ms))} ago`;
}

/** duration formats milliseconds coarsely: "850ms", "12s", "3m4s", "2h5m", "4d3h". */
export function duration(ms) {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  let s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  let m = Math.floor(s / 60); s %= 60;
  if (m < 60) return s ? `${m}m${s}s` : `${m}m`;
  let h = Math.floor(m / 60); m %= 60;
  if (h < 24) return m ? `${h}h${m}m` : `${h}h`;
  const d = Math.floor(h / 24); h %= 24;
  return h ? `${d}d${h}h` : `${d}d`;
}

/** statusClass maps a job, alloc, node, eval or task status to a badge class. */
export function statusClass(s) {
  switch (s) {
    case 'running': case 'ready': case 'complete': case 'alive': case 'eligible': case 'healthy':
      return 'ok';
    case 'pending': case 'blocked': case 'initializing': case 'starting': case 'queued': case 'draining':
      return 'warn';
    case 'failed': case 'lost': case 'down': case 'dead-failed': case 'unhealthy': case 'left': case 'failed-eval':
      return 'bad';
    default:
      return '';
  }
}

/** badge renders a status badge. */
export function badge(s, cls = statusClass(s)) {
  return html`<span class="badge ${cls}">${s || '—'}</span>`;
}

/** isGPURequest reports whether a device request name ("gpu", "nvidia/gpu", "nvidia/gpu/H100") asks for GPUs. */
export function isGPURequest(name) {
  const parts = String(name || '').split('/');
  return (parts.length === 1 ? parts[0] : parts[1]) === 'gpu';
}

/** groupGPUs is the GPUs one allocation of a task group asks for. */
export function groupGPUs(tg) {
  let n = 0;
  for (const t of tg?.Tasks || []) {
    for (const d of t.Resources?.Devices || []) {
      if (isGPURequest(d.Name)) n += d.Count || 0;
    }
  }
  return n;
}

/** jobGPUs sums, over task groups, the group's GPUs times its count. */
export function jobGPUs(job) {
  let n = 0;
  for (const tg of job?.TaskGroups || []) n += groupGPUs(tg) * (tg.Count ?? 1);
  return n;
}

function sortedKeys(m) { return Object.keys(m || {}).sort(); }

/**
 * metricReasons explains an AllocMetric the way the CLI does
 * ("Constraint `X` filtered N nodes", "Resources exhausted on N nodes: <dim>").
 */
export function metricReasons(m) {
  m = m || {};
  const out = [];
  if (!m.NodesEvaluated && !m.NodesFiltered && !m.NodesExhausted && !m.Gang && !m.Queue) out.push('No nodes were eligible for evaluation');
  for (const dc of sortedKeys(m.NodesAvailable)) {
    if (m.NodesAvailable[dc] === 0) out.push(`No nodes are available in datacenter "${dc}"`);
  }
  for (const c of sortedKeys(m.ClassFiltered)) out.push(`Class "${c}" filtered ${plural(m.ClassFiltered[c], 'node')}`);
  for (const c of sortedKeys(m.ConstraintFiltered)) out.push(`Constraint \`${c}\` filtered ${plural(m.ConstraintFiltered[c], 'node')}`);
  let counted = 0;
  for (const d of sortedKeys(m.DimensionExhausted)) {
    const n = m.DimensionExhausted[d];
    counted += n;
    out.push(`Resources exhausted on ${plural(n, 'node')}: ${d}`);
  }
  const rest = (m.NodesExhausted || 0) - counted;
  if (rest > 0) out.push(`Resources exhausted on ${plural(rest, 'node')}`);
  for (const c of sortedKeys(m.ClassExhausted)) out.push(`Class "${c}" exhausted on ${plural(m.ClassExhausted[c], 'node')}`);
  for (const q of m.QuotaExhausted || []) out.push(`Quota limit hit: ${q}`);
  if (m.Queue) out.push(`Waiting in its queue: ${m.Queue}`);
  if (m.Gang) out.push(`Waiting as a gang: ${m.Gang}`);
  return out;
}

/** gpuWait tells whether GPUs are busy (will free up) or short (no node has enough), as the CLI does. */
export function gpuWait(failed) {
  let busy = false, short = false;
  const gpuish = (s) => /gpu|device/i.test(s);
  for (const m of Object.values(failed || {})) {
    for (const d of Object.keys(m?.DimensionExhausted || {})) {
      if (!gpuish(d)) continue;
      if (d.includes('node has')) short = true; else busy = true;
    }
    for (const c of Object.keys(m?.ConstraintFiltered || {})) if (gpuish(c)) short = true;
  }
  return { busy, short };
}

// naturalKey makes plain string order natural and case-insensitive:
// digit runs are padded so that "node-9" sorts before "node-10".
const naturalKey = (s) => String(s ?? '').toLowerCase().replace(/\d+/g, (d) => (d.length >= 16 ? d : d.padStart(16, '0')));

/**
 * sortBy returns items sorted by key(item): numbers numerically, strings
 * naturally. Keys are computed once per item, so 50,000 rows sort fast.
 */
export function sortBy(items, key, desc = false) {
  const keyed = items.map((it) => {
    const k = key(it);
    return { k: typeof k === 'number' ? k : naturalKey(k), it };
  });
  const sign = desc ? -1 : 1;
  keyed.sort((a, b) => {
    const x = a.k, y = b.k;
    if (typeof x === 'number' && typeof y === 'number') return sign * (x - y);
    if (typeof x === 'number') return -sign;
    if (typeof y === 'number') return sign;
    return x < y ? -sign : x > y ? sign : 0;
  });
  return keyed.map((e) => e.it);
}

/** attrText renders Nomad's {Int, Float, String, Bool, Unit} (sizes in MiB). */
export const attrText = (v) => v?.Unit === 'MiB' && v.Int >= 1024 ? `${Math.round(v.Int / 10.24) / 100} GiB`
  : v && typeof v === 'object' ? `${v.String ?? v.Bool ?? v.Int ?? v.Float}${v.Unit ? ' ' + v.Unit : ''}` : v;
export const attrStrings = (m) => Object.fromEntries(Object.entries(m || {}).map(([k, v]) => [k, attrText(v)]));
