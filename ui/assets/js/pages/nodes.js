// Nodes list: GPU counts and health from the list stubs (no request per
// node), live, filterable, virtualised for thousands of rows.
import { watch } from '../api.js';
import { html, badge, shortId } from '../format.js';
import { sectionHandlers, debounce } from '../dom.js';
import { VTable } from '../vtable.js';
import { nodeHref } from '../links.js';

export default function nodes(ctx) {
  const { main, signal } = ctx;
  document.title = 'Nodes · Drover';
  main.innerHTML = String(html`
    <div class="page-head"><h1>Nodes</h1><span class="muted small" id="count"></span><span class="muted small" id="gpus"></span></div>
    <div id="err"></div>
    <div class="toolbar"><input type="search" id="filter" data-testid="node-filter" placeholder="Filter by name, ID, datacenter, class, status" aria-label="Filter nodes">
      <label class="small"><input type="checkbox" id="unhealthy"> only with unhealthy GPUs</label></div>
    <div id="table"></div>`);
  const $ = (id) => main.querySelector(`#${id}`);
  const [done] = ctx.gate(1);
  const table = new VTable($('table'), {
    testid: 'node-list',
    empty: 'No nodes match.',
    signal,
    sort: 0,
    columns: [
      { title: 'Name', sort: (n) => n.Name },
      { title: 'ID', sort: (n) => n.ID },
      { title: 'Datacenter', sort: (n) => n.Datacenter },
      { title: 'Class', sort: (n) => n.NodeClass },
      { title: 'Status', sort: (n) => n.Status },
      { title: 'Eligibility', sort: (n) => (n.Drain ? 'draining' : n.SchedulingEligibility) },
      { title: 'GPUs', sort: (n) => n.GPUs || 0, cls: 'num' },
      { title: 'GPU health', sort: (n) => (n.GPUs || 0) - (n.HealthyGPUs || 0) },
      { title: 'Address', sort: (n) => n.Address },
      { title: 'Version', sort: (n) => n.Version },
    ],
    row: (n) => {
      const bad = (n.GPUs || 0) - (n.HealthyGPUs || 0);
      return html`<tr data-testid="node-row" data-node-id="${n.ID}">
        <td><a href="${nodeHref(n.ID)}">${n.Name || shortId(n.ID)}</a></td><td class="mono">${shortId(n.ID)}</td>
        <td>${n.Datacenter}</td><td>${n.NodeClass || '—'}</td><td>${badge(n.Status)}</td>
        <td>${n.Drain ? badge('draining') : badge(n.SchedulingEligibility)}</td>
        <td class="num" data-testid="node-gpus">${n.GPUs || 0}</td>
        <td>${!n.GPUs ? '—' : bad ? html`<span class="badge bad">${bad} unhealthy</span>` : html`<span class="badge ok">all healthy</span>`}</td>
        <td class="mono">${n.Address || ''}</td><td>${n.Version || ''}</td></tr>`;
    },
  });

  let all = [];
  const apply = () => {
    const f = $('filter').value.trim().toLowerCase();
    const onlyBad = $('unhealthy').checked;
    const shown = all.filter((n) => (!onlyBad || n.HealthyGPUs < n.GPUs)
      && (!f || `${n.Name} ${n.ID} ${n.Datacenter} ${n.NodeClass} ${n.Status} ${n.Address}`.toLowerCase().includes(f)));
    $('count').textContent = shown.length === all.length ? `${all.length}` : `${shown.length} of ${all.length}`;
    let gpus = 0, healthy = 0;
    for (const n of all) { gpus += n.GPUs || 0; healthy += n.HealthyGPUs || 0; }
    $('gpus').textContent = `· ${gpus} GPUs, ${gpus - healthy} unhealthy`;
    table.setItems(shown);
  };
  $('filter').addEventListener('input', debounce(apply, 120), { signal });
  $('unhealthy').addEventListener('change', apply, { signal });

  watch('/v1/nodes', { signal, ...sectionHandlers($('err'), (list) => { all = list || []; apply(); }, done) });
}
