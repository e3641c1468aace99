// Paste an HCL job, plan it (where the agent can), and run it; then go to
// the job page, which follows the allocation live.
import { request } from '../api.js';
import { html, shortId, plural } from '../format.js';
import { setHTML, showError } from '../dom.js';
import { navigate } from '../router.js';
import { jobHref, nodeHref } from '../links.js';
import { failuresHTML } from '../placement.js';

const DRAFT = 'drover.ui.draft';
const EXAMPLE = `job "example" {
  type        = "batch"
  datacenters = ["dc1"]
  group "train" {
    task "hello" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo GPUs: $NVIDIA_VISIBLE_DEVICES"]
      }
      resources {
        cpu    = 500
        memory = 256
        device "nvidia/gpu" {
          count = 1
        }
      }
    }
  }
}`;

export default function jobNew(ctx) {
  const { main, signal } = ctx;
  document.title = 'Run a job · Drover';
  main.innerHTML = String(html`
    <div class="crumbs"><a href="#/jobs">Jobs</a> /</div>
    <div class="page-head"><h1>Run a job</h1></div>
    <div id="err"></div>
    <section class="panel">
      <p class="muted small">Paste a job in HCL. Plan shows where it would go and why not; Run submits it.</p>
      <textarea class="hcl" data-testid="hcl-input" id="hcl" spellcheck="false" aria-label="Job HCL" placeholder="${EXAMPLE}"></textarea>
      <div class="toolbar" style="margin-top:10px">
        <button data-testid="plan-button" id="plan">Plan</button>
        <button class="primary" data-testid="run-button" id="run">Run</button>
        <button id="example" type="button">Insert example</button>
        <span class="muted small" id="busy"></span>
      </div>
    </section>
    <section class="panel" id="plan-panel" hidden><h2>Plan</h2><div id="plan-out" data-testid="plan-result"></div></section>`);
  const $ = (id) => main.querySelector(`#${id}`);
  const hcl = $('hcl');
  hcl.value = sessionStorage.getItem(DRAFT) || '';
  hcl.addEventListener('input', () => sessionStorage.setItem(DRAFT, hcl.value), { signal });
  $('example').addEventListener('click', () => {
    hcl.value = EXAMPLE;
    sessionStorage.setItem(DRAFT, hcl.value);
  }, { signal });

  const busy = async (label, fn) => {
    for (const b of main.querySelectorAll('button')) b.disabled = true;
    $('busy').textContent = label;
    try {
      await fn();
      showError($('err'), null);
    } catch (err) {
      if (!signal.aborted) showError($('err'), err);
    } finally {
      if (!signal.aborted) {
        for (const b of main.querySelectorAll('button')) b.disabled = false;
        $('busy').textContent = '';
      }
    }
  };

  const parse = async () => {
    if (!hcl.value.trim()) throw new Error('Paste a job first (or insert the example).');
    const { data } = await request('POST', '/v1/jobs/parse', { signal, body: { JobHCL: hcl.value, Canonicalize: true } });
    return data;
  };

  $('plan').addEventListener('click', () => busy('Planning…', async () => {
    const job = await parse();
    $('plan-panel').hidden = false;
    try {
      const { data } = await request('POST', `/v1/job/${encodeURIComponent(job.ID)}/plan`, {
        signal, query: { namespace: job.Namespace }, body: { Job: job, Diff: true },
      });
      renderPlan($('plan-out'), data || {});
    } catch (err) {
      if (err.status === 404 || err.status === 501 || err.status === 405) {
        setHTML($('plan-out'), html`<div class="warnbox">This agent cannot plan jobs yet: ${err.message}. You can still run the job.</div>`);
        return;
      }
      throw err;
    }
  }), { signal });

  $('run').addEventListener('click', () => busy('Submitting…', async () => {
    const job = await parse();
    await request('PUT', '/v1/jobs', { signal, body: { Job: job } });
    sessionStorage.removeItem(DRAFT);
    navigate(jobHref(job));
  }), { signal });

  ctx.ready();
}

function renderPlan(el, p) {
  const type = p.Diff?.Type || 'None';
  const placements = p.Placements || [];
  const stops = p.Stops || [];
  const updates = Object.entries(p.Annotations?.DesiredTGUpdates || {}).sort();
  const failures = failuresHTML(p.FailedTGAllocs);
  setHTML(el, html`<dl class="kv">
      <dt>Change</dt><dd class="diff-${type}" data-testid="plan-diff">${type === 'None' ? 'no change' : type}</dd>
      <dt>Job modify index</dt><dd class="mono">${p.JobModifyIndex ?? 0}</dd>
      <dt>Placements</dt><dd>${plural(placements.length, 'allocation')}${stops.length ? `, ${stops.length} to stop` : ''}</dd>
      ${updates.map(([g, u]) => html`<dt>Group ${g}</dt><dd>${['Place', 'Stop', 'InPlaceUpdate', 'DestructiveUpdate', 'Ignore'].filter((k) => u[k]).map((k) => `${u[k]} ${k.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()}`).join(', ') || 'no change'}</dd>`)}
    </dl>
    ${p.Warnings ? html`<div class="warnbox">${p.Warnings}</div>` : ''}
    ${placements.length ? html`<h3>Would place</h3><table><thead><tr><th>Group</th><th>Node</th><th>GPUs</th></tr></thead><tbody>
      ${placements.map((pl) => html`<tr><td>${pl.TaskGroup}</td>
        <td>${pl.NodeID ? html`<a href="${nodeHref(pl.NodeID)}">${pl.NodeName || shortId(pl.NodeID)}</a>` : '—'}</td>
        <td class="mono" title="${(pl.GPUs || []).join('\n')}">${(pl.GPUs || []).length ? (pl.GPUs || []).map(shortId).join(', ') : '—'}</td></tr>`)}
      </tbody></table>` : ''}
    ${stops.length ? html`<h3>Would stop</h3><ul>${stops.map((s) => html`<li>${s.Name || shortId(s.AllocID)} on ${s.NodeName || shortId(s.NodeID)}${s.Reason ? ` — ${s.Reason}` : ''}</li>`)}</ul>` : ''}
    ${failures.length ? html`<h3>Placement failures</h3>${failures}` : ''}`);
}
