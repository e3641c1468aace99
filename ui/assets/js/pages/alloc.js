// Allocation page: status, task states and events, assigned GPUs (with
// live utilisation and a sparkline of its history, from whichever node
// runs it, and a warning when they are allocated but idle), a live log tail
// (stdout/stderr) and an exec terminal.
import { watch, get } from '../api.js';
import { html, badge, ago, dateTime, shortId, sortBy, attrText } from '../format.js';
import { setHTML, showError, sectionHandlers, on } from '../dom.js';
import { jobIDHref, nodeHref } from '../links.js';
import { LogTail } from '../logtail.js';
import { ExecPanel } from '../exec.js';
import { pollStats, byID as statsByID, statsText, NO_STATS_TIP, WAIT_TIP } from '../stats.js';
import { allocHistoryPath, historyByID, sparkline, idleWarning } from '../history.js';

export default function allocPage(ctx) {
  const { main, signal } = ctx;
  const id = ctx.params[0];
  document.title = `Allocation ${shortId(id)} · Drover`;
  main.innerHTML = String(html`
    <div class="crumbs" id="crumbs"><a href="#/jobs">Jobs</a> /</div>
    <div class="page-head"><h1>Allocation <span class="mono">${shortId(id)}</span></h1><span id="status"></span></div>
    <div id="err"></div>
    <div class="grid2">
      <section class="panel"><h2>Summary</h2><div id="summary"><p class="muted">Loading…</p></div></section>
      <section class="panel"><h2>GPUs</h2><div id="gpus-err"></div><div id="idle"></div><div id="gpus"><p class="muted">Loading…</p></div></section>
    </div>
    <section class="panel" style="margin-top:14px"><h2>Tasks</h2><div id="tasks"></div></section>
    <section class="panel"><h2>Logs</h2>
      <div class="toolbar"><span id="task-pick"></span>
        <span><button class="seg on" data-stream="stdout" data-testid="log-stdout">stdout</button><button class="seg" data-stream="stderr" data-testid="log-stderr">stderr</button></span>
        <span class="muted small" id="log-status"></span></div>
      <div id="log-err"></div>
      <pre class="log" data-testid="log" id="log"></pre></section>
    <section class="panel" id="exec"><h2>Exec</h2>
      <div class="toolbar"><select data-testid="exec-task" id="exec-task"></select>
        <input data-testid="exec-command" value="/bin/sh" size="40" aria-label="command" title="Words split on spaces, or a JSON array">
        <button data-testid="exec-run">Run</button><button data-testid="exec-stop">Stop</button>
        <span class="muted small" data-testid="exec-status"></span></div>
      <div class="exec-err"></div>
      <div class="exec-term" data-testid="exec-term"></div></section>`);
  const $ = (sel) => main.querySelector(`#${sel}`);
  const [done] = ctx.gate(1);
  let alloc = null;
  let node = null;
  let nodeAsked = false;
  // Live GPU figures: polled while the allocation runs, on whichever node
  // (the servers route the request there).
  let stats = null;
  let statsCtl = null;
  // history: the GPUs' utilisation history and idle verdict, or null.
  let history = null;
  let historyCtl = null;
  const drawGPUs = () => {
    const tip = alloc && !terminal(alloc) ? WAIT_TIP : NO_STATS_TIP;
    renderGPUs($('gpus'), alloc, node, stats, tip, history);
    setHTML($('idle'), html`${alloc && !terminal(alloc) ? idleWarning(history) : ''}`);
  };
  const maybeStats = () => {
    if (!alloc || signal.aborted) return;
    if (terminal(alloc)) {
      statsCtl?.abort();
      historyCtl?.abort();
      stats = null;
      return;
    }
    if (statsCtl || alloc.ClientStatus !== 'running') return;
    historyCtl = pollStats(allocHistoryPath(alloc.ID), {
      signal,
      onData: (h) => { history = h; drawGPUs(); },
    });
    statsCtl = pollStats(`/v1/client/allocation/${encodeURIComponent(alloc.ID)}/stats`, {
      signal,
      onData: (as) => { stats = statsByID(as); drawGPUs(); },
    });
  };
  new ExecPanel({ root: $('exec'), signal, allocID: () => alloc?.ID || id, tasks: () => (alloc ? taskNames(alloc) : []) });
  const tail = new LogTail({
    pre: $('log'), status: $('log-status'), errSlot: $('log-err'), signal,
    allocID: () => alloc?.ID || id,
    taskState: (task) => ({ state: alloc?.TaskStates?.[task], terminal: terminal(alloc) }),
  });

  on($('task-pick'), 'change', 'select', (_, el) => tail.switchTo(el.value, null), signal);
  on(main, 'click', 'button[data-stream]', (_, b) => {
    for (const x of main.querySelectorAll('button[data-stream]')) x.classList.toggle('on', x === b);
    tail.switchTo(null, b.dataset.stream);
  }, signal);

  watch(`/v1/allocation/${encodeURIComponent(id)}`, {
    signal,
    ...sectionHandlers($('err'), (a) => {
      alloc = a;
      render(main, a);
      maybeStats();
      drawGPUs();
      const tasks = taskNames(a);
      const pick = $('exec-task');
      if (pick.options.length !== tasks.length) setHTML(pick, html`${tasks.map((t) => html`<option>${t}</option>`)}`);
      if (!tail.task && tasks.length) {
        if (tasks.length > 1) {
          setHTML($('task-pick'), html`<select aria-label="Task" data-testid="log-task">${tasks.map((t) => html`<option>${t}</option>`)}</select>`);
        }
        tail.switchTo(tasks[0], 'stdout');
      }
      tail.poke();
      if (!nodeAsked && a.NodeID) {
        nodeAsked = true;
        get(`/v1/node/${encodeURIComponent(a.NodeID)}`, { signal })
          .then(({ data }) => { node = data; drawGPUs(); showError($('gpus-err'), null); })
          .catch((err) => { if (!signal.aborted) showError($('gpus-err'), err); });
      }
    }, done),
  });
}

