// Overview: GPUs by model, allocation ratio, how busy allocated GPUs
// are, node heat map, pending jobs with reasons, leader and servers.
import { watch, get, poll, sleep, isAbort } from '../api.js';
import { html, pct, plural, sortBy } from '../format.js';
import { jobHref, nodeHref } from '../links.js';
import { latestFailure, whyHTML } from '../placement.js';
import { setHTML, showError, sectionHandlers } from '../dom.js';
import { Heatmap } from '../heatmap.js';
import { navigate } from '../router.js';
import { nodeHistoryPath } from '../history.js';

const MAX_PENDING = 10;
const MAX_USE_NODES = 25; // nodes asked for their GPUs' use each round

export default function overview(ctx) {
  const { main, signal } = ctx;
  main.innerHTML = String(html`
    <div class="page-head"><h1>Overview</h1><span class="muted small">live</span></div>
    <div id="gpu-err"></div>
    <div class="counters">
      <div class="counter"><div class="label">GPUs</div><div class="num" data-testid="gpu-total">—</div></div>
      <div class="counter"><div class="label">Allocated</div><div class="num" data-testid="gpu-allocated">—</div></div>
      <div class="counter ok"><div class="label">Free</div><div class="num" data-testid="gpu-free">—</div></div>
      <div class="counter"><div class="label">Unhealthy</div><div class="num" data-testid="gpu-unhealthy">—</div></div>
      <div class="counter"><div class="label">Allocation</div><div class="num" id="gpu-ratio">—</div><div class="bar"><span id="gpu-bar" style="width:0"></span></div></div>
      <div class="counter" id="use-counter"><div class="label">Used of allocated</div><div class="num" data-testid="gpu-used">—</div>
        <div class="bar"><span id="use-bar" style="width:0"></span></div><div class="muted small" data-testid="gpu-use-detail"></div></div>
    </div>
    <section class="panel"><h2>Nodes by GPU use <span class="muted small" id="heat-count"></span></h2>
      <div data-testid="heatmap" id="heatmap"></div>
      <div class="legend">
        <span><span class="swatch" style="background:var(--heat-lo)"></span>0% allocated</span>
        <span><span class="swatch" style="background:var(--heat-hi)"></span>100% allocated</span>
        <span><span class="swatch" style="background:var(--heat-none)"></span>no GPUs</span>
        <span><span class="swatch" style="background:transparent;border-color:var(--muted)"></span>not ready</span>
        <span><span class="swatch" style="background:var(--bad)"></span>corner: unhealthy GPU</span>
      </div>
    </section>
    <div class="grid2">
      <section class="panel"><h2>GPUs by model</h2><div id="models"></div></section>
      <section class="panel"><h2>Leader and servers</h2><div id="servers-err"></div><div id="servers"></div></section>
    </div>
    <section class="panel" style="margin-top:14px"><h2>Pending jobs</h2><div id="pending-err"></div><div id="pending"></div></section>`);

  const $ = (id) => main.querySelector(`#${id}`);
  const [gpusDone, jobsDone, serversDone] = ctx.gate(3);
  const heat = new Heatmap($('heatmap'), { signal, onPick: (n) => navigate(nodeHref(n.ID)) });

  const use = clusterUse(main, signal);
  watch('/v1/gpus', {
    signal,
    ...sectionHandlers($('gpu-err'), (g) => { renderGPUs(main, heat, g); use.update(g.Nodes || []); }, gpusDone),
  });

  const pending = pendingJobs($('pending'), $('pending-err'), signal);
  watch('/v1/jobs', {
    signal,
    query: { namespace: '*' },
    ...sectionHandlers($('pending-err'), (list) => pending.update(list || []), jobsDone),
  });

  poll(async () => {
    const [leader, peers] = await Promise.all([get('/v1/status/leader', { signal }), get('/v1/status/peers', { signal })]);
    renderServers($('servers'), leader.data, peers.data || []);
    showError($('servers-err'), null);
    serversDone();
  }, { signal, interval: 5000, onError: (err) => { showError($('servers-err'), err); serversDone(); } });
}

function renderGPUs(main, heat, g) {
  const set = (id, v) => {
    const el = main.querySelector(`[data-testid="${id}"]`);
    if (el.textContent !== String(v)) el.textContent = String(v);
  };
  set('gpu-total', g.Total ?? 0);
  set('gpu-allocated', g.Allocated ?? 0);
  set('gpu-free', g.Free ?? 0);
  set('gpu-unhealthy', g.Unhealthy ?? 0);
  main.querySelector('[data-testid="gpu-unhealthy"]').parentElement.classList.toggle('bad', g.Unhealthy > 0);
  main.querySelector('#gpu-ratio').textContent = pct(g.Allocated, g.Total);
  main.querySelector('#gpu-bar').style.width = g.Total ? `${(100 * g.Allocated) / g.Total}%` : '0';

  const models = sortBy(g.Models || [], (m) => m.Model);
  setHTML(main.querySelector('#models'), models.length ? html`<table>
    <thead><tr><th>Model</th><th>Memory</th><th class="num">Total</th><th class="num">Allocated</th><th class="num">Free</th><th class="num">Unhealthy</th><th>Use</th></tr></thead>
    <tbody>${models.map((m) => html`<tr>
      <td title="${m.Vendor}/${m.Type}">${m.Model}</td><td>${memory(m.MemoryBytes)}</td>
      <td class="num">${m.Total}</td><td class="num">${m.Allocated}</td><td class="num">${m.Free}</td>
      <td class="num">${m.Unhealthy ? html`<span class="badge bad">${m.Unhealthy}</span>` : '0'}</td>
      <td><div class="bar" title="${pct(m.Allocated, m.Total)}"><span style="width:${m.Total ? (100 * m.Allocated) / m.Total : 0}%"></span></div></td>
    </tr>`)}</tbody></table>` : html`<p class="muted">No GPUs in the cluster yet.</p>`);

  const nodes = sortBy(g.Nodes || [], (n) => `${n.Datacenter}\u0000${n.Name}`);
  main.querySelector('#heat-count').textContent = plural(nodes.length, 'node');
  heat.set(nodes);
}

