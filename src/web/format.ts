/** Formatting for pages: fixed English forms, independent of the server's locale. */
import { html, type Html } from "./html";

/**
 * A whole number with thousands separators.
 * @example formatCount(2592000) // "2,592,000"
 */
export function formatCount(n: number): string {
  const sign = n < 0 ? "-" : "";
  return sign + String(Math.abs(Math.trunc(n))).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/**
 * Seconds as hours, one decimal where it is not whole, as a person says it.
 * @example formatHours(2592000) // "720 hours"; formatHours(5400) // "1.5 hours"; formatHours(3600) // "1 hour"
 */
export function formatHours(seconds: number): string {
  const tenths = Math.round(seconds / 360);
  const hours = tenths % 10 === 0 ? formatCount(tenths / 10) : `${formatCount(Math.trunc(tenths / 10))}.${tenths % 10}`;
  return `${hours} hour${tenths === 10 ? "" : "s"}`;
}

/**
 * A wait in whole minutes, as hours and minutes.
 * @example formatDuration(50_400) // "14 h 0 min"; formatDuration(90) // "2 min"
 */
export function formatDuration(seconds: number): string {
  const minutes = Math.max(1, Math.ceil(seconds / 60));
  return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/**
 * A share as a percentage with at most one decimal.
 * @example formatPercent(43200, 86400) // "50%"
 */
export function formatPercent(part: number, whole: number): string {
  const tenths = whole === 0 ? 0 : Math.round((part / whole) * 1000);
  return `${tenths % 10 === 0 ? tenths / 10 : (tenths / 10).toFixed(1)}%`;
}

/**
 * V8 band name for people: its range with an en dash.
 * @example formatBand("200-399") // "200–399"
 */
export function formatBand(band: string): string {
  return band.replace("-", "\u2013");
}

/** An RFC 3339 UTC time (V1) as a `<time>` element reading `2026-11-05 10:00:00 UTC`. */
export function formatTime(rfc3339: string): Html {
  return html`<time datetime="${rfc3339}">${rfc3339.replace("T", " ").replace(/Z$/, " UTC")}</time>`;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"] as const;

/**
 * Short month name of a `YYYY-MM-DD` day.
 * @example monthName("2026-11-05") // "Nov"
 */
export function monthName(day: string): string {
  return MONTHS[Number(day.slice(5, 7)) - 1] ?? "";
}
