// Node page: facts, one tile per GPU (model, memory, UUID, holder, health),
// live GPU figures and a utilisation sparkline (read from the node through
// the servers), the GPU link matrix, and the node's allocations. Live.
import { watch } from '../api.js';
import { html, badge, shortId, dateTime, ago, attrStrings } from '../format.js';
import { setHTML, sectionHandlers } from '../dom.js';
import { allocHref, jobIDHref } from '../links.js';
import { pollStats, byID, statsText, NO_STATS_TIP, WAIT_TIP } from '../stats.js';
import { nodeHistoryPath, historyByID, sparkline } from '../history.js';

const LINKS = {
  nvlink: ['NV', 'NVLink'],
  pcie_switch: ['PIX', 'PCIe switch'],
  host_bridge: ['PHB', 'PCIe host bridge'],
  system: ['SYS', 'across the system (NUMA interconnect)'],
};

export default function nodePage(ctx) {
  const { main, signal } = ctx;
  const id = ctx.params[0];
  document.title = `Node ${shortId(id)} · Drover`;
  main.innerHTML = String(html`
    <div class="crumbs"><a href="#/nodes">Nodes</a> /</div>
    <div class="page-head"><h1 id="name">${shortId(id)}</h1><span id="status"></span></div>
    <div id="err"></div>
    <section class="panel"><h2>Summary</h2><div id="summary"><p class="muted">Loading…</p></div></section>
    <section class="panel"><h2>GPUs <span class="muted small" id="gpu-count"></span></h2><div id="allocs-err"></div><div id="gpus"></div></section>
    <section class="panel"><h2>GPU links</h2><div id="links"></div></section>
    <section class="panel"><h2>Allocations</h2><div id="allocs"></div></section>`);
  const $ = (sel) => main.querySelector(`#${sel}`);
  const [nodeDone, allocsDone] = ctx.gate(2);
  let node = null;
  let allocs = null;
  // stats: live figures by GPU ID, or null; own: polling has started.
  let stats = null;
  let own = false; // set once polling starts
  // history: the GPUs' utilisation history answer, or null.
  let history = null;
  const draw = () => {
    if (node) renderGPUs(main, node, allocs || [], stats, own ? WAIT_TIP : NO_STATS_TIP, history);
  };
  // Any agent answers for any node: the servers route the request to it.
  own = true;
  pollStats(`/v1/client/stats?node_id=${encodeURIComponent(id)}`, { signal, onData: (ns) => { stats = byID(ns); draw(); } });
  pollStats(nodeHistoryPath(id), { signal, onData: (h) => { history = h; draw(); } });

  watch(`/v1/node/${encodeURIComponent(id)}`, {
    signal,
    ...sectionHandlers($('err'), (n) => {
      node = n;
      document.title = `${n.Name} · Drover`;
      renderNode(main, n);
      draw();
      renderLinks($('links'), gpuInstances(n));
    }, nodeDone),
  });
  watch(`/v1/node/${encodeURIComponent(id)}/allocations`, {
    signal,
    ...sectionHandlers($('allocs-err'), (list) => {
      allocs = list || [];
      draw();
      renderAllocs($('allocs'), allocs);
    }, allocsDone),
  });
}

const live = (a) => a.DesiredStatus === 'run' && (a.ClientStatus === 'pending' || a.ClientStatus === 'running');

/** gpuInstances flattens the node's GPU device groups: [{group, inst, index}]. */
function gpuInstances(n) {
  const out = [];
  for (const g of n.NodeResources?.Devices || []) {
    if (g.Type !== 'gpu') continue;
    for (const inst of g.Instances || []) out.push({ group: g, inst, index: out.length });
  }
  return out;
}