function terminal(a) {
  return !a || ['complete', 'failed', 'lost'].includes(a.ClientStatus);
}

function taskNames(a) {
  const tg = a.Job?.TaskGroups?.find((g) => g.Name === a.TaskGroup);
  const names = tg ? tg.Tasks.map((t) => t.Name) : [];
  for (const t of Object.keys(a.TaskStates || {})) if (!names.includes(t)) names.push(t);
  return names;
}

function render(main, a) {
  setHTML(main.querySelector('#crumbs'), html`<a href="#/jobs">Jobs</a> / <a href="${jobIDHref(a.JobID, a.Namespace)}">${a.JobID}</a> /`);
  setHTML(main.querySelector('#status'), html`<span data-testid="alloc-status">${badge(a.ClientStatus)}</span>`);
  setHTML(main.querySelector('#summary'), html`<dl class="kv">
    <dt>ID</dt><dd class="mono">${a.ID}</dd>
    <dt>Name</dt><dd>${a.Name}</dd>
    <dt>Job</dt><dd><a href="${jobIDHref(a.JobID, a.Namespace)}">${a.JobID}</a> <span class="muted">v${a.Job?.Version ?? 0}</span></dd>
    <dt>Group</dt><dd>${a.TaskGroup}</dd>
    <dt>Node</dt><dd>${a.NodeID ? html`<a href="${nodeHref(a.NodeID)}">${a.NodeName || shortId(a.NodeID)}</a>` : '—'}</dd>
    <dt>Client status</dt><dd>${badge(a.ClientStatus)} ${a.ClientDescription || ''}</dd>
    <dt>Desired</dt><dd>${a.DesiredStatus} ${a.DesiredDescription ? html`<span class="muted">— ${a.DesiredDescription}</span>` : ''}</dd>
    <dt>Evaluation</dt><dd class="mono">${shortId(a.EvalID)}</dd>
    ${portsHTML(a.AllocatedResources?.Shared?.Ports || [])}
    <dt>Created</dt><dd>${dateTime(a.CreateTime)} <span class="muted">(${ago(a.CreateTime)})</span></dd>
    <dt>Modified</dt><dd>${dateTime(a.ModifyTime)} <span class="muted">(${ago(a.ModifyTime)})</span></dd>
  </dl>`);
  const names = taskNames(a);
  setHTML(main.querySelector('#tasks'), names.length ? names.map((t) => taskHTML(t, a.TaskStates?.[t])) : html`<p class="muted">No tasks.</p>`);
}

