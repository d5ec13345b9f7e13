// The dashboard's small DOM helpers: an element by id, a node, a table, a source badge, an error
// shown at its panel, and a progress bar a stream reports to.
import { ApiError, int, type Progress, type Source } from "./api";
import { band, sourceLabel } from "./format";

export function $<T extends HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (!e) throw new Error(`#${id} missing from index.html`);
  return e as T;
}

export type Cell = string | Node;

export function node(tag: string, text?: string, className?: string): HTMLElement {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (className) e.className = className;
  return e;
}

export function setTable(table: HTMLTableElement, headers: string[], rows: Cell[][], rowClass?: (i: number) => string) {
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  for (const h of headers) head.appendChild(node("th", h));
  const body = table.createTBody();
  rows.forEach((row, i) => {
    const tr = body.insertRow();
    if (rowClass) tr.className = rowClass(i);
    for (const c of row) {
      const td = tr.insertCell();
      if (typeof c === "string") td.textContent = c;
      else td.appendChild(c);
    }
  });
}

export function badge(source: Source | undefined, p10?: number, p90?: number): HTMLElement {
  const label = sourceLabel(source);
  const span = node("span", label, `badge ${label.toLowerCase()}`);
  const b = label === "PREDICTED" ? band(p10, p90) : "";
  if (b) span.title = `prediction; error band p10/p90 of measured/predicted − 1: ${b}`;
  const wrap = node("span");
  wrap.appendChild(span);
  if (b) wrap.appendChild(node("span", ` ${b}`, "band"));
  return wrap;
}

export function showError(target: HTMLElement, err: unknown) {
  target.hidden = false;
  target.replaceChildren();
  if (err instanceof ApiError) {
    target.appendChild(node("strong", `${err.code}: `));
    target.appendChild(document.createTextNode(err.message));
    if (err.fieldViolations.length > 0) {
      const ul = node("ul");
      for (const v of err.fieldViolations) ul.appendChild(node("li", `${v.field}: ${v.description}`));
      target.appendChild(ul);
    }
    if (err.retryAfterS !== undefined) target.appendChild(node("p", `retry after ${err.retryAfterS} s`));
  } else {
    target.textContent = err instanceof Error ? err.message : String(err);
  }
}

export function progressReporter(bar: HTMLProgressElement, status: HTMLElement) {
  return (p: Progress) => {
    const total = int(p.total);
    bar.max = Math.max(1, total);
    bar.value = Math.min(int(p.done), bar.max);
    status.textContent = `${p.message ?? ""}${total > 0 ? ` (${int(p.done)}/${total})` : ""}`;
  };
}

/** A row's source badge, and how much of its step was measured when the budget reached part of
 * it ("PREDICTED 40% measured"), as the CLI prints it. */
export function sourceCell(source: Source | undefined, measuredShare?: number): HTMLElement {
  const cell = badge(source);
  const share = measuredShare ?? 0;
  if (sourceLabel(source) === "PREDICTED" && share > 0) {
    cell.appendChild(node("span", ` ${Math.round(100 * share)}% measured`, "measured-share"));
  }
  return cell;
}
