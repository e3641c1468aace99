// Job page: summary, placement failures, task groups with scale, live
// allocations table, recent evaluations; stop, scale and restart (each
// running allocation's tasks restarted in place).
import { watch, request } from '../api.js';
import { html, badge, ago, dateTime, shortId, groupGPUs, jobGPUs, sortBy, plural } from '../format.js';
import { setHTML, showError, sectionHandlers, on } from '../dom.js';
import { VTable } from '../vtable.js';
import { allocHref, nodeHref } from '../links.js';
import { latestFailure, failuresHTML, blockedHTML } from '../placement.js';

const RESTART_TIP = 'Restart the tasks of every running allocation in place (reaches allocations on this agent\'s node)';

export default function jobPage(ctx) {
  const { main, signal } = ctx;
  const id = ctx.params[0];
  const ns = ctx.query.get('namespace') || 'default';
  const base = `/v1/job/${encodeURIComponent(id)}`;
  const query = { namespace: ns };
  document.title = `${id} · Drover`;
  main.innerHTML = String(html`
    <div class="crumbs"><a href="#/jobs">Jobs</a> / ${ns !== 'default' ? `${ns} / ` : ''}</div>
    <div class="page-head"><h1>${id}</h1><span id="status"></span>
      <div class="actions">
        <button data-testid="restart-button" id="restart" title="${RESTART_TIP}">Restart</button>
        <button class="danger" data-testid="stop-button" id="stop">Stop</button>
      </div></div>
    <div id="action-err"></div><div id="action-note"></div>
    <div id="job-err"></div>
    <div class="grid2">
      <section class="panel"><h2>Summary</h2><div id="summary"><p class="muted">Loading…</p></div></section>
      <section class="panel"><h2>Placement</h2><div id="evals-err"></div><div id="placement"><p class="muted">Loading…</p></div></section>
    </div>
    <section class="panel" style="margin-top:14px"><h2>Task groups</h2><div id="groups"></div></section>
    <section class="panel"><h2>Deployment</h2><div id="deploy-err"></div><div id="deploy" data-testid="deployment"></div></section>
    <section class="panel"><h2>Allocations <span class="muted small" id="alloc-count"></span></h2><div id="allocs-err"></div><div id="allocs"></div></section>
    <section class="panel"><h2>Recent evaluations</h2><div id="evals"></div></section>`);
  const $ = (sel) => main.querySelector(`#${sel}`);
  const [jobDone, allocsDone, evalsDone] = ctx.gate(3);
  const edits = new Map(); // group -> count typed but not applied
  let current = []; // the latest allocation list, for restart

  const allocs = new VTable($('allocs'), {
    testid: 'alloc-list',
    empty: 'No allocations yet.',
    signal,
    sort: 6,
    desc: true,
    columns: [
      { title: 'ID', sort: (a) => a.ID },
      { title: 'Name', sort: (a) => a.Name },
      { title: 'Node', sort: (a) => a.NodeName },
      { title: 'Status', sort: (a) => a.ClientStatus },
      { title: 'Desired', sort: (a) => a.DesiredStatus },
      { title: 'GPUs', sort: (a) => gpuIDs(a).length, cls: 'num' },
      { title: 'Created', sort: (a) => a.CreateTime || 0 },
      { title: 'Modified', sort: (a) => a.ModifyTime || 0 },
    ],
    row: (a) => {
      const ids = gpuIDs(a);
      return html`<tr data-testid="alloc-row" data-alloc-id="${a.ID}">
        <td><a class="mono" href="${allocHref(a.ID)}">${shortId(a.ID)}</a></td><td>${a.Name}</td>
        <td>${a.NodeID ? html`<a href="${nodeHref(a.NodeID)}">${a.NodeName || shortId(a.NodeID)}</a>` : '—'}</td>
        <td data-testid="alloc-status" data-status="${a.ClientStatus}">${badge(a.ClientStatus)}</td>
        <td title="${a.DesiredDescription || ''}">${a.DesiredStatus}</td>
        <td class="num" title="${ids.join('\n')}">${ids.length || '—'}</td>
        <td title="${dateTime(a.CreateTime)}">${ago(a.CreateTime)}</td><td title="${dateTime(a.ModifyTime)}">${ago(a.ModifyTime)}</td></tr>`;
    },
  });

  watch(base, {
    signal, query,
    ...sectionHandlers($('job-err'), (j) => renderJob(main, j, edits), jobDone),
  });
  watch(`${base}/allocations`, {
    signal, query,
    ...sectionHandlers($('allocs-err'), (list) => {
      list = list || [];
      current = list;
      allocs.setItems(list);
      const by = {};
      for (const a of list) by[a.ClientStatus] = (by[a.ClientStatus] || 0) + 1;
      $('alloc-count').textContent = Object.keys(by).sort().map((k) => `${by[k]} ${k}`).join(', ');
    }, allocsDone),
  });
  watch(`${base}/deployment`, {
    signal, query,
    ...sectionHandlers($('deploy-err'), (d) => setHTML($('deploy'), deployHTML(d))),
  });
  on($('deploy'), 'click', 'button[data-promote]', async (_, b) => {
    b.disabled = true;
    try {
      await request('PUT', `/v1/deployment/promote/${encodeURIComponent(b.dataset.promote)}`, { signal, body: { DeploymentID: b.dataset.promote, All: true } });
      showError($('deploy-err'), null);
    } catch (err) {
      showError($('deploy-err'), err);
    }
    b.disabled = false;
  }, signal);
  watch(`${base}/evaluations`, {
    signal, query,
    ...sectionHandlers($('evals-err'), (list) => renderEvals(main, list || []), evalsDone),
  });

  // Stop asks for a second click rather than a modal dialog.
  let armed = 0;
  $('stop').addEventListener('click', async (ev) => {
    const b = ev.currentTarget;
    if (!armed) {
      b.textContent = 'Click again to stop';
      armed = setTimeout(() => { armed = 0; b.textContent = 'Stop'; }, 4000);
      return;
    }
    clearTimeout(armed);
    armed = 0;
    b.disabled = true;
    b.textContent = 'Stopping…';
    try {
      const { data } = await request('DELETE', base, { signal, query });
      showError($('action-err'), null);
      setHTML($('action-note'), html`<div class="note">Stop requested${data?.EvalID ? html` (evaluation <span class="mono">${shortId(data.EvalID)}</span>)` : ''}.</div>`);
    } catch (err) {
      showError($('action-err'), err);
    } finally {
      b.disabled = false;
      b.textContent = 'Stop';
    }
  }, { signal });

  $('restart').addEventListener('click', async (ev) => {
    const b = ev.currentTarget;
    const running = current.filter((a) => a.ClientStatus === 'running' && a.DesiredStatus === 'run');
    if (!running.length) {
      showError($('action-err'), new Error('No running allocations to restart.'));
      return;
    }
    b.disabled = true;
    b.textContent = 'Restarting…';
    const failed = [];
    for (const a of running) {
      try {
        await request('POST', `/v1/client/allocation/${encodeURIComponent(a.ID)}/restart`, { signal, body: {} });
      } catch (err) {
        failed.push(`${shortId(a.ID)}: ${err.message}`);
      }
    }
    b.disabled = false;
    b.textContent = 'Restart';
    showError($('action-err'), failed.length ? new Error(`Restart failed for ${failed.join('; ')}`) : null);
    setHTML($('action-note'), html`<div class="note">Restarted ${plural(running.length - failed.length, 'allocation')}.</div>`);
  }, { signal });

  on($('groups'), 'input', 'input[data-group]', (_, el) => edits.set(el.dataset.group, el.value), signal);
  on($('groups'), 'click', 'button[data-scale]', async (_, b) => {
    const group = b.dataset.scale;
    const input = main.querySelector(`input[data-group="${CSS.escape(group)}"]`);
    const count = Number(input.value);
    if (!Number.isInteger(count) || count < 0) {
      showError($('action-err'), new Error(`Scale ${group}: count must be a whole number ≥ 0, not "${input.value}"`));
      return;
    }
    b.disabled = true;
    try {
      const { data } = await request('POST', `${base}/scale`, {
        signal, query,
        body: { Count: count, Target: { Group: group }, Message: 'scaled from the web UI' },
      });
      edits.delete(group);
      showError($('action-err'), null);
      setHTML($('action-note'), html`<div class="note">Group "${group}" scaled to ${count}${data?.EvalID ? html` (evaluation <span class="mono">${shortId(data.EvalID)}</span>)` : ''}.</div>`);
    } catch (err) {
      showError($('action-err'), err);
    } finally {
      b.disabled = false;
    }
  }, signal);
}

