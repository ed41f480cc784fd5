/** The 30 days of a score's window (V10) as an inline SVG chart and as a table. */
import { DAY_S, type WindowDay } from "../method";
import { formatCount, formatPercent, monthName } from "./format";
import { html, type Html } from "./html";

const COLUMN_W = 26;
const BAR_W = 18;
const GUTTER_W = 96;
const TOP = 40;
const PLOT_H = 120;
const ROW_DAY = TOP + PLOT_H + 16;
const ROW_MONTH = ROW_DAY + 14;
const ROW_CHECKINS = ROW_MONTH + 22;
const ROW_ON_TIME = ROW_CHECKINS + 18;
const HEIGHT = ROW_ON_TIME + 10;

/** Contiguous runs of days before the claim, as [first index, last index]. */
function beforeClaimRuns(days: readonly WindowDay[]): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  days.forEach((d, i) => {
    if (!d.before_claim) return;
    const last = runs[runs.length - 1];
    if (last && last[1] === i - 1) last[1] = i;
    else runs.push([i, i]);
  });
  return runs;
}

function dayTitle(d: WindowDay): string {
  const figures =
    `${d.day}: ${formatCount(d.checkins)} check-ins, ${formatCount(d.on_time)} on time, ` +
    `on-time check-ins covered ${formatCount(d.coverage_s)} s of 86,400 s (${formatPercent(d.coverage_s, DAY_S)})`;
  return d.before_claim ? `${figures}. Before the latest claim: shown, not counted.` : figures;
}

/**
 * V10 chart: per day, a bar for the share of the day's 86,400 s that on-time check-ins covered,
 * and the counts of check-ins and of on-time ones. Days before the latest claim are hatched and labelled.
 */
export function renderWindowChart(days: readonly WindowDay[]): Html {
  const width = GUTTER_W + days.length * COLUMN_W + 8;
  const x = (i: number) => GUTTER_W + i * COLUMN_W;
  const runs = beforeClaimRuns(days);
  const counted = days.length - days.filter((d) => d.before_claim).length;
  const first = days[0]?.day ?? "";
  const last = days[days.length - 1]?.day ?? "";
  const description =
    `${days.length} UTC days from ${first} to ${last}, oldest first. Bar height is the share of the day covered by on-time check-ins; ` +
    `the rows below give the check-ins and the on-time check-ins of each day. ` +
    (runs.length > 0
      ? `${days.length - counted} days before the latest claim are hatched: they are shown and not counted.`
      : `Every day is after the latest claim.`);

  const grid = [1, 0.5, 0].map((share) => {
    const y = TOP + PLOT_H * (1 - share);
    return html`<line class="grid" x1="${GUTTER_W - 4}" x2="${width - 8}" y1="${y}" y2="${y}"/>
<text class="axis" x="${GUTTER_W - 8}" y="${y + 4}" text-anchor="end">${formatPercent(share, 1)}</text>`;
  });

  const marks = runs.map(([from, to]) => {
    const x1 = x(from) + 1;
    const x2 = x(to) + COLUMN_W - 1;
    const label = to - from >= 5 ? "Before the latest claim: shown, not counted" : "Before claim";
    return html`<g class="before-claim-label">
<rect class="hatch" x="${x1}" y="${TOP}" width="${x2 - x1}" height="${ROW_ON_TIME + 6 - TOP}"/>
<path class="bracket" d="M${x1} ${TOP - 6}V${TOP - 12}H${x2}V${TOP - 6}"/>
<text class="mark" x="${(x1 + x2) / 2}" y="${TOP - 17}" text-anchor="middle">${label}</text>
</g>`;
  });

  const columns = days.map((d, i) => {
    const barH = Math.round(((PLOT_H * Math.min(d.coverage_s, DAY_S)) / DAY_S) * 10) / 10;
    const cx = x(i) + COLUMN_W / 2;
    const dayOfMonth = d.day.slice(8, 10);
    const showMonth = i === 0 || dayOfMonth === "01";
    const numberClass = d.before_claim ? "num muted" : "num";
    const month = showMonth ? html`<text class="axis" x="${cx}" y="${ROW_MONTH}" text-anchor="middle">${monthName(d.day)}</text>` : null;
    return html`<g class="day${d.before_claim ? " before-claim" : ""}" data-day="${d.day}" data-before-claim="${String(d.before_claim)}"
data-checkins="${d.checkins}" data-on-time="${d.on_time}" data-coverage-s="${d.coverage_s}"><title>${dayTitle(d)}</title>
<rect class="track" x="${cx - BAR_W / 2}" y="${TOP}" width="${BAR_W}" height="${PLOT_H}"/>
<rect class="bar" x="${cx - BAR_W / 2}" y="${TOP + PLOT_H - barH}" width="${BAR_W}" height="${barH}"/>
<text class="axis" x="${cx}" y="${ROW_DAY}" text-anchor="middle">${Number(dayOfMonth)}</text>${month}
<text class="${numberClass}" x="${cx}" y="${ROW_CHECKINS}" text-anchor="middle">${d.checkins}</text>
<text class="${numberClass}" x="${cx}" y="${ROW_ON_TIME}" text-anchor="middle">${d.on_time}</text>
</g>`;
  });

  return html`<svg class="window-chart" role="img" aria-labelledby="window-chart-title window-chart-desc" viewBox="0 0 ${width} ${HEIGHT}"
width="${width}" height="${HEIGHT}" xmlns="http://www.w3.org/2000/svg">
<title id="window-chart-title">Check-ins over the 30 days of the window</title>
<desc id="window-chart-desc">${description}</desc>
<defs><pattern id="before-claim-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
<rect width="6" height="6" fill="#f1f1f1"/><line x1="0" y1="0" x2="0" y2="6" stroke="#c4c4c4" stroke-width="2"/>
</pattern></defs>
${marks}
${grid}
<text class="axis" x="${GUTTER_W - 8}" y="${TOP - 17}" text-anchor="end">Coverage</text>
<text class="row-label" x="${GUTTER_W - 8}" y="${ROW_CHECKINS}" text-anchor="end">Check-ins</text>
<text class="row-label" x="${GUTTER_W - 8}" y="${ROW_ON_TIME}" text-anchor="end">On time</text>
${columns}
</svg>`;
}

/** The same 30 days as a table, for screen readers and for copying. */
export function renderWindowTable(days: readonly WindowDay[]): Html {
  const rows = days.map((d) => {
    const coverage = `${formatCount(d.coverage_s)} s (${formatPercent(d.coverage_s, DAY_S)})`;
    const counts = d.before_claim ? "Before the latest claim: not counted" : "Counted";
    const cells = [formatCount(d.checkins), formatCount(d.on_time), coverage, counts].map((cell) => html`<td>${cell}</td>`);
    return html`<tr${d.before_claim ? html` class="before-claim"` : null}><th scope="row">${d.day}</th>${cells}</tr>`;
  });
  const columns = ["UTC day", "Check-ins", "On time", "Coverage of the day", "Counts"].map((name) => html`<th scope="col">${name}</th>`);
  return html`<table class="window-table"><caption>The 30 days of the window, oldest first</caption>
<thead><tr>${columns}</tr></thead><tbody>${rows}</tbody></table>`;
}
