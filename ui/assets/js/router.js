// Hash router: #/path?query. Each navigation aborts the previous page's
// requests (quietly) and renders the matching page into <main>.
import { errorHTML } from './dom.js';
import { isAbort } from './api.js';

const routes = [];
let current = null;
let mainEl = null;
let onNavigate = null;

/** route registers page(ctx) for paths matching pattern; capture groups become ctx.params. */
export function route(pattern, page, name) {
  routes.push({ pattern, page, name });
}

/** href builds a hash link from path parts, encoding each. */
export function href(...parts) {
  return '#/' + parts.map((p) => encodeURIComponent(p)).join('/');
}

export function navigate(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

/** start renders the current hash and follows changes. */
export function start(main, navigated) {
  mainEl = main;
  onNavigate = navigated;
  window.addEventListener('hashchange', render);
  // The Navigation API tells of a hash change synchronously, before the
  // hashchange event: drop the ready mark at once so that nobody waiting
  // for the next page mistakes the old page for it.
  window.navigation?.addEventListener('navigate', (ev) => {
    if (ev.hashChange) unready(main);
  });
  render();
}

function unready(main) {
  delete main.dataset.ready;
  main.removeAttribute('data-testid');
}

function parse(hash) {
  const h = hash.replace(/^#/, '') || '/';
  const [path, qs] = h.split('?', 2);
  return { path: path || '/', query: new URLSearchParams(qs || '') };
}

function render() {
  current?.abort();
  const ctl = new AbortController();
  current = ctl;
  const { path, query } = parse(location.hash);
  const main = mainEl;
  main.innerHTML = '';
  unready(main);

  let match = null;
  let r = null;
  for (r of routes) {
    match = path.match(r.pattern);
    if (match) break;
  }
  const ctx = {
    main,
    signal: ctl.signal,
    query,
    params: match ? match.slice(1).map(decodeURIComponent) : [],
    ready() {
      if (ctl.signal.aborted) return;
      main.dataset.ready = '1';
      main.setAttribute('data-testid', 'page-ready');
    },
    /** gate returns n callbacks; the page is ready once all have been called. */
    gate(n) {
      let left = n;
      return Array.from({ length: n }, () => {
        let called = false;
        return () => {
          if (called) return;
          called = true;
          if (--left === 0) ctx.ready();
        };
      });
    },
    fail(err) {
      if (ctl.signal.aborted || isAbort(err)) return;
      main.insertAdjacentHTML('afterbegin', String(errorHTML(err)));
      ctx.ready();
    },
  };
  onNavigate?.(match ? r.name : '');
  document.title = 'Drover';
  window.scrollTo(0, 0);
  if (!match) {
    ctx.fail(new Error(`No page at #${path}. Try the overview.`));
    return;
  }
  try {
    const p = r.page(ctx);
    if (p && typeof p.catch === 'function') p.catch((err) => ctx.fail(err));
  } catch (err) {
    ctx.fail(err);
  }
}
