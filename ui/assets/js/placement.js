// Why allocations were not placed, worded as the CLI words it.
import { html, plural, metricReasons, gpuWait, sortBy, shortId, badge } from './format.js';

/** latestFailure finds, in a job's evaluations, the newest placement failures and any blocked eval. */
export function latestFailure(evals) {
  const sorted = sortBy(evals, (e) => -(e.CreateIndex || 0));
  const withFail = sorted.find((e) => e.FailedTGAllocs && Object.keys(e.FailedTGAllocs).length);
  const blocked = sorted.find((e) => e.Status === 'blocked');
  return { failed: withFail?.FailedTGAllocs || null, eval: withFail || null, blocked: blocked || null, latest: sorted[0] || null };
}

/** failuresHTML renders FailedTGAllocs per task group. */
export function failuresHTML(failed) {
  return Object.keys(failed || {}).sort().map((g) => {
    const m = failed[g] || {};
    const n = (m.CoalescedFailures || 0) + 1;
    return html`<div>Task Group "${g}" (failed to place ${plural(n, 'allocation')}):</div>
      <ul class="reasons">${metricReasons(m).map((r) => html`<li>${r}</li>`)}</ul>`;
  });
}

/** blockedHTML says what happens to a blocked evaluation, as the CLI does. */
export function blockedHTML(blocked, failed) {
  const { busy, short } = gpuWait(failed || blocked.FailedTGAllocs);
  return html`<div class="small">Evaluation <span class="mono">${shortId(blocked.ID)}</span> ${badge('blocked')} waiting for additional capacity to place remainder.
    ${busy ? 'The job is waiting for GPUs: it will be placed when a node has enough matching GPUs free.' : ''}
    ${!busy && short ? 'No ready node has enough GPUs that match the request: the job waits until one joins; check the device count and constraints.' : ''}</div>`;
}

/** whyHTML renders placement failures per group and the blocked-eval note. */
export function whyHTML({ failed, blocked, latest }) {
  const parts = failuresHTML(failed);
  if (blocked) parts.push(blockedHTML(blocked, failed));
  if (!parts.length) {
    parts.push(latest
      ? html`<span class="muted">Evaluation <span class="mono">${shortId(latest.ID)}</span> is ${latest.Status}${latest.StatusDescription ? `: ${latest.StatusDescription}` : ''}.</span>`
      : html`<span class="muted">No evaluation yet.</span>`);
  }
  return parts;
}
