// Virtualised, sortable table: only the rows in view are in the DOM, so
// 5,000 nodes or 50,000 allocations scroll without lag. Lists up to
// `threshold` rows are rendered whole.
import { html, sortBy } from './format.js';

export class VTable {
  /**
   * columns: [{title, sort?: item => value, cls?}]; row(item) returns the
   * <tr> markup; testid names the <table>; empty is shown with no rows.
   */
  constructor(el, { columns, row, testid = '', empty = 'Nothing here.', threshold = 300, sort = null, desc = false, signal }) {
    this.columns = columns;
    this.row = row;
    this.empty = empty;
    this.threshold = threshold;
    this.items = [];
    this.sorted = [];
    this.sortCol = sort;
    this.desc = desc;
    this.rowHeight = 31;
    this.measured = false;
    this.frame = 0;
    const heads = columns.map((c, i) =>
      html`<th class="${c.cls || ''} ${c.sort ? 'sortable' : ''}" data-col="${i}">${c.title}</th>`);
    el.innerHTML = String(html`<div class="vscroll"><table data-testid="${testid}"><thead><tr>${heads}</tr></thead><tbody></tbody></table></div>`);
    this.scroller = el.firstElementChild;
    this.table = this.scroller.firstElementChild;
    this.tbody = this.table.tBodies[0];
    this.scroller.addEventListener('scroll', () => this.schedule(), { passive: true, signal });
    window.addEventListener('resize', () => this.schedule(), { passive: true, signal });
    this.table.tHead.addEventListener('click', (ev) => {
      const th = ev.target.closest('th[data-col]');
      if (!th) return;
      const i = Number(th.dataset.col);
      if (!this.columns[i].sort) return;
      this.desc = this.sortCol === i ? !this.desc : false;
      this.sortCol = i;
      this.setItems(this.items);
    }, { signal });
  }

  setItems(items) {
    this.items = items;
    const col = this.columns[this.sortCol];
    this.sorted = col?.sort ? sortBy(items, col.sort, this.desc) : items;
    this.table.dataset.total = String(items.length);
    for (const th of this.table.tHead.rows[0].cells) {
      const i = Number(th.dataset.col);
      const c = this.columns[i];
      th.textContent = c.title + (i === this.sortCol && c.sort ? (this.desc ? ' ▾' : ' ▴') : '');
    }
    this.draw();
  }

  schedule() {
    if (this.frame || this.sorted.length <= this.threshold) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  draw() {
    const n = this.sorted.length;
    const cols = this.columns.length;
    if (!n) {
      this.setBody(String(html`<tr><td colspan="${cols}" class="muted">${this.empty}</td></tr>`));
      return;
    }
    if (n <= this.threshold) {
      this.setBody(this.sorted.map((it) => String(this.row(it))).join(''));
      return;
    }
    const rh = this.rowHeight;
    const head = this.table.tHead.offsetHeight;
    const view = this.scroller.clientHeight || 600;
    const overscan = 10;
    const first = Math.max(0, Math.floor((this.scroller.scrollTop - head) / rh) - overscan);
    const last = Math.min(n, first + Math.ceil(view / rh) + 2 * overscan);
    const spacer = (h) => (h > 0 ? `<tr class="spacer"><td colspan="${cols}" style="height:${h}px"></td></tr>` : '');
    let s = spacer(first * rh);
    for (let i = first; i < last; i++) s += String(this.row(this.sorted[i]));
    s += spacer((n - last) * rh);
    this.setBody(s);
    if (!this.measured) {
      // Learn the real row height once, then redraw with it.
      const tr = this.tbody.rows[first ? 1 : 0];
      const h = tr?.getBoundingClientRect().height;
      this.measured = true;
      if (h && Math.abs(h - rh) > 0.5) {
        this.rowHeight = h;
        this.draw();
      }
    }
  }

  setBody(s) {
    if (this.body !== s) {
      this.body = s;
      this.tbody.innerHTML = s;
    }
  }
}