function renderNode(main, n) {
  main.querySelector('#name').textContent = n.Name || shortId(n.ID);
  setHTML(main.querySelector('#status'), html`${badge(n.Status)} ${n.Drain ? badge('draining') : badge(n.SchedulingEligibility)}`);
  const drivers = Object.entries(n.Drivers || {}).sort()
    .map(([k, d]) => html`<span class="badge ${d.Healthy ? 'ok' : d.Detected ? 'warn' : ''}" title="${d.HealthDescription || ''}">${k}</span> `);
  const a = n.Attributes || {};
  setHTML(main.querySelector('#summary'), html`<dl class="kv">
    <dt>ID</dt><dd class="mono">${n.ID}</dd>
    <dt>Datacenter</dt><dd>${n.Datacenter}</dd>
    <dt>Class</dt><dd>${n.NodeClass || '—'}</dd>
    <dt>Address</dt><dd class="mono">${n.HTTPAddr || '—'}</dd>
    <dt>Status</dt><dd>${n.Status}${n.StatusDescription ? ` — ${n.StatusDescription}` : ''} <span class="muted">(${ago(n.StatusUpdatedAt)})</span></dd>
    <dt>CPU</dt><dd>${n.NodeResources?.Cpu?.CpuShares ?? 0} MHz, ${n.NodeResources?.Cpu?.TotalCpuCores ?? 0} cores</dd>
    <dt>Memory</dt><dd>${n.NodeResources?.Memory?.MemoryMB ?? 0} MiB</dd>
    <dt>OS</dt><dd>${[a['os.name'], a['kernel.name'], a['kernel.version'], a['cpu.arch']].filter(Boolean).join(' ') || '—'}</dd>
    <dt>Drivers</dt><dd>${drivers.length ? drivers : '—'}</dd>
    <dt>Version</dt><dd>${a['drover.version'] || '—'}</dd>
  </dl>`);
}

function renderGPUs(main, n, allocs, stats, tip, history) {
  const hist = historyByID(history);
  const holders = new Map();
  for (const a of allocs) {
    if (!live(a)) continue;
    for (const t of Object.values(a.AllocatedResources?.Tasks || {})) {
      for (const d of t.Devices || []) for (const gid of d.DeviceIDs || []) holders.set(gid, a);
    }
  }
  const gpus = gpuInstances(n);
  const unhealthy = gpus.filter((g) => !g.inst.Healthy).length;
  main.querySelector('#gpu-count').textContent = gpus.length
    ? `${gpus.length} total, ${gpus.filter((g) => holders.has(g.inst.ID)).length} held, ${unhealthy} unhealthy` : '';
  if (!gpus.length) {
    setHTML(main.querySelector('#gpus'), html`<p class="muted">This node reports no GPUs.</p>`);
    return;
  }
  const groups = [...new Set(gpus.map((g) => g.group))];
  setHTML(main.querySelector('#gpus'), groups.map((group) => {
    const ga = attrStrings(group.Attributes);
    const facts = [ga.memory, ga.compute_capability && `compute ${ga.compute_capability}`, ga.architecture,
      ga.driver_version && `driver ${ga.driver_version}`, ga.cuda_version && `CUDA ${ga.cuda_version}`,
      ga.simulated === 'true' && 'simulated'].filter(Boolean).join(' · ');
    return html`<h3>${group.Vendor}/${group.Type}: ${group.Name} <span class="muted small">${facts}</span></h3>
      <div class="tiles">${gpus.filter((g) => g.group === group).map((g) => tileHTML(g, holders.get(g.inst.ID), stats?.get(g.inst.ID), tip, hist.get(g.inst.ID), history))}</div>`;
  }));
}