// clusterUse polls the history of nodes with allocated GPUs (at most
// MAX_USE_NODES): how busy those GPUs are now, and how many are idle.
function clusterUse(main, signal) {
  let nodes = [];
  let started = false;
  const round = async () => {
    const held = nodes.filter((n) => n.Allocated > 0 && n.Status === 'ready');
    const asked = held.slice(0, MAX_USE_NODES);
    const answers = await Promise.all(asked.map((n) => get(nodeHistoryPath(n.ID), { signal, query: { window: '1m' } })
      .then((r) => r.data)
      .catch((err) => { if (isAbort(err)) throw err; return null; })));
    renderUse(main, answers.filter(Boolean), asked.length, held.length);
  };
  return {
    update(list) {
      nodes = list;
      if (!started) {
        started = true;
        poll(round, { signal, interval: 10000 });
      }
    },
  };
}

function renderUse(main, answers, asked, held) {
  let allocated = 0, used = 0, idle = 0;
  for (const h of answers) {
    for (const g of h.GPUs || []) {
      const last = g.Samples?.[g.Samples.length - 1];
      if (!g.Allocated || !last) continue;
      allocated++;
      used += Math.min(Math.max(last.GPUUtilPercent || 0, 0), 100) / 100;
      if ((last.GPUUtilPercent || 0) < (h.IdleThresholdPercent || 5)) idle++;
    }
  }
  const set = (sel, v) => {
    const el = main.querySelector(sel);
    if (el.textContent !== v) el.textContent = v;
  };
  set('[data-testid="gpu-used"]', allocated ? pct(used, allocated) : '—');
  main.querySelector('#use-bar').style.width = allocated ? `${(100 * used) / allocated}%` : '0';
  const missed = held - answers.length;
  set('[data-testid="gpu-use-detail"]', allocated
    ? `${used.toFixed(1)} of ${allocated} GPUs busy · ${idle} idle now${missed > 0 ? ` · ${missed} of ${held} nodes not read` : ''}`
    : (held ? 'no reading yet' : 'no GPU allocated'));
  main.querySelector('#use-counter').classList.toggle('warn', idle > 0);
}

function memory(bytes) {
  if (!bytes) return '—';
  const gib = bytes / 2 ** 30;
  return gib >= 1 ? `${Math.round(gib * 10) / 10} GiB` : `${Math.round(bytes / 2 ** 20)} MiB`;
}

function renderServers(el, leader, peers) {
  setHTML(el, html`<dl class="kv">
    <dt>Leader</dt><dd>${leader ? html`<span class="mono">${leader}</span>` : html`<span class="badge bad">no leader</span>`}</dd>
    <dt>Servers</dt><dd>${peers.length ? peers.map((p) => html`<div class="mono">${p}${p === leader ? html` <span class="badge ok">leader</span>` : ''}</div>`) : '—'}</dd>
  </dl><p class="small"><a href="#/servers">Servers page →</a></p>`);
}

// pendingJobs lists pending jobs; for the first few it reads their
// evaluations (a few requests at most, spaced out) to show why they wait.
function pendingJobs(el, errEl, signal) {
  let jobs = [];
  const reasons = new Map(); // job key -> {failed, blocked}
  let running = false, again = false;

  function render() {
    if (!jobs.length) {
      setHTML(el, html`<p class="muted">No pending jobs.</p>`);
      return;
    }
    setHTML(el, html`<table><thead><tr><th>Job</th><th>Type</th><th class="num">Priority</th><th>Why it waits</th></tr></thead><tbody>
      ${jobs.slice(0, MAX_PENDING).map((j) => {
        const r = reasons.get(key(j));
        return html`<tr><td><a href="${jobHref(j)}">${j.ID}</a></td><td>${j.Type}</td><td class="num">${j.Priority}</td>
          <td class="wrap">${r ? whyHTML(r) : html`<span class="muted">…</span>`}</td></tr>`;
      })}</tbody></table>
      ${jobs.length > MAX_PENDING ? html`<p class="muted small">and ${jobs.length - MAX_PENDING} more on the <a href="#/jobs">jobs page</a>.</p>` : ''}`);
  }

  async function refresh() {
    if (running) { again = true; return; }
    running = true;
    try {
      do {
        again = false;
        for (const j of jobs.slice(0, MAX_PENDING)) {
          if (signal.aborted) return;
          const { data } = await get(`/v1/job/${encodeURIComponent(j.ID)}/evaluations`, { signal, query: { namespace: j.Namespace } });
          reasons.set(key(j), latestFailure(data || []));
          render();
        }
        await sleep(3000, signal);
      } while (again && !signal.aborted);
    } catch (err) {
      if (!isAbort(err)) showError(errEl, err);
    } finally {
      running = false;
    }
  }

  return {
    update(list) {
      jobs = sortBy(list.filter((j) => j.Status === 'pending' && !j.Stop), (j) => -j.Priority);
      render();
      if (jobs.length) refresh();
    },
  };
}

const key = (j) => `${j.Namespace}/${j.ID}`;