function gpuIDs(a) {
  const out = [];
  for (const t of Object.values(a.AllocatedResources?.Tasks || {})) {
    for (const d of t.Devices || []) if (d.Type === 'gpu' || !d.Type) out.push(...(d.DeviceIDs || []));
  }
  return out;
}

function renderJob(main, j, edits) {
  const status = j.Stop && j.Status !== 'dead' ? 'stopping' : j.Status;
  setHTML(main.querySelector('#status'), html`${badge(status)}${j.Stop ? html` <span class="badge">stopped</span>` : ''}`);
  setHTML(main.querySelector('#summary'), html`<dl class="kv">
    <dt>Type</dt><dd>${j.Type}</dd>
    <dt>Priority</dt><dd>${j.Priority}</dd>
    <dt>Namespace</dt><dd>${j.Namespace}</dd>
    <dt>Datacenters</dt><dd>${(j.Datacenters || []).join(', ') || '—'}</dd>
    <dt>Version</dt><dd data-testid="job-version">${j.Version ?? 0}</dd>
    <dt>GPUs asked</dt><dd>${jobGPUs(j)}</dd>
    <dt>Submitted</dt><dd>${dateTime(j.SubmitTime)} <span class="muted">(${ago(j.SubmitTime)})</span></dd>
    ${j.StatusDescription ? html`<dt>Status</dt><dd>${j.StatusDescription}</dd>` : ''}
  </dl>`);
  setHTML(main.querySelector('#groups'), html`<table>
    <thead><tr><th>Group</th><th class="num">Count</th><th>Tasks</th><th class="num">GPUs per alloc</th><th>CPU / memory</th><th>Scale</th></tr></thead>
    <tbody>${(j.TaskGroups || []).map((tg) => {
      let cpu = 0, mem = 0;
      for (const t of tg.Tasks || []) { cpu += t.Resources?.CPU || 0; mem += t.Resources?.MemoryMB || 0; }
      return html`<tr data-testid="group-row" data-group="${tg.Name}"><td>${tg.Name}</td><td class="num">${tg.Count}</td>
        <td class="wrap">${(tg.Tasks || []).map((t) => html`<div>${t.Name} <span class="muted">(${t.Driver})</span>${deviceText(t)}</div>`)}</td>
        <td class="num">${groupGPUs(tg)}</td><td>${cpu} MHz / ${mem} MiB</td>
        <td><input type="number" min="0" step="1" data-group="${tg.Name}" data-testid="scale-input" aria-label="Count for ${tg.Name}" value="${edits.get(tg.Name) ?? tg.Count}">
          <button data-scale="${tg.Name}" data-testid="scale-button">Scale</button></td></tr>`;
    })}</tbody></table>`);
}