function tileHTML({ group, inst, index }, holder, s, tip, h, history) {
  const ia = inst.Attributes || {};
  const st = statsText(s);
  const title = s ? st.title : tip;
  const cls = !inst.Healthy ? 'unhealthy' : holder ? 'held' : '';
  return html`<div class="tile ${cls}" data-testid="gpu-tile" data-gpu-id="${inst.ID}">
    <div class="title"><span>GPU ${index}</span>${badge(inst.Healthy ? 'healthy' : 'unhealthy')}</div>
    <dl class="kv">
      <dt>Model</dt><dd>${group.Name}</dd>
      <dt>Memory</dt><dd>${ia.memory || attrStrings(group.Attributes).memory || '—'}</dd>
      <dt>UUID</dt><dd class="mono" title="${inst.ID}">${inst.ID}</dd>
      <dt>PCI bus</dt><dd class="mono">${inst.Locality?.PciBusID || ia.pci_bus_id || '—'}</dd>
      ${ia.numa_node ? html`<dt>NUMA node</dt><dd>${ia.numa_node}</dd>` : ''}
      ${ia.mig_profile ? html`<dt>MIG profile</dt><dd>${ia.mig_profile}</dd>` : ''}
      <dt>Held by</dt><dd>${holder ? html`<a data-testid="gpu-holder" class="mono" href="${allocHref(holder.ID)}" title="${holder.Name}">${shortId(holder.ID)}</a>
        <a class="small" href="${jobIDHref(holder.JobID, holder.Namespace)}">${holder.JobID}</a>` : html`<span class="muted">free</span>`}</dd>
      <dt>Utilisation</dt><dd data-testid="gpu-util" title="${title}">${st.util}</dd>
      <dt>Memory used</dt><dd data-testid="gpu-mem-used" title="${title}">${st.mem}</dd>
      <dt>Temperature</dt><dd data-testid="gpu-temp" title="${title}">${st.temp}</dd>
      <dt>Power</dt><dd data-testid="gpu-power" title="${title}">${st.power}</dd>
      <dt>History</dt><dd data-testid="gpu-history">${history ? sparkline(h, { threshold: history.IdleThresholdPercent, interval: history.Interval }) : html`<span class="muted small" title="${tip}">—</span>`}</dd>
      ${inst.HealthDescription || !inst.Healthy ? html`<dt>Health</dt><dd>${inst.HealthDescription || (inst.Healthy ? 'healthy' : 'unhealthy')}</dd>` : ''}
    </dl></div>`;
}

function renderLinks(el, gpus) {
  const any = gpus.some((g) => Object.keys(g.inst.Links || {}).length);
  if (gpus.length < 2 || !any) {
    setHTML(el, html`<p class="muted">${gpus.length < 2 ? 'Fewer than two GPUs: no links to show.' : 'This node reports no link information between its GPUs.'}</p>`);
    return;
  }
  setHTML(el, html`<table class="matrix" data-testid="link-matrix"><thead><tr><th></th>${gpus.map((g) => html`<th title="${g.inst.ID}">GPU${g.index}</th>`)}</tr></thead>
    <tbody>${gpus.map((a) => html`<tr><th title="${a.inst.ID}">GPU${a.index}</th>${gpus.map((b) => {
      if (a === b) return html`<td class="self">X</td>`;
      const t = a.inst.Links?.[b.inst.ID] || b.inst.Links?.[a.inst.ID] || '';
      const [abbr, name] = LINKS[t] || ['—', 'unknown'];
      return html`<td class="${t ? `l-${t}` : ''}" data-link="${t}" title="GPU${a.index} ↔ GPU${b.index}: ${name}">${abbr}</td>`;
    })}</tr>`)}</tbody></table>
    <div class="legend">${Object.entries(LINKS).map(([k, [abbr, name]]) => html`<span><span class="swatch" style="background:var(--link-${k})"></span>${abbr}: ${name}</span>`)}</div>`);
}

function renderAllocs(el, allocs) {
  const sorted = [...allocs].sort((a, b) => (live(b) - live(a)) || (b.ModifyTime || 0) - (a.ModifyTime || 0));
  const shown = sorted.slice(0, 200);
  setHTML(el, shown.length ? html`<table><thead><tr><th>ID</th><th>Job</th><th>Group</th><th>Status</th><th>Desired</th><th class="num">GPUs</th><th>Modified</th></tr></thead><tbody>
    ${shown.map((a) => {
      let gpus = 0;
      for (const t of Object.values(a.AllocatedResources?.Tasks || {})) for (const d of t.Devices || []) gpus += (d.DeviceIDs || []).length;
      return html`<tr data-testid="node-alloc-row" data-alloc-id="${a.ID}"><td><a class="mono" href="${allocHref(a.ID)}">${shortId(a.ID)}</a></td>
        <td><a href="${jobIDHref(a.JobID, a.Namespace)}">${a.JobID}</a></td><td>${a.TaskGroup}</td><td>${badge(a.ClientStatus)}</td><td>${a.DesiredStatus}</td>
        <td class="num">${gpus || '—'}</td><td title="${dateTime(a.ModifyTime)}">${ago(a.ModifyTime)}</td></tr>`;
    })}</tbody></table>${sorted.length > shown.length ? html`<p class="muted small">${sorted.length - shown.length} older not shown.</p>` : ''}`
    : html`<p class="muted">No allocations on this node.</p>`);
}
