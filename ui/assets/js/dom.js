// DOM helpers shared by the pages.
import { html } from './format.js';

/** message is an error's readable text. */
export function message(err) {
  if (!err) return '';
  return err.message || String(err);
}

/** errorHTML renders an error banner (the tests look for data-testid="error"). */
export function errorHTML(err) {
  const banner = html`<div class="error" data-testid="error" role="alert">${message(err)}</div>`;
  if (err?.status !== 403) return banner;
  // Denied: ACLs are on and the tab has no token, or one that may not
  // do this. The form's submit is handled in app.js.
  return html`${banner}<form class="token-form" data-testid="token-form">
    <label>ACL token <input type="password" name="token" autocomplete="off" data-testid="token-input"></label>
    <button type="submit">Use token</button></form>`;
}

/** showError puts err's banner in slot, or clears it when err is null. */
export function showError(slot, err) {
  if (!slot) return;
  const s = err ? String(errorHTML(err)) : '';
  if (slot.innerHTML !== s) slot.innerHTML = s;
}

/** setHTML replaces el's content with an html`` value, skipping identical content. */
export function setHTML(el, h) {
  const s = String(h);
  if (el && el._html !== s) {
    el._html = s;
    el.innerHTML = s;
  }
}

/** on delegates an event on root to descendants matching selector. */
export function on(root, type, selector, fn, signal) {
  root.addEventListener(type, (ev) => {
    const t = ev.target.closest?.(selector);
    if (t && root.contains(t)) fn(ev, t);
  }, { signal });
}

/** debounce delays fn until ms after the last call. */
export function debounce(fn, ms) {
  let t;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

/**
 * watched wires an api.watch to a page section: data renders and clears
 * the section's error slot, errors show in it; both count as the section's
 * first result for page readiness.
 */
export function sectionHandlers(errSlot, render, done) {
  return {
    onData(data, index) {
      try {
        render(data, index);
        showError(errSlot, null);
      } catch (err) {
        showError(errSlot, err);
      }
      done?.();
    },
    onError(err) {
      showError(errSlot, err);
      done?.();
    },
  };
}
