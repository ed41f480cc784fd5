/**
 * The shape of src/ (DEVELOPERS.md "Layers"): folders import one way, method <- chain <- store <-
 * service <- (indexer, web, api) <- app <- cli, with sdk/ on method and chain only. Read from the
 * code's own imports, so the picture cannot drift from the code.
 */
import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import ts from "typescript";

const SRC = __dirname;

/** What each part of src/ may import besides itself and the shared root modules (errors, retry, project-root, build-output). */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  method: [],
  chain: ["method"],
  store: ["method", "chain"],
  service: ["method", "chain", "store"],
  indexer: ["method", "chain", "store", "service"],
  web: ["method", "chain", "store", "service"],
  api: ["method", "chain", "store", "service"],
  app: ["method", "chain", "store", "service", "indexer", "web", "api"],
  cli: ["method", "chain", "store", "service", "indexer", "web", "api", "app", "sdk"],
  sdk: ["method", "chain"],
  // The package's entry (`require("vrai")`): the SDK and the method engine.
  "index.ts": ["sdk", "method"],
};
/** Modules every part may use; they import nothing of ours but errors. */
const SHARED = ["errors.ts", "retry.ts", "project-root.ts", "build-output.ts"];
/** Adapters may `import type` the ports they implement: the store implements the service's. */
const TYPE_ONLY_PORTS: Readonly<Record<string, readonly string[]>> = { store: ["service"] };

type Edge = { from: string; to: string; file: string; line: number; typeOnly: boolean };

/** The top-level part of src/ a path belongs to: its folder, or the root file itself. */
const partOf = (file: string) => path.relative(SRC, file).split(path.sep)[0];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "test-helpers" ? [] : sourceFiles(full);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [full] : [];
  });
}

/** Every import of `file` that names a module of ours: static imports and re-exports, `require` and `import()`. */
function importsOf(file: string): Edge[] {
  const text = fs.readFileSync(file, "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const edges: Edge[] = [];
  const add = (specifier: string, node: ts.Node, typeOnly: boolean) => {
    if (!specifier.startsWith(".")) return;
    const target = path.resolve(path.dirname(file), specifier);
    // Outside src/ (scripts/deploy.ts for `vrai dev`'s chain) is not a layer of it.
    if (path.relative(SRC, target).startsWith("..")) return;
    const to = partOf(fs.existsSync(`${target}.ts`) ? `${target}.ts` : target);
    edges.push({
      from: partOf(file),
      to,
      file: path.relative(SRC, file),
      line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1,
      typeOnly,
    });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      add(node.moduleSpecifier.text, node, typeOnly);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, node, node.isTypeOnly);
    } else if (
      ts.isCallExpression(node) &&
      node.arguments.length === 1 &&
      ts.isStringLiteral(node.arguments[0]) &&
      ((ts.isIdentifier(node.expression) && node.expression.text === "require") || node.expression.kind === ts.SyntaxKind.ImportKeyword)
    ) {
      add(node.arguments[0].text, node, false);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edges;
}

const edges = sourceFiles(SRC)
  .flatMap(importsOf)
  .filter((e) => e.from !== e.to);
const where = (e: Edge) => `${e.file}:${e.line} imports ${e.to}${e.typeOnly ? " (types only)" : ""}`;

describe("the layers of src/", () => {
  it("knows every part it finds", () => {
    const parts = new Set(sourceFiles(SRC).map(partOf));
    for (const part of parts) expect([...Object.keys(MAY_IMPORT), ...SHARED], `src/${part}`).to.include(part);
  });

  it("imports one way: each part only from the parts below it", () => {
    const against = edges.filter((e) => {
      if (SHARED.includes(e.to)) return false;
      if (SHARED.includes(e.from)) return e.to !== "errors.ts";
      if (e.typeOnly && (TYPE_ONLY_PORTS[e.from] ?? []).includes(e.to)) return false;
      return !(MAY_IMPORT[e.from] ?? []).includes(e.to);
    });
    expect(against.map(where)).to.deep.equal([]);
  });

  it("has no cycle between folders, types aside", () => {
    const graph = new Map<string, Set<string>>();
    for (const e of edges) if (!e.typeOnly) graph.set(e.from, (graph.get(e.from) ?? new Set()).add(e.to));
    const cycles: string[] = [];
    const visit = (part: string, trail: string[]) => {
      if (trail.includes(part)) return void cycles.push([...trail.slice(trail.indexOf(part)), part].join(" -> "));
      for (const next of graph.get(part) ?? []) visit(next, [...trail, part]);
    };
    for (const part of graph.keys()) visit(part, []);
    expect(cycles).to.deep.equal([]);
  });

  it("builds @vrai/sdk (packages/sdk) from src/sdk only, so the package holds to the sdk rule above", () => {
    const config = fs.readFileSync(path.join(SRC, "..", "packages", "sdk", "tsup.config.ts"), "utf8");
    const entries = [...config.matchAll(/entry:\s*\{([^}]*)\}/g)].flatMap((m) => [...m[1].matchAll(/"([^"]+)"/g)].map((e) => e[1]));
    expect(entries.length).to.be.greaterThan(0);
    for (const entry of entries) expect(partOf(path.resolve(SRC, "..", "packages", "sdk", entry)), entry).to.equal("sdk");
  });

  it("gives route handlers their types from the declarations: no `as` cast in src/api", () => {
    const casts = sourceFiles(path.join(SRC, "api")).flatMap((file) => {
      const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
      const found: string[] = [];
      const visit = (node: ts.Node) => {
        if (ts.isAsExpression(node) || ts.isTypeAssertionExpression(node) || ts.isNonNullExpression(node)) {
          found.push(`${path.relative(SRC, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${node.getText()}`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
      return found;
    });
    expect(casts).to.deep.equal([]);
  });
});
