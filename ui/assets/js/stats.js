// Live GPU figures (utilisation, memory used, temperature, power) of any
// node: GET /v1/client/stats?node_id=<id> and
// /v1/client/allocation/<id>/stats, which the servers route to the node.
import { get, poll, isAbort } from './api.js';

export const NO_STATS_TIP = 'No reading from this node: it is not connected to any server.';
export const WAIT_TIP = 'Waiting for the first reading from this agent.';

/**
 * pollStats reads path now and every interval ms (while the tab is
 * visible) and hands each answer to onData, until signal aborts, the
 * returned controller is aborted, or the agent answers 404 or 501 (it
 * cannot answer for this node or allocation): then it stops quietly.
 */
export function pollStats(path, { signal, onData, interval = 5000 }) {
  const ctl = new AbortController();
  if (signal.aborted) ctl.abort();
  else signal.addEventListener('abort', () => ctl.abort(), { once: true });
  poll(async () => {
    const { data } = await get(path, { signal: ctl.signal });
    if (!ctl.signal.aborted) onData(data);
  }, {
    signal: ctl.signal,
    interval,
    onError(err) {
      if (isAbort(err) || err?.status === 404 || err?.status === 501) ctl.abort();
      // Anything else: keep the last figures and try again next round.
    },
  });
  return ctl;
}

/** byID indexes a stats answer's Devices by GPU ID. */
export const byID = (answer) => new Map((answer?.Devices || []).map((d) => [d.ID, d]));

const gib = (b) => `${((b || 0) / 2 ** 30).toFixed(1)}`;

/** statsText renders one GPU's figures as short strings; all '—' without stats. */
export function statsText(s) {
  if (!s) return { util: '—', mem: '—', temp: '—', power: '—', title: '' };
  return {
    util: `${Math.round(s.GPUUtilPercent || 0)}%${s.MemoryUtilPercent ? ` · mem ${Math.round(s.MemoryUtilPercent)}%` : ''}`,
    mem: s.MemoryTotalBytes ? `${gib(s.MemoryUsedBytes)} / ${gib(s.MemoryTotalBytes)} GiB` : '—',
    temp: s.TemperatureC ? `${Math.round(s.TemperatureC)} °C` : '—',
    power: s.PowerWatts ? `${Math.round(s.PowerWatts)} W` : '—',
    title: `${s.Simulated ? 'Simulated figures' : 'Read from NVML'} at ${new Date(s.Timestamp / 1e6).toLocaleTimeString()}`,
  };
}
