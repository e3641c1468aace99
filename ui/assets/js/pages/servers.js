// Servers: the leader, the Raft peers, the gossip members and this agent.
import { get, poll } from '../api.js';
import { html, badge } from '../format.js';
import { setHTML, showError } from '../dom.js';

export default function servers(ctx) {
  const { main, signal } = ctx;
  document.title = 'Servers · Drover';
  main.innerHTML = String(html`
    <div class="page-head"><h1>Servers</h1></div>
    <div class="grid2">
      <section class="panel"><h2>Raft</h2><div id="raft-err"></div><div id="raft"><p class="muted">Loading…</p></div></section>
      <section class="panel"><h2>This agent</h2><div id="self-err"></div><div id="self"><p class="muted">Loading…</p></div></section>
    </div>
    <section class="panel" style="margin-top:14px"><h2>Members</h2><div id="members-err"></div><div id="members"><p class="muted">Loading…</p></div></section>`);
  const $ = (id) => main.querySelector(`#${id}`);
  const [raftDone, membersDone, selfDone] = ctx.gate(3);
  let leader = '';

  const section = (name, done, fn) => poll(async () => {
    await fn();
    showError($(`${name}-err`), null);
    done();
  }, { signal, interval: 5000, onError: (err) => { showError($(`${name}-err`), err); done(); } });

  section('raft', raftDone, async () => {
    const [l, p] = await Promise.all([get('/v1/status/leader', { signal }), get('/v1/status/peers', { signal })]);
    leader = l.data || '';
    const peers = p.data || [];
    setHTML($('raft'), html`<dl class="kv"><dt>Leader</dt><dd data-testid="leader">${leader ? html`<span class="mono">${leader}</span>` : html`<span class="badge bad">no leader</span>`}</dd>
      <dt>Peers</dt><dd>${peers.length ? peers.map((x) => html`<div class="mono" data-testid="peer">${x}${x === leader ? html` <span class="badge ok">leader</span>` : ''}</div>`) : '—'}</dd></dl>`);
  });

  section('members', membersDone, async () => {
    const { data } = await get('/v1/agent/members', { signal });
    const members = (data?.Members || []).slice().sort((a, b) => String(a.Name).localeCompare(String(b.Name)));
    setHTML($('members'), members.length ? html`<table><thead><tr><th>Name</th><th>Address</th><th>Status</th><th>Region</th><th>Datacenter</th><th>Build</th></tr></thead><tbody>
      ${members.map((m) => {
        const t = m.Tags || {};
        return html`<tr data-testid="member-row"><td>${m.Name}</td><td class="mono">${m.Addr}:${m.Port}</td><td>${badge(m.Status)}</td>
          <td>${t.region || '—'}</td><td>${t.dc || '—'}</td><td>${t.build || '—'}</td></tr>`;
      })}</tbody></table>` : html`<p class="muted">No members reported.</p>`);
  });

  section('self', selfDone, async () => {
    const { data } = await get('/v1/agent/self', { signal });
    const c = data?.config || {};
    const s = data?.stats || {};
    setHTML($('self'), html`<dl class="kv">
      <dt>Name</dt><dd>${c.Name || '—'}</dd><dt>Region</dt><dd>${c.Region || '—'}</dd><dt>Datacenter</dt><dd>${c.Datacenter || '—'}</dd>
      <dt>Version</dt><dd>${c.Version?.Version || '—'}</dd>
      <dt>Roles</dt><dd>${s.server ? badge('server', 'info') : ''} ${s.client ? badge('client', 'info') : ''} ${s.leader ? badge('leader', 'ok') : ''}</dd>
      ${s.node_id ? html`<dt>Node</dt><dd><a class="mono" href="#/nodes/${encodeURIComponent(s.node_id)}">${s.node_id}</a></dd>` : ''}
      ${c.DevMode ? html`<dt>Mode</dt><dd>${badge('dev', 'warn')}</dd>` : ''}</dl>`);
  });
}