// portsHTML lists the allocation's ports: label, host address and the
// port the task binds when it differs.
function portsHTML(ports) {
  if (!ports.length) return '';
  return html`<dt>Ports</dt><dd data-testid="alloc-ports">${ports.map((p) => html`<div class="mono" data-testid="alloc-port" data-label="${p.Label}">${p.Label} ${hostPort(p.HostIP, p.Value)}${p.To > 0 && p.To !== p.Value ? html` <span class="muted">→ ${p.To}</span>` : ''}</div>`)}</dd>`;
}

function hostPort(ip, port) {
  return ip && ip.includes(':') ? `[${ip}]:${port}` : `${ip || ''}:${port}`;
}

function taskHTML(name, s) {
  if (!s) return html`<h3>${name} ${badge('pending')}</h3><p class="muted small">The client has not reported this task yet.</p>`;
  const events = sortBy(s.Events || [], (e) => -(e.Time || 0));
  return html`<div data-testid="task-state" data-task="${name}">
    <h3>${name} ${badge(s.State === 'dead' && s.Failed ? 'failed' : s.State)}</h3>
    <dl class="kv small"><dt>Failed</dt><dd>${s.Failed ? 'yes' : 'no'}</dd><dt>Restarts</dt><dd>${s.Restarts || 0}</dd>
      <dt>Started</dt><dd>${dateTime(s.StartedAt)}</dd><dt>Finished</dt><dd>${dateTime(s.FinishedAt)}</dd></dl>
    ${events.length ? html`<table class="events small"><thead><tr><th>Time</th><th>Type</th><th class="num">Exit</th><th>Message</th></tr></thead><tbody>
      ${events.map((e) => html`<tr><td title="${ago(e.Time)}">${dateTime(e.Time)}</td><td>${e.Type}</td>
        <td class="num">${e.Type === 'Terminated' || e.ExitCode ? e.ExitCode : ''}</td><td>${e.DisplayMessage || e.Message || ''}</td></tr>`)}
    </tbody></table>` : ''}</div>`;
}

function renderGPUs(el, a, node, stats, tip, history) {
  const hist = historyByID(history);
  const byID = new Map();
  for (const g of node?.NodeResources?.Devices || []) {
    for (const inst of g.Instances || []) byID.set(inst.ID, { group: g, inst });
  }
  const rows = [];
  for (const [task, tr] of Object.entries(a.AllocatedResources?.Tasks || {}).sort()) {
    for (const d of tr.Devices || []) {
      for (const gid of d.DeviceIDs || []) rows.push({ task, id: gid, dev: d, info: byID.get(gid) });
    }
  }
  setHTML(el, rows.length ? html`<table data-testid="alloc-gpus"><thead><tr><th>Task</th><th>GPU</th><th>Model</th><th>Memory</th><th>Utilisation</th><th>Health</th></tr></thead><tbody>
    ${rows.map((r) => html`<tr data-testid="alloc-gpu" data-gpu-id="${r.id}"><td>${r.task}</td><td class="mono" title="${r.id}">${r.id}</td>
      <td>${r.info?.group.Name || r.dev.Name}</td><td>${attrText(r.info?.group.Attributes?.memory) || '—'}</td>${utilCell(stats?.get(r.id), tip)}
      <td>${r.info ? badge(r.info.inst.Healthy ? 'healthy' : 'unhealthy') : '—'}</td></tr>`)}</tbody></table>
    ${history ? html`<h3>Utilisation history</h3><div class="sparks">${rows.map((r) => html`<div class="spark-row" data-testid="alloc-gpu-history" data-gpu-id="${r.id}">
      <span class="mono small" title="${r.id}">${r.id.slice(0, 12)}…</span>${sparkline(hist.get(r.id), { threshold: history.IdleThresholdPercent, interval: history.Interval })}</div>`)}</div>` : ''}`
    : html`<p class="muted">This allocation holds no GPUs.</p>`);
}

function utilCell(s, tip) {
  const st = statsText(s);
  // The table is narrow: the percentage only, the rest on hover.
  const text = s ? `${Math.round(s.GPUUtilPercent || 0)}%` : '—';
  const title = s ? `${st.util}; memory ${st.mem}; ${st.temp}; ${st.power}. ${st.title}` : tip;
  return html`<td data-testid="alloc-gpu-util" title="${title}">${text}</td>`;
}
