// Entry point: routes, navigation highlight, region switcher, and a last
// line of defence that turns stray errors into a banner (never a blank page).
import { route, start } from './router.js';
import { get, setRegion, isAbort, setToken } from './api.js';
import { errorHTML } from './dom.js';
import { html } from './format.js';
import overview from './pages/overview.js';
import jobs from './pages/jobs.js';
import jobNew from './pages/jobnew.js';
import job from './pages/job.js';
import alloc from './pages/alloc.js';
import nodes from './pages/nodes.js';
import node from './pages/node.js';
import evals from './pages/evals.js';
import servers from './pages/servers.js';

route(/^\/$/, overview, 'overview');
route(/^\/jobs$/, jobs, 'jobs');
route(/^\/jobs\/new$/, jobNew, 'jobs');
route(/^\/jobs\/([^/]+)$/, job, 'jobs');
route(/^\/allocations\/([^/]+)$/, alloc, 'jobs');
route(/^\/nodes$/, nodes, 'nodes');
route(/^\/nodes\/([^/]+)$/, node, 'nodes');
route(/^\/evaluations$/, evals, 'evaluations');
route(/^\/servers$/, servers, 'servers');

const main = document.getElementById('main');

function banner(err) {
  if (isAbort(err)) return;
  main.insertAdjacentHTML('afterbegin', String(errorHTML(err)));
  main.dataset.ready = '1';
  main.setAttribute('data-testid', 'page-ready');
}

// A token entered in a "Permission denied" banner's form is kept for the
// tab, and the page reloads with it.
document.addEventListener('submit', (ev) => {
  const form = ev.target.closest?.('form.token-form');
  if (!form) return;
  ev.preventDefault();
  setToken(form.elements.token.value.trim());
  location.reload();
});

window.addEventListener('error', (ev) => {
  banner(ev.error || new Error(ev.message));
  ev.preventDefault();
});
window.addEventListener('unhandledrejection', (ev) => {
  banner(ev.reason);
  ev.preventDefault();
});

start(main, (name) => {
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.nav === name);
});

// The region switcher appears only when the cluster federates several
// regions; switching sets ?region= on every request.
async function regions() {
  try {
    const { data } = await get('/v1/regions');
    if (!Array.isArray(data) || data.length < 2) return;
    const slot = document.getElementById('region');
    slot.innerHTML = String(html`<select title="Region" data-testid="region-select"><option value="">this agent's region</option>${data.map((r) => html`<option>${r}</option>`)}</select>`);
    slot.firstElementChild.addEventListener('change', (ev) => {
      setRegion(ev.target.value);
      window.dispatchEvent(new HashChangeEvent('hashchange'));
    });
  } catch {
    // A placeholder only: no switcher when the agent cannot say.
  }
}
regions();
