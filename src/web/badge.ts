/**
 * The SVG badge of an agent's latest Vrai score (`vrai | 230 · established`), made with
 * badge-maker, the shields.io library. A badge names the total and the state; the band is a range
 * the total already tells, so the badge does not repeat it.
 */
import { makeBadge } from "badge-maker";

/** What a badge shows: the latest score's total and state, `no-score` before the first score, `unknown` for no such agent. */
export type BadgeView = { type: "score"; total: number; state: "provisional" | "established" } | { type: "no-score" } | { type: "unknown" };

/**
 * The response headers of a badge. An SVG can carry script, so the policy allows none and loads
 * nothing; a short max-age lets a README show a new score within minutes.
 */
export const BADGE_HEADERS: Readonly<Record<string, string>> = {
  "Content-Type": "image/svg+xml; charset=utf-8",
  "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Cache-Control": "public, max-age=300",
};

/** The badge's message, in the neutral words of the agent page. */
export function badgeMessage(view: BadgeView): string {
  if (view.type === "unknown") return "unknown";
  if (view.type === "no-score") return "no score yet";
  return `${view.total} · ${view.state}`;
}

// One neutral colour for every score: a badge states a figure, it does not grade it.
const COLOR = "#1f5fa8";
const NEUTRAL = "#555d66";

// Messages come from a small set (0–1000 and two states), so their SVGs are kept once made.
const CACHE_MAX = 4096;
const made = new Map<string, string>();

/**
 * The badge as SVG text.
 * @example renderBadge({ type: "score", total: 230, state: "established" }) // an SVG reading "vrai | 230 · established"
 */
export function renderBadge(view: BadgeView): string {
  const message = badgeMessage(view);
  const cached = made.get(message);
  if (cached !== undefined) return cached;
  const svg = makeBadge({ label: "vrai", message, color: view.type === "score" ? COLOR : NEUTRAL, labelColor: "#1b1f24", style: "flat" });
  if (made.size >= CACHE_MAX) made.clear();
  made.set(message, svg);
  return svg;
}
