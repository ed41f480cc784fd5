import fs from "node:fs";
import path from "node:path";

/** A file a build made (esbuild's `outputFiles` with `write: false` have this shape). */
export type BuiltFile = { path: string; contents: Uint8Array };

/**
 * Writes a build's files, each only when its bytes changed and then atomically (a temporary file beside it, renamed over
 * it): `npm start` builds before it starts, and a `vrai` started earlier from the same checkout may load the files
 * meanwhile; none may read a file half written.
 */
export function writeBuiltFiles(files: readonly BuiltFile[]): void {
  for (const file of files) {
    let current: Buffer | null = null;
    try {
      current = fs.readFileSync(file.path);
    } catch {
      // not built yet
    }
    if (current?.equals(file.contents)) continue;
    fs.mkdirSync(path.dirname(file.path), { recursive: true });
    const temporary = `${file.path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    fs.writeFileSync(temporary, file.contents);
    fs.renameSync(temporary, file.path);
  }
}
