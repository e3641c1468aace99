// Jobs list: status, type, priority, GPUs asked, allocation counts; live,
// filterable and virtualised.
import { watch, get, isAbort } from '../api.js';
import { html, badge, ago, dateTime, jobGPUs } from '../format.js';
import { sectionHandlers, debounce } from '../dom.js';
import { VTable } from '../vtable.js';
import { jobHref } from '../links.js';

export default function jobs(ctx) {
  const { main, signal } = ctx;
  main.innerHTML = String(html`
    <div class="page-head"><h1>Jobs</h1><span class="muted small" id="count"></span>
      <div class="actions"><a class="button primary" href="#/jobs/new">Run a job</a></div></div>
    <div id="err"></div>
    <div class="toolbar"><input type="search" placeholder="Filter by ID, status, type, namespace" data-testid="job-filter" id="filter" aria-label="Filter jobs"></div>
    <div id="table"></div>`);
  const $ = (id) => main.querySelector(`#${id}`);
  const [done] = ctx.gate(1);
  const gpus = gpuAsked(signal, () => table.setItems(shown));

  const table = new VTable($('table'), {
    testid: 'job-list',
    empty: 'No jobs. Run one with the button above.',
    signal,
    sort: 0,
    columns: [
      { title: 'ID', sort: (j) => j.ID },
      { title: 'Namespace', sort: (j) => j.Namespace },
      { title: 'Status', sort: (j) => j.Status },
      { title: 'Type', sort: (j) => j.Type },
      { title: 'Priority', sort: (j) => j.Priority, cls: 'num' },
      { title: 'GPUs', sort: (j) => gpus.peek(j) ?? -1, cls: 'num' },
      { title: 'Allocations', sort: (j) => counts(j).running },
      { title: 'Submitted', sort: (j) => j.SubmitTime || 0 },
    ],
    row: (j) => {
      const c = counts(j);
      const g = gpus.of(j);
      return html`<tr data-testid="job-row" data-job-id="${j.ID}">
        <td><a href="${jobHref(j)}">${j.ID}</a></td><td>${j.Namespace}</td>
        <td>${badge(j.Stop && j.Status !== 'dead' ? 'stopping' : j.Status)}</td><td>${j.Type}</td>
        <td class="num">${j.Priority}</td><td class="num">${g ?? '…'}</td>
        <td>${c.running} running${c.queued ? `, ${c.queued} queued` : ''}${c.starting ? `, ${c.starting} starting` : ''}${c.failed ? html`, <span class="badge bad">${c.failed} failed</span>` : ''}${c.complete ? `, ${c.complete} complete` : ''}</td>
        <td title="${dateTime(j.SubmitTime)}">${ago(j.SubmitTime)}</td></tr>`;
    },
  });

  let all = [];
  let shown = [];
  const apply = () => {
    const f = $('filter').value.trim().toLowerCase();
    shown = f ? all.filter((j) => `${j.ID} ${j.Name} ${j.Status} ${j.Type} ${j.Namespace}`.toLowerCase().includes(f)) : all;
    $('count').textContent = f ? `${shown.length} of ${all.length}` : `${all.length}`;
    table.setItems(shown);
  };
  $('filter').addEventListener('input', debounce(apply, 120), { signal });

  watch('/v1/jobs', {
    signal,
    query: { namespace: '*' },
    ...sectionHandlers($('err'), (list) => { all = list || []; apply(); }, done),
  });
}

function counts(j) {
  const out = { running: 0, queued: 0, starting: 0, failed: 0, complete: 0, lost: 0 };
  for (const s of Object.values(j.JobSummary?.Summary || {})) {
    out.running += s.Running || 0;
    out.queued += s.Queued || 0;
    out.starting += s.Starting || 0;
    out.failed += s.Failed || 0;
    out.complete += s.Complete || 0;
    out.lost += s.Lost || 0;
  }
  return out;
}

// gpuAsked returns the GPUs a job asks for: the list stub's GPUs field when
// the agent sends it, else the job read once per version for rows on
// screen only (two at a time), cached by JobModifyIndex.
function gpuAsked(signal, changed) {
  const cache = new Map();
  const queue = [];
  let active = 0;
  const redraw = debounce(changed, 150);
  const key = (j) => `${j.Namespace}\u0000${j.ID}\u0000${j.JobModifyIndex}`;
  function pump() {
    while (active < 2 && queue.length && !signal.aborted) {
      const j = queue.shift();
      active++;
      get(`/v1/job/${encodeURIComponent(j.ID)}`, { signal, query: { namespace: j.Namespace } })
        .then(({ data }) => { cache.set(key(j), jobGPUs(data)); redraw(); })
        .catch((err) => { if (!isAbort(err)) cache.set(key(j), '?'); })
        .finally(() => { active--; pump(); });
    }
  }
  const peek = (j) => {
    if (typeof j.GPUs === 'number') return j.GPUs;
    const v = cache.get(key(j));
    return typeof v === 'number' ? v : undefined;
  };
  return {
    peek,
    /** of returns the count, or undefined and fetches it. */
    of(j) {
      if (typeof j.GPUs === 'number') return j.GPUs;
      const k = key(j);
      if (cache.has(k)) return cache.get(k) ?? undefined;
      cache.set(k, null);
      queue.push(j);
      queueMicrotask(pump);
      return undefined;
    },
  };
}
