/**
 * Stack traces that name the TypeScript sources of the `vrai` bundle (dist/vrai.cjs, built with its map beside it).
 * Frames in the bundle are mapped through its map, read and parsed once, at the first stack trace formatted or when
 * `parseStackTraceMapNow` is called (a server, before it reports ready); every other frame is as V8 writes it.
 *
 * Node's own support (`process.setSourceMapsEnabled(true)`) would map the dependencies' frames too, and for that reads
 * and parses, at every start, the map of each module loaded that names one: `vrai --help` loads 1,101 modules, 524 of
 * them with a map, 5 MB of maps with the bundle's. Without them, `vrai --help` takes 1.09 CPU-s instead of 1.24 (20 runs
 * of each, 2026-12-07, nothing else running) (issue #30).
 */
import fs from "node:fs";
import { SourceMap } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The bundle whose frames are mapped, its map's file, and the map once read (null: it could not be read or parsed). */
let mapped: { bundle: string; mapFile: string; map?: SourceMap | null } | undefined;

/** The bundle's map, read and parsed at the first call; null when it cannot be (the frames stay the bundle's). */
function bundleMap(): SourceMap | null {
  if (!mapped) return null;
  if (mapped.map === undefined) {
    try {
      mapped.map = new SourceMap(JSON.parse(fs.readFileSync(mapped.mapFile, "utf8")));
    } catch {
      mapped.map = null;
    }
  }
  return mapped.map;
}

/** A source of the map as a path: relative ones against the map's directory, `file:` URLs as their path. */
function sourcePath(source: string, mapFile: string): string {
  return source.startsWith("file://") ? fileURLToPath(source) : path.resolve(path.dirname(mapFile), source);
}

/** One frame as V8 writes it, its position in the bundle replaced by the source's when the map has one. */
function frameText(site: NodeJS.CallSite): string {
  const text = site.toString();
  const line = site.getLineNumber();
  const column = site.getColumnNumber();
  if (!mapped || site.getFileName() !== mapped.bundle || line === null || column === null) return text;
  const map = bundleMap();
  const entry = map?.findEntry(line - 1, column - 1);
  if (!entry || !("originalSource" in entry) || typeof entry.originalSource !== "string") return text;
  const at = `${mapped.bundle}:${line}:${column}`;
  const index = text.lastIndexOf(at);
  if (index < 0) return text;
  const original = `${sourcePath(entry.originalSource, mapped.mapFile)}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  return text.slice(0, index) + original + text.slice(index + at.length);
}

/** The first line of a stack trace as V8 writes it: the error's `name: message`. */
function headerOf(error: Error): string {
  try {
    return Error.prototype.toString.call(error);
  } catch {
    return "Error";
  }
}

/**
 * From now on, stack traces name the TypeScript sources of `bundle`'s frames, through the map `bundle`.map beside it
 * (bin/vrai.js calls it once the bundle is loaded). The map is read at the first stack trace formatted.
 * @example mapStackTracesOf("/app/dist/vrai.cjs") // then new Error().stack names /app/src/... for the bundle's frames
 */
export function mapStackTracesOf(bundle: string): void {
  mapped = { bundle, mapFile: `${bundle}.map` };
  Error.prepareStackTrace = (error, sites) => headerOf(error) + sites.map((site) => `\n    at ${frameText(site)}`).join("");
}

/**
 * Parses the bundle's map now, and says whether stack traces are mapped through one. Read at the first stack trace
 * instead, under load that is an error of the database as it goes away: 50 ms of the event loop then, and 12 MiB of
 * heap kept for good (an array per mapping), measured; that was the soak's one step of RSS, after its first termination
 * of the service's connections (issue #30). False where nothing is mapped: the TypeScript sources run by tsx (tests,
 * `VRAI_BUNDLE=0`), or a bundle whose map is missing.
 * @example parseStackTraceMapNow() // true in dist/vrai.cjs run by bin/vrai.js
 */
export function parseStackTraceMapNow(): boolean {
  return bundleMap() !== null;
}
