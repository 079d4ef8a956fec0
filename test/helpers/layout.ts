/**
 * Layout checks of the ops page from element boxes (a real browser's): nothing wider than the
 * window, no element sticking out of the group or chart that holds it, and no figure broken
 * over lines (the old status view wrapped a long number one digit per line).
 */
import type { Page } from 'playwright-core';

/** The parts of a DOM element the checks read (this file is type-checked without the DOM library). */
interface Box {
  readonly tagName: string;
  readonly id: string;
  readonly className: unknown;
  readonly textContent: string | null;
  readonly parentElement: Box | null;
  readonly scrollWidth: number;
  getBoundingClientRect(): { left: number; right: number; width: number; height: number };
  closest(selector: string): Box | null;
  querySelectorAll(selector: string): Iterable<Box>;
}

/**
 * What overflows under `root` at the page's current size, in words (empty when nothing does).
 * @param boxes selectors of the containers an element must stay inside (its nearest one).
 * @param single selectors of elements that must stay on one line.
 */
export function layoutProblems(page: Page, root: string, boxes: readonly string[], single: readonly string[]): Promise<string[]> {
  return page.$eval(
    root,
    (root, { boxes, single }) => {
      const el = root as unknown as Box;
      const window = globalThis as unknown as { innerWidth: number; document: { documentElement: Box }; getComputedStyle(e: Box): { lineHeight: string; fontSize: string } };
      const getComputedStyle = (e: Box) => window.getComputedStyle(e);
      const out: string[] = [];
      const name = (e: Box) =>
        `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}${e.className && typeof e.className === 'string' ? `.${e.className.trim().split(/\s+/).join('.')}` : ''} "${(e.textContent ?? '').trim().slice(0, 40)}"`;
      const doc = window.document.documentElement;
      if (doc.scrollWidth > window.innerWidth) out.push(`the page is ${doc.scrollWidth} px wide in a ${window.innerWidth} px window`);
      const boxSelector = boxes.join(', ');
      for (const e of el.querySelectorAll('*')) {
        const r = e.getBoundingClientRect();
        if (r.width === 0 && r.height === 0) continue;
        if (r.right > window.innerWidth + 0.5) out.push(`${name(e)} ends at ${Math.round(r.right)} px, past the window (${window.innerWidth} px)`);
        const box = e.parentElement?.closest(boxSelector);
        if (box) {
          const b = box.getBoundingClientRect();
          if (r.right > b.right + 0.5 || r.left < b.left - 0.5)
            out.push(`${name(e)} (${Math.round(r.left)}–${Math.round(r.right)} px) sticks out of ${name(box)} (${Math.round(b.left)}–${Math.round(b.right)} px)`);
        }
      }
      for (const e of el.querySelectorAll(single.join(', '))) {
        const lineHeight = parseFloat(getComputedStyle(e).lineHeight) || parseFloat(getComputedStyle(e).fontSize) * 1.5;
        const h = e.getBoundingClientRect().height;
        if (h > lineHeight * 1.5) out.push(`${name(e)} is broken over lines (${Math.round(h)} px high, lines of ${Math.round(lineHeight)} px)`);
      }
      return out;
    },
    { boxes: [...boxes], single: [...single] },
  );
}
