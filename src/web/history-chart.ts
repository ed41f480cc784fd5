/**
 * The score history of the agent page: the totals of the daily scores of the last 90 days as an
 * inline SVG line (no script), with the days before the agent's latest claim shaded, and the same
 * days as a table for whoever does not read the chart.
 */
import { dayStart } from "../method";
import { formatCount, monthName } from "./format";
import { html, type Html } from "./html";

/** Days the agent page's history covers. */
export const HISTORY_DAYS = 90;

/** One day of the chart: the total of its daily score (null when none was stored) and whether it ended before the latest claim. */
export type HistoryDay = { day: string; total: number | null; beforeClaim: boolean };

/**
 * The chart's days from the stored daily totals: a day is before the claim when it ended at or
 * before the latest claim (V10's rule for the window's days), so its score belongs to an earlier claim or none.
 */
export function historyDays(totals: ReadonlyArray<{ day: string; total: number | null }>, claimedAt: number): HistoryDay[] {
  return totals.map((t) => ({ day: t.day, total: t.total, beforeClaim: dayStart(t.day) + 86400 <= claimedAt }));
}

// The drawing's size and its margins (axis labels on the left and below), in SVG units.
const [WIDTH, HEIGHT] = [720, 220];
const [LEFT, RIGHT, TOP, BOTTOM] = [40, 8, 10, 28];

/**
 * The chart as inline SVG. The vertical scale runs from 0 to the larger of 500 (the reachable
 * maximum under method 0.2) and the highest total shown, so a flat history reads as flat.
 */
export function renderHistoryChart(days: readonly HistoryDay[]): Html {
  const max = Math.max(500, ...days.map((d) => d.total ?? 0));
  const step = (WIDTH - LEFT - RIGHT) / Math.max(1, days.length);
  const x = (i: number) => LEFT + step * i + step / 2;
  const y = (total: number) => TOP + (HEIGHT - TOP - BOTTOM) * (1 - total / max);
  const shaded = days.map((d, i) =>
    d.beforeClaim
      ? html`<rect class="before-claim" shape-rendering="crispEdges" x="${(LEFT + step * i).toFixed(1)}" y="${TOP}"
width="${step.toFixed(1)}" height="${HEIGHT - TOP - BOTTOM}"/>`
      : null,
  );
  // One line per run of days with a score; a day without one breaks the line.
  const runs: string[][] = [[]];
  days.forEach((d, i) => {
    if (d.total === null) runs.push([]);
    else runs[runs.length - 1].push(`${x(i).toFixed(1)},${y(d.total).toFixed(1)}`);
  });
  const lines = runs.filter((r) => r.length > 1).map((r) => html`<polyline class="line" points="${r.join(" ")}"/>`);
  const points = days.map((d, i) => {
    if (d.total === null) return null;
    const title = `${d.day}: ${d.total}${d.beforeClaim ? " (before the latest claim)" : ""}`;
    return html`<circle class="point" cx="${x(i).toFixed(1)}" cy="${y(d.total).toFixed(1)}" r="2"><title>${title}</title></circle>`;
  });
  const gridValues = [0, max / 2, max];
  const grid = gridValues.map(
    (v) =>
      html`<line class="grid" x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"/>
<text class="axis" x="${LEFT - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${formatCount(v)}</text>`,
  );
  const months = days.map((d, i) =>
    d.day.endsWith("-01") || i === 0
      ? html`<text class="axis" x="${x(i).toFixed(1)}" y="${HEIGHT - 8}"
text-anchor="${i === 0 ? "start" : "middle"}">${monthName(d.day)} ${Number(d.day.slice(8))}</text>`
      : null,
  );
  const first = days[0]?.day ?? "";
  const last = days[days.length - 1]?.day ?? "";
  return html`<svg class="history-chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="history-title" data-days="${days.length}">
<title id="history-title">Daily totals from ${first} to ${last}; shaded days are before the agent's latest claim</title>
${shaded}${grid}${lines}${points}${months}
</svg>`;
}

/** The chart's days as a table, newest first. */
export function renderHistoryTable(days: readonly HistoryDay[]): Html {
  const rows = [...days].reverse().map((d) => {
    const day = `${d.day}${d.beforeClaim ? " (before the latest claim)" : ""}`;
    const total = d.total === null ? "no daily score" : d.total;
    return html`<tr${d.beforeClaim ? html` class="before-claim"` : null}><td>${day}</td><td>${total}</td></tr>`;
  });
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Score history, table"><table class="history">
<thead><tr><th scope="col">Day</th><th scope="col">Total</th></tr></thead>
<tbody>${rows}</tbody></table></div>`;
}