function deviceText(t) {
  const ds = t.Resources?.Devices || [];
  if (!ds.length) return '';
  return html` <span class="small">· ${ds.map((d) => `${d.Count}× ${d.Name}${d.Topology ? ` (${d.Topology})` : ''}${d.MemoryMB ? ` ${d.MemoryMB} MiB` : ''}`).join(', ')}</span>`;
}

function renderEvals(main, evals) {
  const why = latestFailure(evals);
  const parts = failuresHTML(why.failed);
  if (why.blocked) parts.push(blockedHTML(why.blocked, why.failed));
  const latest = why.latest;
  const placedOK = latest && !parts.length;
  setHTML(main.querySelector('#placement'), html`<div data-testid="placement-failures">${parts.length ? parts
    : html`<p class="muted">${placedOK ? `No placement failures in the latest evaluation (${latest.Status}).` : 'No evaluations yet.'}</p>`}</div>`);
  const recent = sortBy(evals, (e) => -(e.CreateIndex || 0)).slice(0, 8);
  setHTML(main.querySelector('#evals'), recent.length ? html`<table><thead><tr><th>ID</th><th>Status</th><th>Triggered by</th><th>Placement failures</th><th>Created</th></tr></thead><tbody>
    ${recent.map((e) => html`<tr><td class="mono">${shortId(e.ID)}</td><td>${badge(e.Status)}</td><td>${e.TriggeredBy}</td>
      <td>${Object.keys(e.FailedTGAllocs || {}).length ? plural(Object.keys(e.FailedTGAllocs).length, 'group') : '—'}</td>
      <td title="${dateTime(e.CreateTime)}">${ago(e.CreateTime)}</td></tr>`)}</tbody></table>
    ${evals.length > recent.length ? html`<p class="muted small">${evals.length - recent.length} older not shown.</p>` : ''}` : html`<p class="muted">None.</p>`);
}

// deployHTML is the job's latest deployment: status and, per group,
// canaries, placed, healthy and unhealthy of desired (Nomad's table).
function deployHTML(d) {
  if (!d) return html`<p class="muted">No deployment.</p>`;
  const groups = Object.entries(d.TaskGroups || {}).sort();
  const waiting = d.Status === 'running' && groups.some(([, g]) => g.DesiredCanaries > 0 && !g.Promoted);
  return html`<p>${badge(d.Status)} version ${d.JobVersion} <span class="mono muted">${shortId(d.ID)}</span> ${d.StatusDescription || ''}
    ${waiting ? html`<button data-promote="${d.ID}" data-testid="promote-button">Promote</button>` : ''}</p>
    <table><tr><th>Group</th><th class="num">Desired</th><th class="num">Canaries</th><th class="num">Placed</th><th class="num">Healthy</th><th class="num">Unhealthy</th></tr>
    ${groups.map(([n, g]) => html`<tr><td>${n}</td><td class="num">${g.DesiredTotal}</td><td class="num">${g.PlacedCanaries?.length || 0}/${g.DesiredCanaries}</td><td class="num">${g.PlacedAllocs}</td><td class="num">${g.HealthyAllocs}</td><td class="num">${g.UnhealthyAllocs}</td></tr>`)}</table>`;
}
