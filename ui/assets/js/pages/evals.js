// Evaluations: every evaluation with its status and placement failures;
// click one to see why its allocations were not placed.
import { watch } from '../api.js';
import { html, badge, ago, dateTime, shortId, metricReasons } from '../format.js';
import { sectionHandlers, debounce, on, setHTML } from '../dom.js';
import { VTable } from '../vtable.js';
import { jobIDHref, nodeHref } from '../links.js';
import { failuresHTML } from '../placement.js';

export default function evals(ctx) {
  const { main, signal } = ctx;
  document.title = 'Evaluations · Drover';
  main.innerHTML = String(html`
    <div class="page-head"><h1>Evaluations</h1><span class="muted small" id="count"></span></div>
    <div id="err"></div>
    <div class="toolbar"><input type="search" id="filter" data-testid="eval-filter" placeholder="Filter by ID, job, status, trigger" aria-label="Filter evaluations">
      <select id="status" aria-label="Status"><option value="">any status</option><option>pending</option><option>blocked</option><option>complete</option><option>failed</option><option>canceled</option></select>
      <label class="small"><input type="checkbox" id="failures"> only with placement failures</label></div>
    <section class="panel" id="detail" hidden></section>
    <div id="table"></div>`);
  const $ = (id) => main.querySelector(`#${id}`);
  const [done] = ctx.gate(1);
  let all = [];
  let selected = '';
  const hasFailures = (e) => Object.keys(e.FailedTGAllocs || {}).length > 0;

  const table = new VTable($('table'), {
    testid: 'eval-list',
    empty: 'No evaluations match.',
    signal,
    sort: 8,
    desc: true,
    columns: [
      { title: 'ID', sort: (e) => e.ID },
      { title: 'Job', sort: (e) => e.JobID },
      { title: 'Status', sort: (e) => e.Status },
      { title: 'Triggered by', sort: (e) => e.TriggeredBy },
      { title: 'Type', sort: (e) => e.Type },
      { title: 'Priority', sort: (e) => e.Priority, cls: 'num' },
      { title: 'Placement failures', sort: (e) => Object.keys(e.FailedTGAllocs || {}).length },
      { title: 'Node', sort: (e) => e.NodeID },
      { title: 'Created', sort: (e) => e.CreateIndex || 0 },
    ],
    row: (e) => {
      const reasons = Object.entries(e.FailedTGAllocs || {}).flatMap(([g, m]) => [`${g}:`, ...metricReasons(m).map((r) => `  ${r}`)]);
      return html`<tr data-testid="eval-row" data-eval-id="${e.ID}">
        <td><a href="#" class="mono" data-pick="${e.ID}">${shortId(e.ID)}</a></td>
        <td><a href="${jobIDHref(e.JobID, e.Namespace)}">${e.JobID}</a></td><td>${badge(e.Status)}</td>
        <td>${e.TriggeredBy}</td><td>${e.Type}</td><td class="num">${e.Priority}</td>
        <td title="${reasons.join('\n')}">${hasFailures(e) ? html`<span class="badge warn">${Object.keys(e.FailedTGAllocs).join(', ')}</span>` : '—'}</td>
        <td>${e.NodeID ? html`<a class="mono" href="${nodeHref(e.NodeID)}">${shortId(e.NodeID)}</a>` : '—'}</td>
        <td title="${dateTime(e.CreateTime)}">${ago(e.CreateTime)}</td></tr>`;
    },
  });

  const detail = () => {
    const e = all.find((x) => x.ID === selected);
    const el = $('detail');
    el.hidden = !e;
    if (!e) return;
    setHTML(el, html`<h2>Evaluation <span class="mono">${e.ID}</span> ${badge(e.Status)}</h2>
      <dl class="kv small">
        <dt>Job</dt><dd><a href="${jobIDHref(e.JobID, e.Namespace)}">${e.JobID}</a> (${e.Namespace})</dd>
        <dt>Triggered by</dt><dd>${e.TriggeredBy}</dd>
        ${e.StatusDescription ? html`<dt>Description</dt><dd>${e.StatusDescription}</dd>` : ''}
        ${e.BlockedEval ? html`<dt>Blocked eval</dt><dd class="mono">${e.BlockedEval}</dd>` : ''}
        ${e.PreviousEval ? html`<dt>Previous eval</dt><dd class="mono">${e.PreviousEval}</dd>` : ''}
        ${Object.keys(e.QueuedAllocations || {}).length ? html`<dt>Queued</dt><dd>${Object.entries(e.QueuedAllocations).map(([g, n]) => `${g}: ${n}`).join(', ')}</dd>` : ''}
        <dt>Created</dt><dd>${dateTime(e.CreateTime)}</dd><dt>Modified</dt><dd>${dateTime(e.ModifyTime)}</dd>
      </dl>
      ${hasFailures(e) ? html`<h3>Placement failures</h3>${failuresHTML(e.FailedTGAllocs)}` : html`<p class="muted small">No placement failures.</p>`}`);
  };

  const apply = () => {
    const f = $('filter').value.trim().toLowerCase();
    const st = $('status').value;
    const onlyFail = $('failures').checked;
    const shown = all.filter((e) => (!st || e.Status === st) && (!onlyFail || hasFailures(e))
      && (!f || `${e.ID} ${e.JobID} ${e.Status} ${e.TriggeredBy} ${e.Type} ${e.Namespace}`.toLowerCase().includes(f)));
    $('count').textContent = shown.length === all.length ? `${all.length}` : `${shown.length} of ${all.length}`;
    table.setItems(shown);
    detail();
  };
  $('filter').addEventListener('input', debounce(apply, 120), { signal });
  $('status').addEventListener('change', apply, { signal });
  $('failures').addEventListener('change', apply, { signal });
  on($('table'), 'click', 'a[data-pick]', (ev, a) => {
    ev.preventDefault();
    selected = selected === a.dataset.pick ? '' : a.dataset.pick;
    detail();
  }, signal);

  watch('/v1/evaluations', {
    signal,
    query: { namespace: '*' },
    ...sectionHandlers($('err'), (list) => { all = list || []; apply(); }, done),
  });
}
