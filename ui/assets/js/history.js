// GPU utilisation history (routed to the node by the servers) as SVG
// sparklines, and the allocation's idle-but-allocated verdict.
import { html, duration } from './format.js';

export const nodeHistoryPath = (id) => `/v1/client/gpus/history?node_id=${encodeURIComponent(id)}`;
export const allocHistoryPath = (id) => `/v1/client/allocation/${encodeURIComponent(id)}/gpus/history`;

export const historyByID = (answer) => new Map((answer?.GPUs || []).map((g) => [g.ID, g]));

const W = 160;
const H = 32;

// sparkline: one GPU's samples (0-100%), oldest left, the idle
// threshold dashed.
export function sparkline(gpu, { threshold = 5, interval = 0 } = {}) {
  const samples = gpu?.Samples || [];
  if (!samples.length) return html`<span class="muted small" data-testid="gpu-sparkline-empty">no samples yet</span>`;
  const t0 = samples[0].Timestamp;
  const span = Math.max(samples[samples.length - 1].Timestamp - t0, 1);
  const x = (s) => (samples.length === 1 ? W : ((s.Timestamp - t0) / span) * W).toFixed(1);
  const y = (u) => (H - 1 - (Math.min(Math.max(u, 0), 100) / 100) * (H - 2)).toFixed(1);
  const points = samples.map((s) => `${x(s)},${y(s.GPUUtilPercent || 0)}`).join(' ');
  const last = samples[samples.length - 1];
  const peak = Math.max(...samples.map((s) => s.GPUUtilPercent || 0));
  const title = `${samples.length} samples${interval ? ` every ${duration(interval / 1e6)}` : ''} over ${duration(span / 1e6)}: `
    + `now ${Math.round(last.GPUUtilPercent || 0)}%, peak ${Math.round(peak)}%${gpu.Simulated ? ' (simulated)' : ''}`;
  return html`<svg class="spark" data-testid="gpu-sparkline" data-gpu-id="${gpu.ID}" data-samples="${samples.length}"
    viewBox="0 0 ${W} ${H}" preserveAspectRatio="none" role="img" aria-label="${title}"><title>${title}</title>
    <line class="spark-threshold" x1="0" x2="${W}" y1="${y(threshold)}" y2="${y(threshold)}"></line>
    <polyline class="spark-line" points="${points}"></polyline></svg>`;
}

// idleWarning: the idle-but-allocated banner, or ''.
export function idleWarning(h) {
  if (!h?.Idle) return '';
  const n = h.IdleGPUs?.length || 0;
  return html`<div class="warnbox" data-testid="idle-warning" role="status"><strong>Allocated but idle:</strong>
    ${n === 1 ? 'the GPU' : `all ${n} GPUs`} this allocation holds stayed under ${h.IdleThresholdPercent}% utilisation
    for ${duration(h.IdleWindow / 1e6)} or more (since ${new Date(h.IdleSince / 1e6).toLocaleTimeString()}).
    Stop it, or give them work.</div>`;
}
